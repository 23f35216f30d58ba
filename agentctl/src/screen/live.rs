//! What a terminal view shows now: the finished lines not printed yet, the unfinished line,
//! the rows of what is under way (a running tool, subagents), and the rows under them that
//! their owner draws (chat's status and input lines). Every change is drawn at once through
//! the [`Region`]; whoever changes it holds the lock, so two threads never write at once.

use std::sync::{Arc, Mutex};

use super::region::Region;
use super::wrap::{truncate, width, wrap};

/// A [`Live`] shared by the view and the thread that reads keys.
pub type SharedLive = Arc<Mutex<Live>>;

/// The rows under the activity, drawn for a terminal `cols` wide: chat's status and input.
pub type BottomRows = Box<dyn FnMut(usize) -> Vec<String> + Send>;

/// The state of a terminal view's bottom region.
pub struct Live {
    region: Region,
    finished: Vec<String>,
    partial: String,
    activity: Vec<String>,
    bottom: Option<BottomRows>,
    /// The terminal's size at the last drawing.
    size: (usize, usize),
    closed: bool,
}

impl Live {
    /// An empty view, shared.
    pub fn shared() -> SharedLive {
        Arc::new(Mutex::new(Live {
            region: Region::default(),
            finished: Vec::new(),
            partial: String::new(),
            activity: Vec::new(),
            bottom: None,
            size: (0, 0),
            closed: false,
        }))
    }

    /// Locks a shared view (a panic elsewhere does not stop the drawing).
    pub fn lock(shared: &SharedLive) -> std::sync::MutexGuard<'_, Live> {
        shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets what is drawn under the activity rows.
    pub fn set_bottom(&mut self, bottom: BottomRows) {
        self.bottom = Some(bottom);
    }

    /// A finished line, styled, printed above the region at the next drawing.
    pub fn line(&mut self, line: String) {
        self.finished.push(line);
    }

    /// The unfinished line as it stands.
    pub fn set_partial(&mut self, text: &str) {
        if self.partial != text {
            self.partial = text.to_string();
        }
    }

    /// The rows of what is under way, one each.
    pub fn set_activity(&mut self, rows: Vec<String>) {
        self.activity = rows;
    }

    /// Whether the terminal changed size since the last drawing.
    pub fn resized(&self) -> bool {
        self.size != terminal_size()
    }

    /// Draws the finished lines and the region as they are now.
    pub fn draw(&mut self) {
        let size = terminal_size();
        if size != self.size {
            // The terminal may have moved the rows: all of them are drawn again.
            self.region.forget();
            self.size = size;
        }
        let finished = std::mem::take(&mut self.finished);
        let out = if self.closed {
            let mut out = String::new();
            for line in finished {
                out.push_str(&line);
                out.push_str("\r\n");
            }
            out
        } else {
            let rows = self.rows(size);
            self.region.draw(&finished, &rows)
        };
        if !out.is_empty() {
            crate::stdout::write(&out);
        }
    }

    /// Takes the region away for good: the finished lines and the unfinished one are printed,
    /// the cursor is shown again, and what comes later is printed plainly.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        let mut finished = std::mem::take(&mut self.finished);
        if !self.partial.is_empty() {
            finished.push(std::mem::take(&mut self.partial));
        }
        self.closed = true;
        let out = self.region.close(&finished);
        crate::stdout::write(&out);
    }

    /// The region's rows for a terminal of `size`: the unfinished line (its last rows when
    /// it is long), the activity, the bottom rows; never more than the terminal has rows.
    fn rows(&mut self, (cols, height): (usize, usize)) -> Vec<String> {
        let partial = if self.partial.is_empty() {
            Vec::new()
        } else {
            wrap(&self.partial.replace('\t', "    "), cols)
        };
        let activity: Vec<String> = self.activity.iter().map(|r| truncate(r, cols)).collect();
        let bottom: Vec<String> = match &mut self.bottom {
            Some(bottom) => bottom(cols)
                .into_iter()
                .map(|r| {
                    if width(&r) > cols {
                        truncate(&r, cols)
                    } else {
                        r
                    }
                })
                .collect(),
            None => Vec::new(),
        };
        // The input and status come first, then what is under way, then the unfinished line.
        let room = height.saturating_sub(1).max(1);
        let bottom_kept = bottom.len().min(room);
        let bottom = bottom[bottom.len() - bottom_kept..].to_vec();
        let activity_kept = activity.len().min(room - bottom_kept);
        let partial_kept = partial.len().min(room - bottom_kept - activity_kept);
        let mut rows = partial[partial.len() - partial_kept..].to_vec();
        rows.extend(activity.into_iter().take(activity_kept));
        rows.extend(bottom);
        rows
    }
}

/// The terminal's columns and rows (80 × 24 when it cannot be told).
fn terminal_size() -> (usize, usize) {
    crate::tool_progress::terminal_size().map_or((80, 24), |(c, r)| {
        (usize::from(c).max(10), usize::from(r).max(2))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_and_status_keep_their_rows_and_a_long_open_line_shows_its_end() {
        let live = Live::shared();
        let mut live = Live::lock(&live);
        live.set_bottom(Box::new(|_| vec!["[idle]".into(), "› ".into()]));
        live.set_partial(&"word ".repeat(40));
        live.set_activity(vec![
            "● bash a command far wider than the terminal is".into(),
        ]);
        let rows = live.rows((20, 6));
        assert_eq!(rows.len(), 5, "{rows:?}");
        assert!(rows.iter().all(|r| width(r) <= 20), "{rows:?}");
        assert_eq!(rows[3..], ["[idle]".to_string(), "› ".to_string()]);
        assert!(rows[2].ends_with('…'), "{rows:?}");
        // The open line's last rows, where the text is arriving.
        assert!(rows[1].trim_end().ends_with("word"), "{rows:?}");
    }
}
