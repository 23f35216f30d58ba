//! A session's board summary (docs/architecture.md#the-board), folded from its events as they
//! are emitted or replayed: what its run does now, its turn, tokens and cost, and the
//! permission requests that wait for a person.

use protocol::{
    Activity, Event, PendingSummary, RunEnd, RunSummary, SessionInfo, SessionSummary, summary_text,
};

/// What the events so far say about the session's run.
#[derive(Debug, Default)]
pub(crate) struct SummaryTracker {
    activity: Option<Activity>,
    since_ms: u64,
    run: Option<RunSummary>,
    pending: Vec<PendingSummary>,
    /// Tool calls going: (id, activity), the newest last.
    tools: Vec<(String, Activity)>,
    /// How far the model's plan got.
    plan: Option<protocol::PlanCount>,
    /// Background shells running, by number.
    shells: std::collections::BTreeSet<u32>,
}

impl SummaryTracker {
    /// Takes in one event that happened at `time_ms`.
    pub(crate) fn apply(&mut self, event: &Event, time_ms: u64) {
        match event {
            Event::RunStarted { run, .. } => {
                self.run = Some(RunSummary {
                    run: *run,
                    started_ms: time_ms,
                    turn: 0,
                    usage: Default::default(),
                    cost_micros: None,
                    end: None,
                });
                self.tools.clear();
                self.pending.clear();
                self.set(Activity::Thinking, time_ms);
            }
            Event::RunResumed { .. } => {
                if let Some(run) = &mut self.run {
                    run.end = None;
                }
                self.tools.clear();
                self.set(Activity::Thinking, time_ms);
            }
            Event::TurnStarted { turn } => {
                if let Some(run) = &mut self.run {
                    run.turn = *turn;
                }
                self.tools.clear();
                self.set(Activity::Thinking, time_ms);
            }
            Event::ToolCall(call) => {
                let activity = Activity::Tool {
                    name: summary_text(&call.name),
                    detail: detail(&call.args),
                };
                self.tools.push((call.id.clone(), activity.clone()));
                self.set(activity, time_ms);
            }
            Event::ToolResult { id, .. } => {
                self.tools.retain(|(call, _)| call != id);
                let next = self
                    .tools
                    .last()
                    .map_or(Activity::Thinking, |(_, a)| a.clone());
                self.set(next, time_ms);
            }
            Event::PlanUpdated { items } => self.plan = protocol::PlanCount::of(items),
            Event::ShellStarted { shell, .. } => {
                self.shells.insert(*shell);
            }
            Event::ShellEnded { shell, .. } => {
                self.shells.remove(shell);
            }
            Event::Retrying { attempt, .. } => {
                self.set(Activity::Retrying { attempt: *attempt }, time_ms)
            }
            Event::Usage {
                cumulative,
                cost_micros,
                ..
            } => {
                if let Some(run) = &mut self.run {
                    run.usage = *cumulative;
                    run.cost_micros = *cost_micros;
                }
            }
            Event::PermissionRequested {
                session,
                request,
                tool,
                summary,
                ..
            } => self.pending.push(PendingSummary {
                session: session.clone(),
                request: *request,
                tool: summary_text(tool),
                summary: summary_text(summary),
                since_ms: time_ms,
            }),
            Event::PermissionResolved {
                session, request, ..
            } => self
                .pending
                .retain(|p| !(p.session == *session && p.request == *request)),
            Event::RunFinished {
                stop_reason,
                usage,
                error,
                turns,
                ..
            } => {
                if let Some(run) = &mut self.run {
                    run.usage = *usage;
                    run.turn = run.turn.max(*turns);
                    run.end = Some(RunEnd {
                        stop_reason: *stop_reason,
                        error: error.as_deref().map(summary_text),
                        finished_ms: time_ms,
                    });
                }
                self.tools.clear();
                self.pending.clear();
                self.set(Activity::Idle, time_ms);
            }
            _ => {}
        }
    }

    /// The run that ended last, if the last run has ended.
    pub(crate) fn finished_run(&self) -> Option<RunSummary> {
        self.run.clone().filter(|run| run.end.is_some())
    }

    /// The summary of the session listed as `info`.
    pub(crate) fn summary(&self, info: SessionInfo) -> SessionSummary {
        SessionSummary {
            activity_since_ms: self.since_ms.max(info.created_ms),
            activity: self.activity.clone().unwrap_or(Activity::Idle),
            run: self.run.clone(),
            pending: self.pending.clone(),
            plan: self.plan,
            shells: u32::try_from(self.shells.len()).unwrap_or(u32::MAX),
            info,
        }
    }

    fn set(&mut self, activity: Activity, time_ms: u64) {
        if self.activity.as_ref() != Some(&activity) {
            self.activity = Some(activity);
            self.since_ms = time_ms;
        }
    }
}

/// What a call works on, from its arguments: the command, the path, the pattern.
fn detail(args: &str) -> String {
    const KEYS: [&str; 8] = [
        "command",
        "path",
        "file_path",
        "pattern",
        "url",
        "query",
        "description",
        "prompt",
    ];
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str(args) else {
        return String::new();
    };
    KEYS.iter()
        .find_map(|key| map.get(*key).and_then(|v| v.as_str()))
        .map(summary_text)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
