//! The human view of each kind of event: one small function per kind.

use protocol::{
    Decision, Delivery, Event, ImageRef, PermissionRequestId, ResumeReason, RunId, SessionEvent,
    StopReason, TokenUsage, ToolCallInfo,
};

use super::tools::{duration, tool_summary};

/// A tool's result as the view shows it.
struct ToolResultShown<'a> {
    /// The call it answers.
    id: &'a str,
    /// The tool.
    name: &'a str,
    /// Whether the tool failed.
    is_error: bool,
    /// What it returned.
    output: &'a str,
    /// How long it took.
    ms: u64,
    /// The images it returned.
    images: &'a [ImageRef],
}
use super::{HumanView, Output};
use crate::format::{dollars, thousands, usage_line};
use crate::style::{one_line, printable};
use crate::tool_progress::Running;

/// How many lines of a failed call's output are shown (its end, where errors usually are).
const FAILURE_LINES: usize = 12;

/// The lines of a failed call's output worth showing: all of a short output. Of a long one,
/// a command's last lines (where its error is) after a line saying how many are above; any
/// other tool's first line (why it failed) and its last lines. Tabs become spaces.
fn failure_lines(name: &str, output: &str) -> Vec<String> {
    let lines: Vec<String> = output
        .trim_matches('\n')
        .lines()
        .map(|l| one_line(&l.trim_end().replace('\t', "  ")).into_owned())
        .collect();
    if lines.len() <= FAILURE_LINES {
        return lines;
    }
    let mut shown = Vec::new();
    let head = usize::from(name != "bash");
    shown.extend(lines.iter().take(head).cloned());
    let tail = FAILURE_LINES - head;
    let left_out = lines.len() - head - tail;
    shown.push(format!(
        "… {} above",
        crate::format::count(left_out as u64, "line")
    ));
    shown.extend(lines[lines.len() - tail..].iter().cloned());
    shown
}

