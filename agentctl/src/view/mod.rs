//! How events look to a person: text as it streams, one line per tool call (redrawn in place
//! while it runs, on a terminal), a summary at the end. One function per event kind is in
//! [`events`]; the JSON view is `crate::json`.

use std::io::IsTerminal;

use agentctl::client::{Flow, View};
use protocol::{SessionEvent, TokenUsage};

use crate::screen::{Live, SharedLive};
pub use crate::style::{Style, set_color_choice};
use crate::tool_progress::{Running, terminal_width};
pub use tools::{tool_label, tool_summary};

mod children;
mod events;
pub mod far;
mod open_line;
mod plan;
mod tools;

/// Where the human view writes.
pub enum Output {
    /// Text as it comes, to standard output (not a terminal).
    Stdout,
    /// Text as it comes, to standard error: standard output is kept for the answer.
    Stderr,
    /// A terminal: finished lines scroll up once, the open line and what is under way are
    /// redrawn in the bottom region.
    Screen(SharedLive),
}

/// The human view of a session's events.
pub struct HumanView {
    style: Style,
    output: Output,
    /// The id of the tool call whose line is open (printed without its result yet).
    open_call: Option<String>,
    /// The open call's progress, drawn in the bottom region on a terminal.
    running: Option<Running>,
    /// The reply's text, rendered as markdown line by line when colors are on.
    reply: crate::reply_text::ReplyText,
    /// On a terminal: the unfinished line, raw, and whether it is reply text.
    open: String,
    open_reply: bool,
    /// On a stream: the bytes of the reply's open line so far (rendered once it ends).
    open_bytes: usize,
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
    /// Whether rows of what is under way are drawn now.
    has_activity: bool,
    /// With [`Output::Stderr`]: the run's last reply, written to standard output when it ends.
    answer: Option<String>,
    /// Whether permission requests are answered here with one key (`run` on a terminal): the
    /// question is drawn under what is under way while one waits.
    pub ask_here: bool,
    /// Permission requests waiting now.
    asks: Vec<(Option<protocol::SessionId>, protocol::PermissionRequestId)>,
    /// The model's plan.
    plan: plan::Plan,
    /// A plan its `todo` call set, shown once the call's result is (the call's line first).
    held_plan: Option<Vec<protocol::PlanItem>>,
}

impl HumanView {
    /// A view with `style` for standard output: drawn live on a terminal, plain otherwise.
    pub fn new(style: Style) -> Self {
        let output = if std::io::stdout().is_terminal() {
            Output::Screen(Live::shared())
        } else {
            Output::Stdout
        };
        Self::with_output(style, output)
    }

