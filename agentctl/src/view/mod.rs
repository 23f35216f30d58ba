//! How events look to a person: text as it streams, one line per tool call (redrawn in place
//! while it runs, on a terminal), a summary at the end. One function per event kind is in
//! [`events`]; the JSON view is `crate::json`.

use std::io::IsTerminal;

use agentctl::client::{Flow, View};
use protocol::{SessionEvent, TokenUsage};

pub use crate::style::{Style, set_color_choice};
use crate::tool_progress::{Running, terminal_width};
pub use tools::{tool_label, tool_summary};

mod children;
mod events;
mod tools;

/// Where the human view writes.
pub enum Output {
    /// Straight to stdout, text as it streams.
    Stdout,
    /// Whole lines to a line editor's printer, which shows them above the input line.
    Lines {
        /// The printer.
        printer: std::sync::mpsc::SyncSender<String>,
        /// The unfinished last line, shown by the line editor above its input line as it
        /// streams.
        partial: std::sync::Arc<std::sync::Mutex<String>>,
    },
}

/// The human view of a session's events.
pub struct HumanView {
    style: Style,
    output: Output,
    /// The id of the tool call whose line is open (printed without its result yet).
    open_call: Option<String>,
    /// The open call's progress, redrawn in place on a terminal.
    running: Option<Running>,
    /// Whether lines may be redrawn in place (stdout is a terminal).
    live: bool,
    /// The reply's text, rendered as markdown line by line when colors are on.
    reply: crate::reply_text::ReplyText,
    /// Whether the cursor is at the start of a line.
    at_line_start: bool,
    /// Whether text deltas of the current reply were shown (so the full message is not).
    streamed: bool,
    /// The calls of the run: id, one-line summary, tool and arguments.
    calls: Vec<(String, String, String, String)>,
    /// Tokens of each reply of the current run.
    turns: Vec<TokenUsage>,
    /// What the run cost so far, when the model's price is known.
    cost: Option<u64>,
    /// Whether to echo user messages (off for the prompt `run` itself sent).
    pub echo_user: bool,
    /// The session's running subagents.
    children: children::Children,
    /// What the run's subagents cost, when their model's price is known.
    children_cost: u64,
    /// Lines drawn in place at the bottom (the open call's progress, the subagents' lines);
    /// the cursor is at the end of the last one.
    live_lines: usize,
}

impl HumanView {
    /// A view with `style` writing to stdout.
    pub fn new(style: Style) -> Self {
        Self::with_output(style, Output::Stdout)
    }

    /// A view with `style` writing to `output`.
    pub fn with_output(style: Style, output: Output) -> Self {
        let live = matches!(output, Output::Stdout) && std::io::stdout().is_terminal();
        HumanView {
            style,
            output,
            open_call: None,
            running: None,
            live,
            reply: crate::reply_text::ReplyText::new(style.colored()),
            at_line_start: true,
            streamed: false,
            calls: Vec::new(),
            turns: Vec::new(),
            cost: None,
            echo_user: true,
            children: children::Children::default(),
            children_cost: 0,
            live_lines: 0,
        }
    }

    fn out(&mut self, text: &str) {
        self.write(text, false);
    }

    /// Writes reply text: rendered as markdown once each line is whole, its control
    /// characters shown, not obeyed.
    fn reply_text(&mut self, text: &str) {
        let text = crate::style::printable(text);
        self.write(&text, true);
    }

    /// Ends the reply's open line.
    fn finish_reply(&mut self) {
        if matches!(self.output, Output::Stdout) && self.reply.is_open() {
            let out = self.reply.finish(terminal_width());
            self.write_raw(&out);
            self.at_line_start = true;
        }
    }

    /// The reply is complete: a code block it left open does not run into the next one.
    fn end_reply(&mut self) {
        self.finish_reply();
        self.reply.reset();
    }

    /// Takes away the lines drawn in place, leaving the open call's line as it was printed,
    /// before anything else is written.
    fn clear_live(&mut self) {
        if self.live_lines == 0 {
            return;
        }
        let mut text = "\r".to_string();
        if self.live_lines > 1 {
            text.push_str(&format!("\x1b[{}A", self.live_lines - 1));
        }
        text.push_str("\x1b[J");
        if let (Some(_), Some(running)) = (&self.open_call, &mut self.running) {
            text.push_str(&format!("{} {}", self.style.dim("●"), running.summary));
            running.drawn = false;
        }
        self.live_lines = 0;
        self.write_raw(&text);
    }

