//! The bottom region of a terminal view. Finished lines scroll up into the terminal's own
//! history once, in order, wrapped by the terminal; below them a few rows (the unfinished
//! line, what is under way, the status line, the input line) are redrawn at every change. The
//! cursor is kept hidden at the first column of the region's top row, so that a redraw clears
//! every row of the old region (`ESC[J`) however the terminal reflowed it on a resize, and
//! nothing of an older drawing is left behind. Between resizes, rows that did not change are
//! not written again.

/// The rows drawn under the terminal's finished lines.
#[derive(Debug, Default)]
pub struct Region {
    /// The rows on screen now, the cursor on the first; `None` when what is on screen is not
    /// known (the start, a resize) and every row is drawn.
    shown: Option<Vec<String>>,
    /// Whether the cursor was hidden (and must be shown again at the end).
    started: bool,
}

impl Region {
    /// What to write to print `finished` lines above the region and draw it again as `rows`
    /// (each at most as wide as the terminal); the cursor ends on the region's top row.
    pub fn draw(&mut self, finished: &[String], rows: &[String]) -> String {
        let mut out = String::new();
        if !self.started {
            out.push_str("\x1b[?25l");
            self.started = true;
        }
        // The rows that stay as they are, when nothing scrolls up through them.
        let same = match &self.shown {
            Some(shown) if finished.is_empty() => {
                let same = shown
                    .iter()
                    .zip(rows)
                    .take_while(|(shown, row)| shown == row)
                    .count();
                if same == rows.len() && same == shown.len() {
                    return out;
                }
                // Only the last row grew, unstyled (a reply streaming into its open line):
                // the new text is written after the old, nothing else.
                if same + 1 == rows.len()
                    && same + 1 == shown.len()
                    && !rows[same].contains('\x1b')
                    && let Some(added) = rows[same].strip_prefix(shown[same].as_str())
                {
                    let column = super::wrap::width(&shown[same]);
                    if same > 0 {
                        out.push_str(&format!("\x1b[{same}B"));
                    }
                    if column > 0 {
                        out.push_str(&format!("\x1b[{column}C"));
                    }
                    out.push_str(added);
                    if same > 0 {
                        out.push_str(&format!("\x1b[{same}A"));
                    }
                    out.push('\r');
                    self.shown = Some(rows.to_vec());
                    return out;
                }
                same
            }
            _ => 0,
        };
        if same > 0 {
            out.push_str(&format!("\x1b[{same}B"));
        }
        // From the first row that changes: every row of the old drawing goes.
        out.push_str("\r\x1b[J");
        for line in finished {
            out.push_str(line);
            // A style the line left open does not run into the next one.
            if line.contains('\x1b') {
                out.push_str("\x1b[0m");
            }
            out.push_str("\r\n");
        }
        out.push_str(&rows[same..].join("\r\n"));
        let bottom = if same < rows.len() {
            rows.len() - 1
        } else {
            same
        };
        if bottom > 0 {
            out.push_str(&format!("\x1b[{bottom}A"));
        }
        out.push('\r');
        self.shown = Some(rows.to_vec());
        out
    }

    /// The next drawing draws every row (the terminal changed size, and may have moved them).
    pub fn forget(&mut self) {
        self.shown = None;
    }

    /// What to write to take the region away for good (the view ends): the cursor is shown
    /// again where the region began, at the start of an empty row.
    pub fn close(&mut self, finished: &[String]) -> String {
        self.forget();
        let mut out = self.draw(finished, &[]);
        if self.started {
            out.push_str("\x1b[?25h");
            self.started = false;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redraw_clears_from_the_top_and_returns_there() {
        let mut region = Region::default();
        let first = region.draw(&[], &["partial".into(), "[idle]".into()]);
        assert!(first.starts_with("\x1b[?25l\r\x1b[J"), "{first:?}");
        assert!(first.ends_with("partial\r\n[idle]\x1b[1A\r"), "{first:?}");
        let next = region.draw(&["done line".into()], &["[idle]".into()]);
        assert_eq!(next, "\r\x1b[Jdone line\r\n[idle]\r");
        assert_eq!(region.close(&[]), "\r\x1b[J\r\x1b[?25h");
    }

    #[test]
    fn rows_that_did_not_change_are_not_written_again() {
        let mut region = Region::default();
        region.draw(&[], &["open li".into(), "[running]".into()]);
        let next = region.draw(&[], &["open line".into(), "[running]".into()]);
        assert_eq!(next, "\r\x1b[Jopen line\r\n[running]\x1b[1A\r");
        // The last row growing gets only what was added.
        let grew = region.draw(&[], &["open line".into(), "[running] 2".into()]);
        assert_eq!(grew, "\x1b[1B\x1b[9C 2\x1b[1A\r");
        region.draw(&[], &["open line".into(), "[running]".into()]);
        let same = region.draw(&[], &["open line".into(), "[running]".into()]);
        assert_eq!(same, "");
        let grown = region.draw(&[], &["open line".into(), "[running]".into(), "› x".into()]);
        assert_eq!(grown, "\x1b[2B\r\x1b[J› x\x1b[2A\r");
        let shrunk = region.draw(&[], &["open line".into()]);
        assert_eq!(shrunk, "\x1b[1B\r\x1b[J\x1b[1A\r");
        region.forget();
        let whole = region.draw(&[], &["open line".into()]);
        assert_eq!(whole, "\r\x1b[Jopen line\r");
    }
}
