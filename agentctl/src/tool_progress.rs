//! The line of a tool call under way: a spinner, the time it has run, and the last line of its
//! output, redrawn in place about ten times a second.

use crate::style::Style;

/// The terminal's width in columns (80 when it cannot be told).
pub fn terminal_width() -> usize {
    terminal_size()
        .map_or(80, |(cols, _)| cols as usize)
        .max(20)
}

/// The size of the terminal standard output is, as columns and rows; `None` when it is not a
/// terminal. Asked of the terminal itself: never by running a program (crossterm runs `tput`
/// when its own query fails).
pub fn terminal_size() -> Option<(u16, u16)> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let mut size = libc::winsize {
            ws_row: 0,
            ws_col: 0,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let fd = std::io::stdout().as_raw_fd();
        // SAFETY: TIOCGWINSZ writes a winsize into the struct we pass; on a descriptor that is
        // not a terminal it fails and writes nothing.
        let done = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) };
        (done == 0 && size.ws_col > 0).then_some((size.ws_col, size.ws_row))
    }
    #[cfg(not(unix))]
    {
        use std::io::IsTerminal;
        if std::io::stdout().is_terminal() {
            crossterm::terminal::size().ok()
        } else {
            None
        }
    }
}

/// A tool call under way, as its line shows it.
#[derive(Debug, Clone)]
pub struct Running {
    /// The call's one-line summary.
    pub summary: String,
    started: std::time::Instant,
    /// The end of its output: the last complete line and what came after it.
    tail: String,
}

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

impl Running {
    /// A call that starts now.
    pub fn new(summary: &str) -> Running {
        Running {
            summary: summary.to_string(),
            started: std::time::Instant::now(),
            tail: String::new(),
        }
    }

    /// Takes a piece of output, keeping only its last lines.
    pub fn seen(&mut self, text: &str) {
        self.tail.push_str(text);
        if self.tail.len() > 8192 {
            let mut cut = self.tail.len() - 4096;
            while !self.tail.is_char_boundary(cut) {
                cut += 1;
            }
            self.tail.drain(..cut);
        }
    }

    /// `● bash cargo test ⠹ 2.3s  Compiling foo`, within `width` columns.
    pub fn line(&self, style: Style, width: usize) -> String {
        let elapsed = self.started.elapsed();
        let frame = SPINNER[(elapsed.as_millis() / 100) as usize % SPINNER.len()];
        let last = self
            .tail
            .lines()
            .rev()
            .map(|l| l.trim_end_matches('\r').trim())
            .find(|l| !l.is_empty())
            .unwrap_or_default();
        // The summary gives way first: the spinner and the clock always show.
        let clock = format!("{frame} {:.1}s", elapsed.as_secs_f64());
        let room = width.saturating_sub(clock.chars().count() + 3).max(10);
        let summary = if self.summary.chars().count() > room {
            let cut: String = self.summary.chars().take(room - 1).collect();
            format!("{cut}…")
        } else {
            self.summary.clone()
        };
        let head = format!("● {summary} {clock}");
        let room = width.saturating_sub(head.chars().count() + 3);
        let last: String = last
            .chars()
            .filter(|c| !c.is_control())
            .take(room)
            .collect();
        if last.is_empty() {
            style.dim(&head)
        } else {
            format!("{}  {}", style.dim(&head), style.dim(&last))
        }
    }
}
