//! The input side of the interactive view: what the user did, and where it comes from (the
//! terminal's keys, see `terminal`, or plain lines from stdin).

use std::io::BufRead;

use tokio::sync::mpsc;

/// What the user did at the input line.
#[derive(Debug)]
pub(super) enum Input {
    Line(String),
    /// A key pressed while a permission request was shown (no Enter needed).
    Key(char),
    CtrlC,
    CtrlD,
    Eof,
    /// The terminal went away (it hung up): the chat detaches.
    Gone,
    Failed(String),
}

/// The input side: the terminal editor, or plain stdin.
pub(super) trait InputLine {
    /// Redraws the status line.
    fn refresh(&self);
    /// Puts text back into the input line.
    fn restore(&self, text: String);
    /// Whether the terminal the input comes from went away.
    fn gone(&self) -> bool {
        false
    }
    /// Stops reading input.
    fn stop(&self);
}

/// Plain stdin lines, without a terminal.
pub(super) struct StdinLine;

impl StdinLine {
    pub(super) fn start(input: mpsc::UnboundedSender<Input>) -> StdinLine {
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                match line {
                    Ok(line) => {
                        if input.send(Input::Line(line)).is_err() {
                            return;
                        }
                    }
                    Err(err) => {
                        let _ = input.send(Input::Failed(err.to_string()));
                        return;
                    }
                }
            }
            let _ = input.send(Input::Eof);
        });
        StdinLine
    }
}

impl InputLine for StdinLine {
    fn refresh(&self) {}

    fn restore(&self, text: String) {
        outln!("(not sent: {})", crate::style::printable(&text));
    }

    fn stop(&self) {}
}
