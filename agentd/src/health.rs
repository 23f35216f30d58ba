//! The health monitor (SPEC §6): it reports runs that repeat themselves or keep failing to edit,
//! and trips the guard that stops a run whose replies ask only for tools that do not exist.

use std::time::{Duration, Instant};

use protocol::HealthKind;

use crate::conversation::{ToolCall, ToolResult};

/// Consecutive replies with identical tool calls that are reported.
pub const REPEAT_LIMIT: u32 = 5;
/// Failed edits or writes that are reported.
pub const EDIT_FAILURE_LIMIT: u32 = 3;
/// A failure older than this no longer counts.
pub const EDIT_FAILURE_WINDOW: Duration = Duration::from_secs(300);
/// Consecutive replies of only unknown tools that stop the run.
pub const UNKNOWN_TOOL_LIMIT: u32 = 3;

/// A sign worth telling the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// What kind of sign.
    pub kind: HealthKind,
    /// What was seen.
    pub detail: String,
}

/// Watches one run's replies and results.
#[derive(Debug, Default)]
pub struct HealthMonitor {
    last_calls: Option<Vec<(String, String)>>,
    repeats: u32,
    edit_failures: u32,
    last_edit_failure: Option<Instant>,
    unknown_only: u32,
}

impl HealthMonitor {
    /// A monitor for a new run.
    pub fn new() -> Self {
        Self::default()
    }

    /// Looks at a reply's tool calls.
    pub fn observe_reply(
        &mut self,
        calls: &[&ToolCall],
        known: impl Fn(&str) -> bool,
    ) -> Vec<Report> {
        let mut reports = Vec::new();
        if calls.is_empty() {
            self.last_calls = None;
            self.repeats = 0;
            self.unknown_only = 0;
            return reports;
        }
        let signature: Vec<(String, String)> = calls
            .iter()
            .map(|c| (c.name.clone(), normalized_args(&c.args)))
            .collect();
        if self.last_calls.as_ref() == Some(&signature) {
            self.repeats += 1;
        } else {
            self.repeats = 1;
            self.last_calls = Some(signature);
        }
        if self.repeats >= REPEAT_LIMIT && self.repeats.is_multiple_of(REPEAT_LIMIT) {
            let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
            reports.push(Report {
                kind: HealthKind::RepeatedCalls,
                detail: format!(
                    "the last {} replies made the same tool calls ({}) with the same arguments",
                    self.repeats,
                    names.join(", ")
                ),
            });
        }
        if calls.iter().all(|c| !known(&c.name)) {
            self.unknown_only += 1;
            let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
            reports.push(Report {
                kind: HealthKind::UnknownTools,
                detail: format!(
                    "reply {} of {UNKNOWN_TOOL_LIMIT} in a row asking only for unknown tools ({})",
                    self.unknown_only,
                    names.join(", ")
                ),
            });
        } else {
            self.unknown_only = 0;
        }
        reports
    }

    /// Looks at the results of a batch of calls, at time `now`.
    pub fn observe_results(&mut self, results: &[ToolResult], now: Instant) -> Vec<Report> {
        let mut reports = Vec::new();
        for result in results
            .iter()
            .filter(|r| r.name == "edit" || r.name == "write")
        {
            if !result.is_error {
                self.edit_failures = 0;
                continue;
            }
            if self
                .last_edit_failure
                .is_some_and(|last| now.duration_since(last) > EDIT_FAILURE_WINDOW)
            {
                self.edit_failures = 0;
            }
            self.edit_failures += 1;
            self.last_edit_failure = Some(now);
            if self.edit_failures == EDIT_FAILURE_LIMIT {
                reports.push(Report {
                    kind: HealthKind::EditFailures,
                    detail: format!(
                        "{EDIT_FAILURE_LIMIT} edits or writes failed in a row; the last: {}",
                        first_line(&result.output)
                    ),
                });
                self.edit_failures = 0;
            }
        }
        reports
    }

    /// Whether the guard tripped: too many replies in a row asked only for unknown tools.
    pub fn should_stop(&self) -> bool {
        self.unknown_only >= UNKNOWN_TOOL_LIMIT
    }
}

/// Arguments compared by value, so key order and spacing do not hide a repeat.
fn normalized_args(args: &str) -> String {
    serde_json::from_str::<serde_json::Value>(args)
        .map_or_else(|_| args.to_string(), |v| v.to_string())
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;

    fn builtin(name: &str) -> bool {
        Tool::from_name(name).is_some()
    }

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "x".into(),
            name: name.into(),
            args: args.into(),
        }
    }

    fn failure(name: &str) -> ToolResult {
        ToolResult {
            call_id: "x".into(),
            name: name.into(),
            output: "old_string was not found".into(),
            is_error: true,
        }
    }

    #[test]
    fn five_identical_replies_are_reported_once() {
        let mut monitor = HealthMonitor::new();
        let read = call("read", r#"{"path": "a"}"#);
        let same = call("read", r#"{ "path":"a" }"#);
        for i in 1..=4 {
            let c = if i % 2 == 0 { &same } else { &read };
            assert!(monitor.observe_reply(&[c], builtin).is_empty());
        }
        let reports = monitor.observe_reply(&[&read], builtin);
        assert_eq!(reports[0].kind, HealthKind::RepeatedCalls);
        assert!(monitor.observe_reply(&[&read], builtin).is_empty());
    }

    #[test]
    fn edit_failures_count_until_a_success_or_five_minutes() {
        let mut monitor = HealthMonitor::new();
        let start = Instant::now();
        monitor.observe_results(&[failure("edit"), failure("write")], start);
        let ok = ToolResult {
            is_error: false,
            ..failure("edit")
        };
        monitor.observe_results(&[ok], start);
        assert!(
            monitor
                .observe_results(&[failure("edit"), failure("edit")], start)
                .is_empty()
        );
        let late = start + EDIT_FAILURE_WINDOW + Duration::from_secs(1);
        assert!(
            monitor.observe_results(&[failure("edit")], late).is_empty(),
            "window expired"
        );
        let reports = monitor.observe_results(&[failure("edit"), failure("edit")], late);
        assert_eq!(reports[0].kind, HealthKind::EditFailures);
    }

    #[test]
    fn three_replies_of_unknown_tools_trip_the_guard() {
        let mut monitor = HealthMonitor::new();
        let bogus = call("fly", "{}");
        monitor.observe_reply(&[&bogus], builtin);
        monitor.observe_reply(&[&call("swim", "{}")], builtin);
        assert!(!monitor.should_stop());
        monitor.observe_reply(&[&bogus], builtin);
        assert!(monitor.should_stop());
    }
}
