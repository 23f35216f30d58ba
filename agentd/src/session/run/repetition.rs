//! A reply that repeats the same block over and over (small models fall into loops: the same
//! four lines forty-five times, until the output limit). As the text streams, its end is
//! checked: when it is one block of at least [`MIN_BLOCK`] bytes said [`MIN_COPIES`] times in
//! a row, the stream is cut and the text is kept up to the end of the first copy.

/// The shortest block that counts (a line of `-----` is not a loop).
const MIN_BLOCK: usize = 20;
/// How many copies in a row make a loop.
const MIN_COPIES: usize = 8;
/// The text is checked again after this many new bytes.
const CHECK_EVERY: usize = 128;
/// The longest block looked for.
const MAX_BLOCK: usize = 4096;

/// Watches a streaming reply's text for a loop.
#[derive(Debug, Default)]
pub(crate) struct RepetitionGuard {
    text: String,
    checked: usize,
    /// Where the text is cut once a loop was seen.
    cut: Option<usize>,
}

impl RepetitionGuard {
    /// Takes a piece of text; true once the text loops.
    pub(crate) fn push(&mut self, piece: &str) -> bool {
        if self.cut.is_some() {
            return true;
        }
        self.text.push_str(piece);
        if self.text.len() - self.checked < CHECK_EVERY {
            return false;
        }
        self.checked = self.text.len();
        self.cut = loop_start(self.text.as_bytes());
        self.cut.is_some()
    }

    /// Whether a loop was seen.
    pub(crate) fn tripped(&self) -> bool {
        self.cut.is_some()
    }

    /// The text up to the end of the loop's first copy (all of it when there is no loop).
    pub(crate) fn kept(&self) -> String {
        let mut end = self.cut.unwrap_or(self.text.len()).min(self.text.len());
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        self.text.get(..end).unwrap_or_default().to_string()
    }
}

/// Where the text should end if its tail is one block repeated: after the first copy.
fn loop_start(bytes: &[u8]) -> Option<usize> {
    let len = bytes.len();
    if len < MIN_BLOCK * MIN_COPIES {
        return None;
    }
    // The nearest earlier place the text's last bytes were seen gives the block's length.
    let probe = &bytes[len - MIN_BLOCK..];
    let search = &bytes[len.saturating_sub(MAX_BLOCK + MIN_BLOCK)..len - 1];
    let at = search
        .windows(MIN_BLOCK)
        .rposition(|w| w == probe)
        .map(|i| i + len.saturating_sub(MAX_BLOCK + MIN_BLOCK))?;
    let period = len - MIN_BLOCK - at;
    if period < MIN_BLOCK {
        return None;
    }
    // Count the copies of the last block going back.
    let block = &bytes[len - period..];
    let mut copies = 1;
    while copies * period + period <= len {
        let start = len - (copies + 1) * period;
        if &bytes[start..start + period] != block {
            break;
        }
        copies += 1;
    }
    (copies >= MIN_COPIES).then(|| len - (copies - 1) * period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_said_over_and_over_is_cut_after_its_first_copy() {
        let block = "Start the server with:\n  npm run dev\nThen open the page.\n\n";
        let mut guard = RepetitionGuard::default();
        let mut tripped = false;
        guard.push("The README says:\n");
        for _ in 0..45 {
            tripped |= guard.push(block);
        }
        assert!(tripped && guard.tripped());
        assert_eq!(guard.kept(), format!("The README says:\n{block}"));
    }

    #[test]
    fn ordinary_text_and_rules_are_not_loops() {
        let mut guard = RepetitionGuard::default();
        for i in 0..200 {
            assert!(!guard.push(&format!("line {i} of a long answer\n")));
        }
        assert!(!guard.push(&"-".repeat(2000)));
        assert!(!guard.push(&"| a | b |\n".repeat(3)));
        assert!(!guard.tripped());
    }
}
