//! A running tool's output as it comes (`ToolOutput` events): what a command prints is gathered
//! here and handed on at most ten times a second, each piece at most [`MAX_PIECE`] bytes (the
//! end of what came), so a command that prints a flood costs the session a few small events.
//! The tool's result still holds the whole (capped) output.

use std::sync::{Arc, Mutex};

/// The most bytes of one piece; more output in one interval keeps its end.
pub(crate) const MAX_PIECE: usize = 4096;

/// Output gathered since the last piece was taken. Clones share it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Progress {
    piece: Arc<Mutex<Piece>>,
}

#[derive(Debug, Default)]
struct Piece {
    text: String,
    omitted: u64,
    /// The call has its result: nothing more is handed on.
    closed: bool,
}

impl Progress {
    /// Adds output as it was read.
    pub(crate) fn push(&self, bytes: &[u8]) {
        let mut piece = self.piece.lock().unwrap_or_else(|e| e.into_inner());
        piece.text.push_str(&String::from_utf8_lossy(bytes));
        if piece.text.len() > MAX_PIECE {
            let mut cut = piece.text.len() - MAX_PIECE;
            while !piece.text.is_char_boundary(cut) {
                cut += 1;
            }
            piece.omitted += cut as u64;
            piece.text.drain(..cut);
        }
    }

    /// Hands the output gathered since the last call, and the bytes left out of it, to
    /// `deliver`, if any came and the call has no result yet. The two never cross: a piece is
    /// delivered before [`Progress::close`] returns, or not at all.
    pub(crate) fn deliver(&self, deliver: impl FnOnce(String, u64)) {
        let mut piece = self.piece.lock().unwrap_or_else(|e| e.into_inner());
        if piece.closed || piece.text.is_empty() {
            return;
        }
        let omitted = std::mem::take(&mut piece.omitted);
        let text = std::mem::take(&mut piece.text);
        deliver(text, omitted);
    }

    /// Ends the handing on: the call's result follows.
    pub(crate) fn close(&self) {
        self.piece.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
    }

    /// The output gathered since the last call and the bytes left out of it, if any came.
    #[cfg(test)]
    fn take(&self) -> Option<(String, u64)> {
        let mut taken = None;
        self.deliver(|text, omitted| taken = Some((text, omitted)));
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_keeps_its_end_and_counts_the_rest() {
        let progress = Progress::default();
        assert_eq!(progress.take(), None);
        progress.push(b"first\n");
        for _ in 0..1000 {
            progress.push(&[b'x'; 100]);
        }
        progress.push("é last".as_bytes());
        let (text, omitted) = progress.take().unwrap();
        assert!(text.len() <= MAX_PIECE);
        assert!(text.ends_with("é last"));
        assert_eq!(omitted as usize + text.len(), 6 + 100_000 + "é last".len());
        assert_eq!(progress.take(), None);
        progress.push(b"late");
        progress.close();
        assert_eq!(progress.take(), None, "nothing after the result");
    }
}
