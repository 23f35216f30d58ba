//! The first bytes a peer sends, kept while its handshake is read, to tell a daemon from text
//! someone printed. A daemon's answer is a frame, whose 4-byte length prefix begins with a zero
//! byte (no frame is 16 MiB or more); text (a remote shell's startup files printing a banner
//! before `agentctl bridge` runs, see docs/architecture.md#another-machine-over-ssh) begins
//! with anything else, and is shown to the user as what it is.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

use super::far_text;

/// The most characters of such text shown.
pub const SHOWN_CHARS: usize = 200;

/// The most bytes kept.
const KEPT: usize = 1024;

/// How long the rest of the text may take to arrive once it is known not to be a frame.
const MORE_WAIT: Duration = Duration::from_millis(250);

/// A reader that keeps the first [`KEPT`] bytes read through it.
pub(super) struct FirstBytes<R> {
    inner: R,
    seen: Vec<u8>,
}

impl<R: AsyncRead + Unpin> FirstBytes<R> {
    /// Keeps the first bytes read from `inner`.
    pub(super) fn new(inner: R) -> FirstBytes<R> {
        FirstBytes {
            inner,
            seen: Vec::new(),
        }
    }

    /// The reader, for what follows the handshake.
    pub(super) fn into_inner(self) -> R {
        self.inner
    }

    /// When the bytes read so far (or, when none were, the first that come within a moment)
    /// are not the start of a frame: the text they begin (with what follows them within a
    /// moment), printable, on one line, at most [`SHOWN_CHARS`] characters.
    pub(super) async fn printed_text(&mut self) -> Option<String> {
        let deadline = tokio::time::Instant::now() + MORE_WAIT;
        let mut buf = [0u8; 256];
        if self.seen.is_empty() {
            // Text printed by a far end that then went away is still there to read.
            if let Ok(Ok(n)) = tokio::time::timeout_at(deadline, self.inner.read(&mut buf)).await {
                self.seen.extend_from_slice(&buf[..n]);
            }
        }
        if self.seen.first().is_none_or(|b| *b == 0) {
            return None;
        }
        // A frame's prefix (a zero byte) ends the text.
        while self.seen.len() < KEPT && !self.seen.contains(&0) {
            let want = buf.len().min(KEPT - self.seen.len());
            match tokio::time::timeout_at(deadline, self.inner.read(&mut buf[..want])).await {
                Ok(Ok(n)) if n > 0 => self.seen.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        Some(shown(&self.seen))
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for FirstBytes<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let room = KEPT.saturating_sub(self.seen.len());
            let new = &buf.filled()[before..];
            let kept = &new[..new.len().min(room)];
            self.seen.extend_from_slice(kept);
        }
        polled
    }
}

/// Text as the user sees it in one line: up to the first zero byte, its lines joined by a
/// visible `\n`, control characters shown as `�`, cut at [`SHOWN_CHARS`].
fn shown(seen: &[u8]) -> String {
    let text = seen.split(|b| *b == 0).next().unwrap_or_default();
    let text = String::from_utf8_lossy(text);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    far_text::one_line(&lines.join("\\n"), SHOWN_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_banner_before_the_frames_is_shown_as_text() {
        let mut bytes = b"Welcome to host\r\n\nLast login: today\n".to_vec();
        bytes.extend_from_slice(&[0, 0, 0, 3, 1, 2, 3]);
        let mut reader = FirstBytes::new(&bytes[..]);
        let mut prefix = [0u8; 4];
        reader.read_exact(&mut prefix).await.unwrap();
        assert_eq!(
            reader.printed_text().await.as_deref(),
            Some("Welcome to host\\nLast login: today")
        );
    }

    #[tokio::test]
    async fn a_frame_is_not_text() {
        let bytes = [0u8, 0, 0, 200, b'x'];
        let mut reader = FirstBytes::new(&bytes[..]);
        let mut prefix = [0u8; 4];
        reader.read_exact(&mut prefix).await.unwrap();
        assert_eq!(reader.printed_text().await, None);
        assert_eq!(FirstBytes::new(&b""[..]).printed_text().await, None);
    }

    #[tokio::test]
    async fn text_not_read_yet_is_read_for_a_moment() {
        let mut reader = FirstBytes::new(&b"bash: agentctl: not found\n"[..]);
        assert_eq!(
            reader.printed_text().await.as_deref(),
            Some("bash: agentctl: not found")
        );
    }

    #[tokio::test]
    async fn printed_text_is_capped_and_shown_not_obeyed() {
        let mut bytes = b"\x1b]0;pwned\x07\x1b[2J".to_vec();
        bytes.extend(std::iter::repeat_n(b'a', 100_000));
        let mut reader = FirstBytes::new(&bytes[..]);
        let mut prefix = [0u8; 4];
        reader.read_exact(&mut prefix).await.unwrap();
        let text = reader.printed_text().await.unwrap();
        assert!(!text.contains('\x1b'), "{text:?}");
        assert!(text.starts_with("\u{fffd}]0;pwned\u{fffd}"), "{text:?}");
        assert_eq!(text.chars().count(), SHOWN_CHARS + 1, "{text:?}");
        assert!(text.ends_with('…'));
    }
}