impl HumanView {
    /// Shows one event.
    pub fn show(&mut self, event: &SessionEvent) {
        let style = self.style;
        match &event.event {
            Event::RunStarted { .. } => {
                if let Some(answer) = &mut self.answer {
                    answer.clear();
                }
                self.turns.clear();
                self.cost = None;
                self.children_cost = 0;
            }
            Event::Usage {
                turn, cost_micros, ..
            } => {
                self.turns.push(*turn);
                self.cost = *cost_micros;
            }
            Event::QueueChanged { .. } => {}
            Event::UserMessage {
                text,
                delivery,
                images,
                ..
            } => self.user_message(text, *delivery, images),
            Event::TurnStarted { .. } => self.streamed = false,
            Event::TextDelta { text } => {
                self.close_call();
                self.streamed = true;
                self.reply_text(text);
            }
            Event::ThinkingDelta { text } => {
                self.close_call();
                self.streamed = true;
                self.out(&style.dim(&printable(text)));
            }
            Event::AssistantMessage { text, .. } => self.assistant_message(text),
            Event::ToolCall(call) => self.tool_call(call),
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
                images,
                ..
            } => {
                let result = ToolResultShown {
                    id,
                    name,
                    is_error: *is_error,
                    output,
                    ms: *duration_ms,
                    images,
                };
                self.tool_result(result);
                self.release_plan();
            }
            Event::PermissionRequested {
                session,
                request,
                summary,
                ..
            } => {
                let summary = one_line(summary);
                let whose = session
                    .as_ref()
                    .map(|s| format!(" by subagent {}", super::far::id(s)))
                    .unwrap_or_default();
                self.line(&style.yellow(&format!(
                    "? permission needed{whose} ({request}): {summary}"
                )));
                self.asks.push((session.clone(), *request));
                self.tick();
            }
            Event::PermissionResolved {
                session,
                request,
                decision,
                by_client,
            } => {
                self.asks
                    .retain(|asked| asked != &(session.clone(), *request));
                self.permission_resolved(*request, *decision, by_client);
                self.tick();
            }
            Event::SubagentStarted {
                child,
                description,
                agent,
                background,
                ..
            } => {
                let line = self
                    .children
                    .started(style, child, description, agent, *background);
                self.line(&line);
            }
            Event::HookRan {
                event,
                command,
                exit,
                duration_ms,
                decision,
            } => {
                let exit = exit.map_or_else(|| "killed".to_string(), |c| format!("exit {c}"));
                let decision = decision
                    .as_ref()
                    .map(|d| format!(": {}", one_line(d)))
                    .unwrap_or_default();
                let command: String = one_line(command).chars().take(60).collect();
                let text = format!(
                    "↪ hook {event} `{command}` {exit} ({}){decision}",
                    duration(*duration_ms)
                );
                self.line(&style.dim(&text));
            }
            Event::SubagentActivity { child, activity } => self.children.activity(child, activity),
            Event::SubagentFinished {
                child,
                stop_reason,
                turns,
                usage,
                cost_micros,
                duration_ms,
            } => {
                self.children_cost += cost_micros.unwrap_or(0);
                let line =
                    self.children
                        .finished(style, child, *stop_reason, *turns, usage, *duration_ms);
                self.line(&line);
            }
            Event::Retrying {
                attempt,
                wait_ms,
                reason,
            } => {
                let wait = duration(*wait_ms);
                let text = format!("↻ retry {attempt} in {wait}: {}", printable(reason));
                self.line(&style.yellow(&text));
            }
            Event::Compacted {
                before_tokens,
                after_tokens,
            } => {
                let (before, after) = (thousands(*before_tokens), thousands(*after_tokens));
                let text = format!("… history compacted: {before} → {after} tokens");
                self.line(&style.dim(&text));
            }
            Event::Health { kind, detail } => {
                let text = format!("⚠ {kind}: {}", printable(detail));
                self.line(&style.yellow(&text));
            }
            Event::Notice { text } => self.line(&style.dim(&format!("• {}", printable(text)))),
            Event::FileChanged { path } => {
                let text = format!("• {} changed on disk", one_line(path));
                self.line(&style.dim(&text));
            }
            Event::ModeChanged { mode } => self.line(&style.dim(&format!("• mode: {mode}"))),
            Event::ModelChanged { model } => {
                self.line(&style.dim(&format!("• model: {}", one_line(model))))
            }
            Event::Rewound {
                run,
                restored,
                removed,
                kept,
            } => self.rewound(*run, restored.len(), removed.len(), kept.len()),
            Event::RunFinished { .. } => {
                self.release_plan();
                self.asks.clear();
                self.run_finished(&event.event);
                self.tick();
            }
            Event::Error { message } => {
                let text = format!("error: {}", printable(message));
                self.line(&style.red(&text));
            }
            Event::SessionDeleted => self.line(&style.dim("• the session was deleted")),
            Event::PlanUpdated { items } => self.plan_updated(items),
            Event::ShellStarted { shell, command } => self.line(&style.dim(&format!(
                "• shell {shell} started in the background: {}",
                one_line(command)
            ))),
            Event::ShellEnded { shell, end } => {
                self.line(&style.dim(&format!("• shell {shell} {end}")))
            }
            Event::RunResumed { run, reason } => {
                let why = match reason {
                    ResumeReason::Crash => "the daemon stopped",
                    ResumeReason::Restart => "the daemon restarted",
                };
                self.line(&style.yellow(&format!("↻ run {run} goes on: {why} while it ran")));
            }
        }
    }

    fn user_message(&mut self, text: &str, delivery: Delivery, images: &[ImageRef]) {
        if self.echo_user {
            let label = match delivery {
                Delivery::Steer => "steer",
                Delivery::FollowUp => "you",
            };
            // Attached files show as their paths, not their text.
            let (typed, attached) = crate::mentions::collapse(text);
            let line = self.style.bold(&format!("{label} › {}", printable(typed)));
            self.line(&line);
            for path in attached {
                let note = format!("  + {}", one_line(&path));
                self.line(&self.style.dim(&note));
            }
        }
        // The images show also under a prompt not echoed: as the daemon stored them (scaled).
        for image in images {
            let note = format!("  {}", one_line(&image.label()));
            self.line(&self.style.dim(&note));
        }
        self.echo_user = true;
    }

    fn assistant_message(&mut self, text: &str) {
        if let Some(answer) = &mut self.answer {
            answer.clear();
            answer.push_str(text);
        }
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

    fn tool_call(&mut self, call: &ToolCallInfo) {
        let summary = tool_summary(&call.name, &call.args);
        self.calls.push((
            call.id.clone(),
            summary.clone(),
            call.name.clone(),
            call.args.clone(),
        ));
        self.end_open_call();
        if !self.at_line_start {
            self.out("\n");
        }
        self.open_call = Some(call.id.clone());
        self.running = Some(Running::new(&summary));
        if matches!(self.output, Output::Screen(_)) {
            // The call's line is drawn in the region until its result comes.
            self.tick();
        } else {
            let dot = self.style.dim("●");
            self.out(&format!("{dot} {summary}"));
        }
    }

    fn tool_result(&mut self, result: ToolResultShown<'_>) {
        let ToolResultShown {
            id,
            name,
            is_error,
            output,
            ms,
            images,
        } = result;
        let style = self.style;
        let mark = if is_error {
            style.red("✗")
        } else {
            style.green("✓")
        };
        // The images a tool returned (`read` of one) are named on its result line.
        let labels: String = images
            .iter()
            .map(|image| format!(" {}", one_line(&image.label())))
            .collect();
        let took = style.dim(&format!("{}{labels}", duration(ms)));
        if self.open_call.as_deref() == Some(id) {
            self.open_call = None;
            let running = self.running.take();
            if matches!(self.output, Output::Screen(_)) {
                let summary = running.map_or_else(|| self.summary_of(id, name), |r| r.summary);
                let line = format!("{} {summary} {mark} {took}\n", style.dim("●"));
                self.out(&line);
                self.tick();
            } else {
                self.out(&format!(" {mark} {took}\n"));
            }
        } else {
            let summary = self.summary_of(id, name);
            self.line(&format!("{mark} {summary} {took}"));
        }
        if is_error {
            for line in failure_lines(name, output) {
                self.line(&style.dim(&format!("  {line}")));
            }
        } else if name == "edit" || name == "write" {
            let args = self
                .calls
                .iter()
                .find(|(call, ..)| call == id)
                .map(|(.., args)| args.clone())
                .unwrap_or_else(|| "{}".to_string());
            let (change, diagnostics) = crate::diagnostics_piece::split(output);
            for line in crate::colored_diff::tool_change(name, &args, change, style) {
                self.line(&line);
            }
            for line in
                diagnostics.map_or_else(Vec::new, |d| crate::diagnostics_piece::shown(d, style))
            {
                self.line(&line);
            }
        }
    }

    fn permission_resolved(&mut self, request: PermissionRequestId, decision: Decision, by: &str) {
        let by = one_line(by);
        let text = format!("  permission {request}: {decision} by {by}");
        self.line(&self.style.dim(&text));
    }

    fn rewound(&mut self, run: RunId, restored: usize, removed: usize, kept: usize) {
        let mut text =
            format!("• rewound to before run {run}: {restored} restored, {removed} removed");
        if kept > 0 {
            text.push_str(&format!(", {kept} kept (changed outside)"));
        }
        self.line(&self.style.yellow(&text));
    }

    fn run_finished(&mut self, event: &Event) {
        let Event::RunFinished {
            stop_reason,
            turns,
            truncated,
            usage,
            error,
            returned_messages,
            nothing_changed,
            ..
        } = event
        else {
            return;
        };
        let style = self.style;
        if *truncated {
            self.line(&style.yellow("(the last reply was cut off at the output limit)"));
        }
        if let Some(error) = error {
            self.line(&style.red(&format!("✗ {}", printable(error))));
        }
        if !returned_messages.is_empty() {
            let count = returned_messages.len();
            self.line(&style.dim(&format!("{count} queued message(s) were not sent:")));
            for message in returned_messages {
                self.line(&style.dim(&format!("  {}", printable(&message.text))));
            }
        }
        if self.turns.len() > 1 {
            let per_turn = per_turn(&self.turns);
            self.line(&style.dim(&format!("  tokens per turn — {per_turn}")));
        }
        if *nothing_changed {
            self.line(
                &style.yellow("! nothing was changed: no file was changed and no command was run"),
            );
        }
        let verdict = match stop_reason {
            StopReason::Completed if *nothing_changed => {
                style.yellow("completed without changing anything")
            }
            StopReason::Completed => style.green("completed"),
            StopReason::Aborted => style.yellow("cancelled"),
            StopReason::MaxTurns => style.yellow("stopped at the turn limit"),
            StopReason::Health => style.red("stopped by the health guard"),
            StopReason::Error => style.red("failed"),
        };
        // The run's subagents count in its cost.
        let cost = crate::format::with_children_cost(self.cost, self.children_cost);
        let cost = cost
            .map(|c| format!(" · {}", dollars(c)))
            .unwrap_or_default();
        let plural = if *turns == 1 { "" } else { "s" };
        let usage = usage_line(usage);
        let text = format!("— {verdict} · {turns} turn{plural} · {usage}{cost}");
        self.line(&style.dim(&text));
        // Standard output, kept for the answer, gets the run's last reply.
        if let Some(answer) = self.answer.as_mut().map(std::mem::take)
            && !answer.is_empty()
        {
            let end = if answer.ends_with('\n') { "" } else { "\n" };
            crate::stdout::write(&format!("{answer}{end}"));
        }
    }
}

/// Tokens of each turn: `1: 1,200 in/80 out · 2: …`.
fn per_turn(turns: &[TokenUsage]) -> String {
    turns
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let (input, output) = (thousands(u.total_input()), thousands(u.output));
            format!("{}: {input} in/{output} out", i + 1)
        })
        .collect::<Vec<_>>()
        .join(" · ")
}
