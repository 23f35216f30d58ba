//! The bottom region of a terminal view. Finished lines scroll up into the terminal's own
//! history once, in order, wrapped by the terminal; below them a few rows (the unfinished
//! line, what is under way, the status line, the input line) are redrawn whole at every
//! change. The cursor is kept hidden at the first column of the region's top row, so that a
//! redraw clears every row of the old region (`ESC[J`) however the terminal reflowed it on a
//! resize, and nothing of an older drawing is left behind.

/// The rows drawn under the terminal's finished lines.
#[derive(Debug, Default)]
pub struct Region {
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
        // From the region's top: every row of the old drawing goes.
        out.push_str("\r\x1b[J");
        for line in finished {
            out.push_str(line);
            // A style the line left open does not run into the next one.
            if line.contains('\x1b') {
                out.push_str("\x1b[0m");
            }
            out.push_str("\r\n");
        }
        out.push_str(&rows.join("\r\n"));
        if rows.len() > 1 {
            out.push_str(&format!("\x1b[{}A", rows.len() - 1));
        }
        out.push('\r');
        out
    }

    /// What to write to take the region away for good (the view ends): the cursor is shown
    /// again where the region began, at the start of an empty row.
    pub fn close(&mut self, finished: &[String]) -> String {
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
}
