//! The health monitor (docs/architecture.md#permissions-and-modes): it reports runs that repeat
//! themselves or keep failing to edit, to the user and to the model (with what to do instead), and
//! trips the guard that stops a run whose replies ask only for tools that do not exist, or that
//! keeps repeating itself after it was told.

use std::time::{Duration, Instant};

use protocol::HealthKind;

use crate::conversation::{ToolCall, ToolResult};

/// Consecutive replies with identical tool calls that are reported; one more, with the same
/// results, stops the run.
pub(crate) const REPEAT_LIMIT: u32 = 3;
/// Failed edits or writes that are reported.
pub(crate) const EDIT_FAILURE_LIMIT: u32 = 3;
/// A failure older than this no longer counts.
pub(crate) const EDIT_FAILURE_WINDOW: Duration = Duration::from_secs(300);
/// Consecutive replies of only unknown tools that stop the run.
pub(crate) const UNKNOWN_TOOL_LIMIT: u32 = 3;

/// A sign worth telling the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Report {
    /// What kind of sign.
    pub(crate) kind: HealthKind,
    /// What was seen.
    pub(crate) detail: String,
}

impl Report {
    /// What the model is told with its results: what was seen and what to do instead; `None`
    /// for signs the results already explain.
    pub(crate) fn to_model(&self) -> Option<String> {
        let instead = match self.kind {
            HealthKind::RepeatedCalls => {
                "Repeating them will not give anything new, and one more identical reply ends the \
                 run. Use the results you have: take a different step, or answer the user."
            }
            HealthKind::EditFailures => {
                "Stop patching with edit: read the file once more and write the whole corrected \
                 file with write."
            }
            _ => return None,
        };
        Some(format!("[health warning: {}. {instead}]", self.detail))
    }
}

/// Watches one run's replies and results.
#[derive(Debug, Default)]
pub(crate) struct HealthMonitor {
    last_calls: Option<Vec<(String, String)>>,
    repeats: u32,
    edit_failures: u32,
    last_edit_failure: Option<Instant>,
    unknown_only: u32,
    /// The same calls went on after the model was told they repeat, with the same results.
    repeating_after_warning: bool,
}

impl HealthMonitor {
    /// Looks at a reply's tool calls.
    pub(crate) fn observe_reply(
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
    pub(crate) fn observe_results(&mut self, results: &[ToolResult], now: Instant) -> Vec<Report> {
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

    /// Looks at whether every call of the last reply gave the same result as the same call
    /// before: past the warning, that is a run going round in circles.
    pub(crate) fn observe_unchanged(&mut self, all_unchanged: bool) {
        self.repeating_after_warning = all_unchanged && self.repeats > REPEAT_LIMIT;
    }

    /// Why the guard tripped, if it did: too many replies in a row asked only for unknown
    /// tools, or the same calls went on with the same results after the model was warned.
    pub(crate) fn stop(&self) -> Option<String> {
        if self.unknown_only >= UNKNOWN_TOOL_LIMIT {
            Some(format!(
                "stopped: {UNKNOWN_TOOL_LIMIT} replies in a row asked only for tools that do not exist"
            ))
        } else if self.repeating_after_warning {
            Some(format!(
                "stopped: the model made the same tool calls {} times in a row with the same results, after it was told to do something else",
                self.repeats
            ))
        } else {
            None
        }
    }
}

/// Arguments compared by value, so key order and spacing do not hide a repeat.
pub(crate) fn normalized_args(args: &str) -> String {
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
            images: Vec::new(),
        }
    }

    #[test]
    fn identical_replies_are_reported_once_then_stop_only_with_the_same_results() {
        let mut monitor = HealthMonitor::default();
        let read = call("read", r#"{"path": "a"}"#);
        let same = call("read", r#"{ "path":"a" }"#);
        for i in 1..REPEAT_LIMIT {
            let c = if i % 2 == 0 { &same } else { &read };
            assert!(monitor.observe_reply(&[c], builtin).is_empty());
            monitor.observe_unchanged(true);
            assert!(monitor.stop().is_none());
        }
        let reports = monitor.observe_reply(&[&read], builtin);
        assert_eq!(reports[0].kind, HealthKind::RepeatedCalls);
        assert!(reports[0].to_model().unwrap().contains("ends the run"));
        monitor.observe_unchanged(true);
        assert!(monitor.stop().is_none(), "the warning comes first");
        assert!(monitor.observe_reply(&[&read], builtin).is_empty());
        // A poll whose result changes goes on.
        monitor.observe_unchanged(false);
        assert!(monitor.stop().is_none());
        monitor.observe_reply(&[&read], builtin);
        monitor.observe_unchanged(true);
        assert!(monitor.stop().unwrap().contains("same results"));
    }

    #[test]
    fn edit_failures_count_until_a_success_or_five_minutes() {
        let mut monitor = HealthMonitor::default();
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
        let mut monitor = HealthMonitor::default();
        let bogus = call("fly", "{}");
        monitor.observe_reply(&[&bogus], builtin);
        monitor.observe_reply(&[&call("swim", "{}")], builtin);
        assert!(monitor.stop().is_none());
        monitor.observe_reply(&[&bogus], builtin);
        assert!(monitor.stop().unwrap().contains("do not exist"));
    }
}
