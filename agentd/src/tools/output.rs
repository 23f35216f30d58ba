//! The one capping helper every tool's output goes through (docs/architecture.md#tools): output is
//! kept as its first and last bytes within a limit, with a single note of what was left out between
//! them. Text is pushed as it arrives, so the memory a tool holds never passes its limit whatever
//! it is given.

use std::collections::VecDeque;

/// Output held within a byte limit: the first half of the limit from the start, the second half
/// from the end, and a count of the bytes that fell between.
#[derive(Debug)]
pub(crate) struct Capped {
    limit: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    omitted: u64,
}

impl Capped {
    /// An empty buffer that keeps at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> Capped {
        Capped {
            limit,
            head: Vec::new(),
            tail: VecDeque::new(),
            omitted: 0,
        }
    }

    /// Appends `bytes`.
    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        let room = (self.limit - self.limit / 2).saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head
            .extend_from_slice(bytes.get(..take).unwrap_or_default());
        bytes = bytes.get(take..).unwrap_or_default();
        if bytes.is_empty() {
            return;
        }
        let keep = self.limit / 2;
        // Only the end of a large piece can stay.
        let skip = bytes.len().saturating_sub(keep);
        self.omitted += skip as u64;
        self.tail.extend(bytes.get(skip..).unwrap_or_default());
        let excess = self.tail.len().saturating_sub(keep);
        self.tail.drain(..excess);
        self.omitted += excess as u64;
    }

    /// Appends `text`.
    pub(crate) fn push_str(&mut self, text: &str) {
        self.push(text.as_bytes());
    }

    /// The kept text, with one note of what was left out (if anything). A character cut by the
    /// limit is dropped whole, never shown half.
    pub(crate) fn finish(self) -> String {
        let mut head = self.head;
        let mut tail: Vec<u8> = self.tail.into();
        if self.omitted == 0 {
            head.extend_from_slice(&tail);
            return String::from_utf8_lossy(&head).into_owned();
        }
        let mut omitted = self.omitted;
        let cut = utf8_prefix_len(&head);
        omitted += (head.len() - cut) as u64;
        head.truncate(cut);
        let start = tail.len() - utf8_suffix_len(&tail);
        omitted += start as u64;
        tail.drain(..start);
        format!(
            "{}\n\n[... {omitted} bytes omitted ...]\n\n{}",
            String::from_utf8_lossy(&head),
            String::from_utf8_lossy(&tail)
        )
    }
}

/// Caps `text` at `limit` bytes, keeping its head and tail with one note of what was left out.
pub(crate) fn cap(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut capped = Capped::new(limit);
    capped.push_str(text);
    capped.finish()
}

/// The length of `bytes` without a character cut off at its end.
fn utf8_prefix_len(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        // An error with no length is an incomplete character at the end.
        Err(err) if err.error_len().is_none() => err.valid_up_to(),
        Err(_) => bytes.len(),
    }
}

/// The length of `bytes` without a character cut off at its start.
fn utf8_suffix_len(bytes: &[u8]) -> usize {
    // Continuation bytes (10xxxxxx) at the start belong to a character that was cut.
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|&&b| b & 0xC0 == 0x80)
        .count();
    bytes.len() - skip
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_keeps_head_and_tail_with_one_note() {
        let mut buffer = Capped::new(10);
        buffer.push(b"0123456789abcdefghij");
        assert_eq!(
            buffer.finish(),
            "01234\n\n[... 10 bytes omitted ...]\n\nfghij"
        );
        let text = "a".repeat(50) + &"b".repeat(50);
        let capped = cap(&text, 20);
        assert_eq!(capped.matches("omitted").count(), 1);
        assert!(capped.starts_with("aaaaaaaaaa\n"));
        assert!(capped.ends_with("\nbbbbbbbbbb"));
        assert!(capped.contains("[... 80 bytes omitted ...]"));
        assert_eq!(cap("short", 20), "short");
    }

    #[test]
    fn pieces_of_any_size_give_the_same_result() {
        let text: String = (0..500)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let whole = cap(&text, 64);
        for piece in [1, 3, 7, 64, 100] {
            let mut buffer = Capped::new(64);
            for chunk in text.as_bytes().chunks(piece) {
                buffer.push(chunk);
            }
            assert_eq!(buffer.finish(), whole, "piece {piece}");
        }
    }

    #[test]
    fn characters_cut_by_the_limit_are_dropped_whole() {
        let text = "é".repeat(40);
        let capped = cap(&text, 11);
        assert!(!capped.contains('\u{FFFD}'), "{capped}");
        let kept = capped.matches('é').count();
        let omitted: usize = capped
            .split("[... ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert_eq!(kept * 2 + omitted, 80);
    }
}
