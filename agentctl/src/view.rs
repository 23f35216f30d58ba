//! How events look: the human view (text as it streams, one line per tool call, a summary at
//! the end) and the JSON view (one object per line with stable field names). Both consume the
//! same event stream.

use std::io::{IsTerminal, Write};

use protocol::{Event, SessionEvent, StopReason, TokenUsage};
use serde_json::Value;

use crate::format::{dollars, thousands, usage_line};
use crate::running::{Running, terminal_width};
pub use crate::style::{ColorChoice, Style, set_color_choice};

/// One line describing a tool call: `read README.md`, `bash cargo test`.
/// How a tool's name is shown: `server/tool` for a tool of an MCP server (named
/// `mcp__<server>__<tool>` for the model), the name itself otherwise.
pub fn tool_label(name: &str) -> String {
    match name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    {
        Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
            format!("{server}/{tool}")
        }
        _ => name.to_string(),
    }
}

pub fn tool_summary(name: &str, args: &str) -> String {
    let value: Value = serde_json::from_str(args).unwrap_or(Value::Null);
    let field = |key: &str| value[key].as_str().unwrap_or_default().to_string();
    let detail = match name {
        "read" | "write" | "edit" => field("path"),
        "bash" => {
            let command = field("command");
            let first = command.lines().next().unwrap_or_default().to_string();
            if command.lines().count() > 1 {
                format!("{first} …")
            } else {
                first
            }
        }
        "grep" => {
            let path = field("path");
            if path.is_empty() {
                field("pattern")
            } else {
                format!("{} in {path}", field("pattern"))
            }
        }
        "glob" => field("pattern"),
        _ => args.to_string(),
    };
    let name = tool_label(name);
    let detail: String = if detail.chars().count() > 100 {
        detail.chars().take(100).collect::<String>() + "…"
    } else {
        detail
    };
    crate::style::one_line(format!("{name} {detail}").trim_end()).into_owned()
}

fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

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

    fn write_raw(&mut self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }

    fn write(&mut self, text: &str, reply: bool) {
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
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(out.as_bytes());
                let _ = stdout.flush();
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
                let width = crate::running::terminal_width();
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

    /// Redraws the running call's line in place: a spinner, the time it has run and the last
    /// line of its output (about ten times a second, on a terminal only).
    pub fn tick(&mut self) {
        if !self.live || self.open_call.is_none() {
            return;
        }
        let style = self.style;
        let Some(running) = &mut self.running else {
            return;
        };
        let width = crate::running::terminal_size().map_or(80, |(cols, _)| cols as usize);
        let line = running.line(style, width);
        running.drawn = true;
        self.out(&format!("\r\x1b[K{line}"));
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

    /// Shows one event.
    pub fn show(&mut self, event: &SessionEvent) {
        let style = self.style;
        match &event.event {
            Event::RunStarted { .. } => {
                self.turns.clear();
                self.cost = None;
            }
            Event::Usage {
                turn, cost_micros, ..
            } => {
                self.turns.push(*turn);
                self.cost = *cost_micros;
            }
            Event::QueueChanged { .. } => {}
            Event::UserMessage { text, delivery } => {
                if self.echo_user {
                    let label = match delivery {
                        protocol::Delivery::Steer => "steer",
                        protocol::Delivery::FollowUp => "you",
                    };
                    self.line(&style.bold(&format!("{label} › {text}")));
                }
                self.echo_user = true;
            }
            Event::TurnStarted { .. } => self.streamed = false,
            Event::TextDelta { text } => {
                self.close_call();
                self.streamed = true;
                self.reply_text(text);
            }
            Event::ThinkingDelta { text } => {
                self.close_call();
                self.streamed = true;
                let text = style.dim(text);
                self.out(&text);
            }
            Event::AssistantMessage { text, .. } => {
                if !self.streamed && !text.is_empty() {
                    self.close_call();
                    self.reply_text(text);
                }
                if !self.at_line_start {
                    self.reply_text("\n");
                }
                self.end_reply();
                self.streamed = false;
            }
            Event::ToolCall(call) => {
                let summary = tool_summary(&call.name, &call.args);
                self.calls.push((
                    call.id.clone(),
                    summary.clone(),
                    call.name.clone(),
                    call.args.clone(),
                ));
                self.close_call();
                if !self.at_line_start {
                    self.out("\n");
                }
                self.out(&format!("{} {summary}", style.dim("●")));
                if matches!(self.output, Output::Lines { .. }) {
                    // A line editor shows whole lines only: the call line goes out now.
                    self.out("\n");
                } else {
                    self.open_call = Some(call.id.clone());
                    self.running = Some(Running::new(&summary));
                }
            }
            Event::ToolOutput { id, text, .. } => {
                if let Some(running) = &mut self.running
                    && self.open_call.as_deref() == Some(id.as_str())
                {
                    running.seen(text);
                }
            }
            Event::ToolResult {
                id,
                name,
                is_error,
                output,
                duration_ms,
            } => {
                let mark = if *is_error {
                    style.red("✗")
                } else {
                    style.green("✓")
                };
                let took = style.dim(&duration(*duration_ms));
                if self.open_call.as_deref() == Some(id.as_str()) {
                    self.open_call = None;
                    if let Some(running) = self.running.take()
                        && running.drawn
                    {
                        // The progress drawn in place gives way to the call's line.
                        self.out(&format!("\r\x1b[K{} {}", style.dim("●"), running.summary));
                    }
                    self.out(&format!(" {mark} {took}\n"));
                } else {
                    let summary = self.summary_of(id, name);
                    self.line(&format!("{mark} {summary} {took}"));
                }
                if *is_error {
                    let first = output
                        .lines()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or_default();
                    self.line(&style.dim(&format!("  {first}")));
                } else if name == "edit" || name == "write" {
                    let args = self
                        .calls
                        .iter()
                        .find(|(call, ..)| call == id)
                        .map(|(.., args)| args.as_str())
                        .unwrap_or("{}");
                    for line in crate::patch::tool_change(name, args, output, style) {
                        self.line(&line);
                    }
                }
            }
            Event::PermissionRequested {
                request, summary, ..
            } => {
                let summary = crate::style::one_line(summary);
                self.line(&style.yellow(&format!("? permission needed ({request}): {summary}")));
            }
            Event::PermissionResolved {
                request,
                decision,
                by_client,
            } => {
                let by_client = crate::style::one_line(by_client);
                self.line(&style.dim(&format!(
                    "  permission {request}: {decision} by {by_client}"
                )));
            }
            Event::Retrying {
                attempt,
                wait_ms,
                reason,
            } => {
                let reason = crate::style::printable(reason);
                self.line(&style.yellow(&format!(
                    "↻ retry {attempt} in {}: {reason}",
                    duration(*wait_ms)
                )));
            }
            Event::Compacted {
                before_tokens,
                after_tokens,
            } => {
                self.line(&style.dim(&format!(
                    "… history compacted: {} → {} tokens",
                    thousands(*before_tokens),
                    thousands(*after_tokens)
                )));
            }
            Event::Health { kind, detail } => {
                let detail = crate::style::printable(detail);
                self.line(&style.yellow(&format!("⚠ {kind}: {detail}")));
            }
            Event::Notice { text } => {
                let text = crate::style::printable(text);
                self.line(&style.dim(&format!("• {text}")));
            }
            Event::FileChanged { path } => {
                let path = crate::style::one_line(path);
                self.line(&style.dim(&format!("• {path} changed on disk")))
            }
            Event::ModeChanged { mode } => self.line(&style.dim(&format!("• mode: {mode}"))),
            Event::Rewound {
                run,
                restored,
                removed,
                kept,
            } => {
                let mut text = format!(
                    "• rewound to before run {run}: {} restored, {} removed",
                    restored.len(),
                    removed.len()
                );
                if !kept.is_empty() {
                    text.push_str(&format!(", {} kept (changed outside)", kept.len()));
                }
                self.line(&style.yellow(&text));
            }
            Event::RunFinished {
                stop_reason,
                turns,
                truncated,
                usage,
                error,
                returned_messages,
                ..
            } => {
                if *truncated {
                    self.line(&style.yellow("(the last reply was cut off at the output limit)"));
                }
                if let Some(error) = error {
                    let error = crate::style::printable(error);
                    self.line(&style.red(&format!("✗ {error}")));
                }
                if !returned_messages.is_empty() {
                    self.line(&style.dim(&format!(
                        "{} queued message(s) were not sent:",
                        returned_messages.len()
                    )));
                    for message in returned_messages {
                        self.line(&style.dim(&format!("  {}", message.text)));
                    }
                }
                if self.turns.len() > 1 {
                    let per_turn: Vec<String> = self
                        .turns
                        .iter()
                        .enumerate()
                        .map(|(i, u)| {
                            format!(
                                "{}: {} in/{} out",
                                i + 1,
                                thousands(u.total_input()),
                                thousands(u.output)
                            )
                        })
                        .collect();
                    self.line(&style.dim(&format!("  tokens per turn — {}", per_turn.join(" · "))));
                }
                let verdict = match stop_reason {
                    StopReason::Completed => style.green("completed"),
                    StopReason::Aborted => style.yellow("cancelled"),
                    StopReason::MaxTurns => style.yellow("stopped at the turn limit"),
                    StopReason::Health => style.red("stopped by the health guard"),
                    StopReason::Error => style.red("failed"),
                };
                let cost = self
                    .cost
                    .map(|c| format!(" · {}", dollars(c)))
                    .unwrap_or_default();
                self.line(&style.dim(&format!(
                    "— {verdict} · {} turn{} · {}{cost}",
                    turns,
                    if *turns == 1 { "" } else { "s" },
                    usage_line(usage)
                )));
            }
            Event::Error { message } => {
                let message = crate::style::printable(message);
                self.line(&style.red(&format!("error: {message}")));
            }
            Event::SessionDeleted => self.line(&style.dim("• the session was deleted")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_are_summarised_by_their_main_argument() {
        assert_eq!(
            tool_summary("read", r#"{"path":"README.md"}"#),
            "read README.md"
        );
        assert_eq!(
            tool_summary("bash", r#"{"command":"cargo test\necho"}"#),
            "bash cargo test …"
        );
        assert_eq!(
            tool_summary("grep", r#"{"pattern":"fn main","path":"src"}"#),
            "grep fn main in src"
        );
    }
}
