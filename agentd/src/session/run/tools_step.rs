//! The step of a reply that asked for tools: the calls checked against the health monitor, run,
//! and their results handed back with what the model must be told (a repeat, a warning), or
//! the run stopped when it keeps going round in circles.

use std::sync::Arc;
use std::time::Instant;

use protocol::{Event, StopReason};

use super::{Gone, Run, RunOutcome};
use crate::conversation::{Message, ToolCall, ToolResult};
use crate::health::Report;
use crate::model_profile::ModelProfile;
use crate::tools::{self, Tool, batch};

impl Run {
    /// Shows the reply's calls to the health monitor; the signs are told to the user now and
    /// to the model with the results.
    pub(super) fn observe_calls(&mut self, calls: &[ToolCall]) -> Vec<Report> {
        let call_refs: Vec<&ToolCall> = calls.iter().collect();
        let toolset = &self.harness.toolset;
        // A tool of a configured server counts even when the server is down.
        let known = |name: &str| {
            Tool::from_name(name).is_some()
                || name == crate::subagents::TASK_TOOL
                || toolset.get(name).is_some()
                || crate::mcp::names::split(name)
                    .is_some_and(|(server, _)| toolset.servers.iter().any(|s| s.name == server))
        };
        let reports = self.guards.health.observe_reply(&call_refs, known);
        for report in &reports {
            self.emit(Event::Health {
                kind: report.kind,
                detail: report.detail.clone(),
            });
        }
        reports
    }

    /// Runs the calls and stores their results; the run's outcome when the health guard
    /// stops it.
    pub(super) async fn run_tools(
        &mut self,
        calls: &[ToolCall],
        signs: Vec<Report>,
    ) -> Result<Option<RunOutcome>, Gone> {
        self.guards.repeats.new_reply();
        let done = self.execute(calls).await?;
        let mut results = self.answered(calls, done).await;
        let mut told: Vec<String> = signs.iter().filter_map(Report::to_model).collect();
        for report in self.guards.health.observe_results(&results, Instant::now()) {
            told.extend(report.to_model());
            self.emit(Event::Health {
                kind: report.kind,
                detail: report.detail,
            });
        }
        self.guards
            .health
            .observe_unchanged(self.guards.repeats.all_unchanged());
        tell(&mut results, &told);
        self.push(Message::ToolResults { results }, None).await?;
        Ok(self
            .guards
            .health
            .stop()
            .map(|why| self.finish(StopReason::Health, false, Some(why))))
    }

    /// Lists the MCP servers' tools for the next turn (starting servers not started yet).
    pub(super) async fn refresh_tools(&mut self) {
        let had_mcp = !self.harness.toolset.tools.is_empty();
        self.harness.toolset = self
            .setup
            .place
            .mcp
            .toolset(&self.setup.place.side, self.cancel())
            .await;
        if self.harness.toolset.tools.is_empty() && !had_mcp {
            return;
        }
        let mut specs = tools::specs_for(&self.builtin_tools(), self.harness.small);
        specs.extend(self.harness.toolset.tools.iter().map(|t| {
            if self.harness.small {
                t.spec.compact()
            } else {
                t.spec.clone()
            }
        }));
        self.harness.specs = Arc::new(self.offered(specs));
    }

    /// The built-in tools this run offers: its profile's, `web_search` only when a search
    /// service is configured, `code` only when a language server covers the session's files.
    pub(super) fn builtin_tools(&self) -> Vec<Tool> {
        let searches = self.setup.place.search.is_some();
        let code = self.setup.place.code;
        builtins(self.harness.profile)
            .iter()
            .copied()
            .filter(|tool| *tool != Tool::WebSearch || searches)
            .filter(|tool| *tool != Tool::Code || code)
            .collect()
    }

    /// Whether a call of `name` may run in parallel with its neighbours: a built-in reading
    /// tool, `task` (children run in parallel), or an MCP tool its server marks read-only.
    pub(super) fn concurrency_safe(&self, name: &str) -> bool {
        batch::builtin_safe(name)
            || name == crate::subagents::TASK_TOOL
            || self.harness.toolset.get(name).is_some_and(|t| t.read_only)
    }
}

/// The built-in tools a profile offers: for a small model, reading, writing whole files and
/// running commands (which also search and list) are all it needs.
pub(super) fn builtins(profile: ModelProfile) -> &'static [Tool] {
    match profile {
        ModelProfile::Small => &[Tool::Read, Tool::Write, Tool::Bash],
        ModelProfile::Full => &Tool::ALL,
    }
}

/// Adds what the model must be told to the last result, where it reads it next.
fn tell(results: &mut [ToolResult], told: &[String]) {
    if let Some(last) = results.last_mut()
        && !told.is_empty()
    {
        last.output.push_str("\n\n");
        last.output.push_str(&told.join("\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_model_gets_reading_whole_file_writes_and_commands() {
        assert_eq!(
            builtins(ModelProfile::Small),
            &[Tool::Read, Tool::Write, Tool::Bash]
        );
        assert_eq!(builtins(ModelProfile::Full), &Tool::ALL);
    }
}