    fn write_raw(&mut self, text: &str) {
        crate::stdout::write(text);
    }

    fn write(&mut self, text: &str, reply: bool) {
        if matches!(self.output, Output::Stdout) {
            self.clear_live();
        }
        if !reply && matches!(self.output, Output::Stdout) && self.reply.is_open() {
            // Other output ends the reply's open line; that line's own newline is written.
            self.finish_reply();
            if text == "\n" {
                return;
            }
        }
        match &mut self.output {
            Output::Stdout => {
                let out = if reply {
                    self.reply.push(text, terminal_width())
                } else {
                    text.to_string()
                };
                crate::stdout::write(&out);
            }
            Output::Lines { printer, partial } => {
                let mut partial = partial.lock().unwrap_or_else(|e| e.into_inner());
                partial.push_str(text);
                while let Some(end) = partial.find('\n') {
                    let line: String = partial.drain(..=end).collect();
                    let line = line.trim_end_matches('\n');
                    let shown = if reply {
                        self.reply.line(line)
                    } else {
                        Some(line.to_string())
                    };
                    if let Some(shown) = shown {
                        let _ = printer.send(shown);
                    }
                }
                // A long paragraph is printed as it streams, wrapped at the terminal's width.
                let width = crate::tool_progress::terminal_width();
                while partial.chars().count() > width {
                    let cut = partial
                        .char_indices()
                        .nth(width)
                        .map_or(partial.len(), |(i, _)| i);
                    let at = partial[..cut].rfind(' ').filter(|&i| i > 0).unwrap_or(cut);
                    let line: String = partial.drain(..at).collect();
                    let rest = partial.trim_start_matches(' ').to_string();
                    *partial = rest;
                    let _ = printer.send(line);
                }
            }
        }
        if let Some(last) = text.chars().last() {
            self.at_line_start = last == '\n';
        }
    }

    fn line(&mut self, text: &str) {
        self.close_call();
        if !self.at_line_start {
            self.out("\n");
        }
        self.out(&format!("{text}\n"));
    }

    fn close_call(&mut self) {
        if self.open_call.take().is_some() {
            self.out("\n");
        }
    }

    fn summary_of(&self, id: &str, name: &str) -> String {
        self.calls
            .iter()
            .find(|(call, ..)| call == id)
            .map(|(_, summary, ..)| summary.clone())
            .unwrap_or_else(|| tool_label(name))
    }

    /// Redraws in place the running call's line (a spinner, the time it has run and the last
    /// line of its output) and one line per running subagent, about ten times a second, on a
    /// terminal only.
    pub fn tick(&mut self) {
        if !self.live || (self.open_call.is_none() && !self.at_line_start) {
            return;
        }
        let style = self.style;
        let width = crate::tool_progress::terminal_size().map_or(80, |(cols, _)| cols as usize);
        let mut lines = Vec::new();
        if self.open_call.is_some()
            && let Some(running) = &mut self.running
        {
            lines.push(running.line(style, width));
            running.drawn = true;
        }
        lines.extend(self.children.lines(style, width));
        if lines.is_empty() {
            return;
        }
        // Back to where the drawing began: the open call's line, or a fresh line.
        let mut text = "\r".to_string();
        if self.live_lines > 1 {
            text.push_str(&format!("\x1b[{}A", self.live_lines - 1));
        }
        text.push_str("\x1b[J");
        text.push_str(&lines.join("\n"));
        self.live_lines = lines.len();
        self.write_raw(&text);
    }

    /// Shows lines of the client's own as they are (already styled).
    pub fn lines(&mut self, lines: &[String]) {
        for line in lines {
            self.line(line);
        }
    }

    /// The view's styling.
    pub fn style(&self) -> Style {
        self.style
    }

    /// Shows a note of the client's own, dimmed.
    pub fn note(&mut self, text: &str) {
        let text = self.style.dim(text);
        self.line(&text);
    }
}

impl View for HumanView {
    fn event(&mut self, event: &SessionEvent, _replay: bool) -> Flow {
        self.show(event);
        Flow::Go
    }

    fn tick(&mut self) {
        HumanView::tick(self);
    }
}