    /// A view with `style` writing to `output`.
    pub fn with_output(style: Style, output: Output) -> Self {
        let answer = matches!(output, Output::Stderr).then(String::new);
        HumanView {
            style,
            output,
            open_call: None,
            running: None,
            reply: crate::reply_text::ReplyText::new(style.colored()),
            open: String::new(),
            open_reply: false,
            open_bytes: 0,
            at_line_start: true,
            streamed: false,
            calls: Vec::new(),
            turns: Vec::new(),
            cost: None,
            echo_user: true,
            children: children::Children::default(),
            children_cost: 0,
            has_activity: false,
            answer,
            ask_here: false,
            asks: Vec::new(),
            plan: plan::Plan::default(),
            held_plan: None,
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
        match &self.output {
            Output::Screen(_) if self.open_reply && !self.open.is_empty() => {
                self.write("\n", true);
            }
            Output::Screen(_) => {}
            _ if self.reply.is_open() => {
                let out = self.reply.finish(terminal_width());
                self.write_stream(&out);
                self.at_line_start = true;
            }
            _ => {}
        }
    }

    /// The reply is complete: a code block it left open does not run into the next one.
    fn end_reply(&mut self) {
        self.finish_reply();
        self.reply.reset();
    }

    /// Writes to the stream of a view that is not drawn live.
    fn write_stream(&mut self, text: &str) {
        match self.output {
            Output::Stderr => {
                use std::io::Write;
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
            }
            _ => crate::stdout::write(text),
        }
    }

    fn write(&mut self, text: &str, reply: bool) {
        if let Output::Screen(live) = &self.output {
            let live = live.clone();
            self.write_screen(&live, text, reply);
        } else {
            if !reply && self.reply.is_open() {
                // Other output ends the reply's open line; that line's own newline is written.
                self.finish_reply();
                if text == "\n" {
                    return;
                }
            }
            let out = if reply {
                self.reply.push(text, terminal_width())
            } else {
                text.to_string()
            };
            self.write_stream(&out);
        }
        if let Some(last) = text.chars().last() {
            self.at_line_start = last == '\n';
        }
        if reply && !matches!(self.output, Output::Screen(_)) {
            self.bound_stream_line(text);
        }
    }

    /// On a stream: the reply's open line is kept until it ends, to be rendered; one longer
    /// than `OPEN_LINE_BYTES` is ended there (it is shown already).
    fn bound_stream_line(&mut self, text: &str) {
        self.open_bytes = match text.rfind('\n') {
            _ if !self.reply.is_open() => 0,
            Some(end) => text.len() - end - 1,
            None => self.open_bytes.saturating_add(text.len()),
        };
        if self.open_bytes > open_line::OPEN_LINE_BYTES {
            let out = self.reply.push("\n", terminal_width());
            self.write_stream(&out);
            self.open_bytes = 0;
            self.at_line_start = true;
        }
    }

    /// On a terminal: whole lines go up (reply lines rendered as markdown), the rest is the
    /// open line in the region.
    fn write_screen(&mut self, live: &SharedLive, text: &str, reply: bool) {
        let mut live = Live::lock(live);
        if !reply && self.open_reply && !self.open.is_empty() {
            // Other output ends the reply's open line.
            let line = std::mem::take(&mut self.open);
            if let Some(shown) = self.reply.line(&line) {
                live.line(shown);
            }
            if text == "\n" {
                live.set_partial("");
                live.draw();
                return;
            }
        }
        if self.open.is_empty() {
            self.open_reply = reply;
        }
        self.open.push_str(text);
        // Whole lines go up, and so does a line too long to keep open.
        for line in open_line::take_lines(&mut self.open) {
            let shown = if self.open_reply {
                self.reply.line(&line)
            } else {
                Some(line)
            };
            if let Some(shown) = shown {
                live.line(shown);
            }
            self.open_reply = reply;
        }
        live.set_partial(&self.open);
        live.draw();
    }

    fn line(&mut self, text: &str) {
        self.close_call();
        if !self.at_line_start {
            self.out("\n");
        }
        self.out(&format!("{text}\n"));
    }

    /// Other output comes while a call's line is open: on a stream that line ends here (its
    /// result follows on its own line); on a terminal the call stays in the region.
    fn close_call(&mut self) {
        if !matches!(self.output, Output::Screen(_)) && self.open_call.take().is_some() {
            self.out("\n");
        }
    }

    /// A new call comes while one is open: the open one's line goes up as it is (its result
    /// follows on its own line).
    fn end_open_call(&mut self) {
        if !matches!(self.output, Output::Screen(_)) {
            return self.close_call();
        }
        if self.open_call.take().is_some()
            && let Some(running) = self.running.take()
        {
            let line = format!("{} {}\n", self.style.dim("●"), running.summary);
            self.out(&line);
            self.tick();
        }
    }

    fn summary_of(&self, id: &str, name: &str) -> String {
        self.calls
            .iter()
            .find(|(call, ..)| call == id)
            .map(|(_, summary, ..)| summary.clone())
            .unwrap_or_else(|| far::line(&tool_label(name)))
    }

    /// Draws in the region the running call's line (a spinner, the time it has run and the
    /// last line of its output) and one line per running subagent; called about ten times a
    /// second, and on a terminal only.
    pub fn tick(&mut self) {
        let Output::Screen(live) = &self.output else {
            return;
        };
        let style = self.style;
        let width = crate::tool_progress::terminal_size().map_or(80, |(cols, _)| cols as usize);
        // The plan first: it stays while calls come and go under it.
        let mut rows = self.plan.rows(style, width);
        if self.open_call.is_some()
            && let Some(running) = &self.running
        {
            rows.push(running.line(style, width));
        }
        rows.extend(self.children.lines(style, width));
        if self.ask_here && !self.asks.is_empty() {
            rows.push(style.yellow("allow? [y]es / [n]o / [a]lways: "));
        }
        let mut live = Live::lock(live);
        if rows.is_empty() && !self.has_activity && !live.resized() {
            return;
        }
        self.has_activity = !rows.is_empty();
        live.set_activity(rows);
        live.draw();
    }

    /// Takes the region away (the view ends): what it showed stays, the cursor comes back.
    pub fn close(&mut self) {
        if let Output::Screen(live) = &self.output {
            let mut live = Live::lock(live);
            // A plan with steps left stays on screen.
            for line in self.plan.close(self.style) {
                live.line(line);
            }
            live.close();
        }
    }

    /// The plan changed: on a terminal the region shows it (and the finished plan goes up
    /// once); a stream prints it. While the `todo` call that set it waits for its result, the
    /// plan waits too, so that it reads after the call's line.
    fn plan_updated(&mut self, items: &[protocol::PlanItem]) {
        let open_todo = self.open_call.as_ref().is_some_and(|open| {
            self.calls
                .iter()
                .any(|(id, _, name, _)| id == open && name == "todo")
        });
        if open_todo {
            self.held_plan = Some(items.to_vec());
            return;
        }
        self.show_plan(items);
    }

    /// Shows the plan a `todo` call set, once its result is shown.
    fn release_plan(&mut self) {
        if let Some(items) = self.held_plan.take() {
            self.show_plan(&items);
        }
    }

    /// Shows `items` as the plan now.
    fn show_plan(&mut self, items: &[protocol::PlanItem]) {
        let screen = matches!(self.output, Output::Screen(_));
        for line in self.plan.update(items, screen, self.style) {
            self.line(&line);
        }
        self.tick();
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

    /// Shows a note of the client's own, dimmed. What it quotes of the far end (an error, a
    /// name) is shown, not obeyed.
    pub fn note(&mut self, text: &str) {
        let text = self.style.dim(&crate::style::printable(text));
        self.line(&text);
    }
}

impl Drop for HumanView {
    fn drop(&mut self) {
        self.close();
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

    fn note(&mut self, text: &str) {
        HumanView::note(self, text);
    }
}
