//! A server-sent-events decoder: bytes in, events out. Chunks may split anywhere (inside a line,
//! between CR and LF, inside a UTF-8 character); lines end with LF, CRLF or CR; comments and
//! unknown fields are skipped; several `data:` lines join with newlines.

/// The longest line accepted, in bytes (a whole tool call's arguments can come in one).
pub(crate) const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;
/// The most data one event may gather, in bytes.
pub(crate) const MAX_EVENT_BYTES: usize = 32 * 1024 * 1024;

/// A stream that breaks the decoder's bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a server-sent event or line is over {} MiB", MAX_EVENT_BYTES >> 20)]
pub(crate) struct TooLarge;

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or `message` when none was given.
    pub(crate) event: String,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
}

/// Incremental decoder state.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    line: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    after_cr: bool,
    started: bool,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Decodes `chunk`, appending every event it completes to `out`. A line or an event over
    /// its bound is an error; the decoder should not be fed again after one.
    pub(crate) fn feed(
        &mut self,
        mut chunk: &[u8],
        out: &mut Vec<SseEvent>,
    ) -> Result<(), TooLarge> {
        while let Some((&first, rest)) = chunk.split_first() {
            // The LF of a CRLF split across chunks.
            if self.after_cr {
                self.after_cr = false;
                if first == b'\n' {
                    chunk = rest;
                    continue;
                }
            }
            let end = chunk.iter().position(|&b| b == b'\n' || b == b'\r');
            let piece = chunk.get(..end.unwrap_or(chunk.len())).unwrap_or_default();
            if self.line.len() + piece.len() > MAX_LINE_BYTES {
                return Err(TooLarge);
            }
            self.line.extend_from_slice(piece);
            let Some(end) = end else { break };
            self.after_cr = chunk.get(end) == Some(&b'\r');
            self.end_line(out);
            if self.data.len() > MAX_EVENT_BYTES {
                return Err(TooLarge);
            }
            chunk = chunk.get(end + 1..).unwrap_or_default();
        }
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        if !self.started {
            // A byte order mark may open the stream.
            self.started = true;
            if let Some(rest) = self.line.strip_prefix(b"\xEF\xBB\xBF") {
                self.line = rest.to_vec();
            }
        }
        if self.line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: if self.event.is_empty() {
                        "message".to_string()
                    } else {
                        std::mem::take(&mut self.event)
                    },
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        let line = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in input.chunks(piece) {
            decoder.feed(chunk, &mut out).unwrap();
        }
        out
    }

    #[test]
    fn events_survive_any_chunking_and_line_ending() {
        let input = "event: ping\ndata: {}\n\n: comment\r\nevent: delta\r\ndata: a\r\ndata: b\r\n\r\ndata: ü\r\r";
        let expected = vec![
            SseEvent {
                event: "ping".into(),
                data: "{}".into(),
            },
            SseEvent {
                event: "delta".into(),
                data: "a\nb".into(),
            },
            SseEvent {
                event: "message".into(),
                data: "ü".into(),
            },
        ];
        for piece in 1..input.len() {
            assert_eq!(
                decode_in_pieces(input.as_bytes(), piece),
                expected,
                "piece {piece}"
            );
        }
    }

    #[test]
    fn an_unfinished_event_is_not_emitted() {
        assert!(decode_in_pieces(b"event: x\ndata: partial", 4).is_empty());
    }

    #[test]
    fn an_endless_line_is_refused_at_its_bound() {
        let mut decoder = SseDecoder::new();
        let chunk = vec![b'x'; 1024 * 1024];
        let mut out = Vec::new();
        let fed: Result<Vec<()>, TooLarge> =
            (0..40).map(|_| decoder.feed(&chunk, &mut out)).collect();
        assert_eq!(fed, Err(TooLarge));
    }

    #[test]
    fn a_leading_byte_order_mark_is_ignored() {
        let events = decode_in_pieces(b"\xEF\xBB\xBFdata: x\n\n", 1);
        assert_eq!(
            events,
            vec![SseEvent {
                event: "message".into(),
                data: "x".into()
            }]
        );
    }
}
