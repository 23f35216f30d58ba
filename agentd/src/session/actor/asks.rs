//! The session's permission asks (docs/architecture.md#permissions-and-modes): the requests
//! that wait for a user's answer, who decided the others, the rules "allow always" made, and
//! whether a call let run changed which program a name runs. What a call's check decides, what
//! an answer does, and denying the requests still open, are decided here and nowhere else.

use std::collections::HashMap;
use std::path::Path;

use protocol::{Decision, ErrorCode, ErrorInfo, Event, Mode, PermissionRequestId, RunOptions};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::permission::{self, AlwaysRule, ToolRef, Verdict};
use crate::session::run::{Answer, Authorization, CallToCheck};

/// A permission request waiting for an answer.
struct PendingAsk {
    answer: oneshot::Sender<Decision>,
    tool: ToolRef,
    args: Value,
    /// The search service's host when it was asked (what "allow always" on `web_search`
    /// remembers).
    search_host: Option<String>,
}

/// The session's permission requests, answers and rules.
#[derive(Default)]
pub(super) struct Asks {
    /// The requests waiting for an answer.
    pending: HashMap<PermissionRequestId, PendingAsk>,
    /// Who decided each request that is no longer pending.
    decided: HashMap<PermissionRequestId, String>,
    /// The rules "allow always" made.
    always: Vec<AlwaysRule>,
    /// The last request's number.
    requests: u64,
    /// A `bash` call that changes which program a name runs (`export PATH=…`, `hash -p`, an
    /// alias) was let run: where deny rules exist, every program found through `PATH` asks
    /// from then on.
    lookup_changed: bool,
}

/// Where the session's calls run, as a rule made by "allow always" sees it.
pub(super) struct Scope<'a> {
    /// The session directory.
    pub(super) cwd: &'a Path,
    /// Where plan mode keeps its plan.
    pub(super) plan_file: &'a Path,
    /// When the session was created.
    pub(super) created_ms: u64,
}

/// Why the requests still open are denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Withdrawn {
    /// The run that asked ended.
    RunEnded,
    /// The daemon stopped while they were open, and the run is closed.
    Restart,
    /// The daemon stopped while they were open, and the run goes on: its calls ask again.
    AskedAgain,
}

impl Withdrawn {
    /// Who the clients are told decided.
    fn by(self) -> &'static str {
        match self {
            Withdrawn::RunEnded => "the end of the run",
            Withdrawn::Restart => "the daemon restart",
            Withdrawn::AskedAgain => "the daemon restart (it is asked again)",
        }
    }

    /// Who a late answer is told decided.
    fn decided_by(self) -> &'static str {
        match self {
            Withdrawn::RunEnded => "the end of the run",
            Withdrawn::Restart | Withdrawn::AskedAgain => "the daemon restart",
        }
    }
}

impl Asks {
    /// Whether request `request` waits for an answer.
    pub(super) fn is_open(&self, request: PermissionRequestId) -> bool {
        self.pending.contains_key(&request)
    }

    /// Whether this session ever gave number `request` to a request of its own (open or
    /// decided).
    pub(super) fn issued(&self, request: PermissionRequestId) -> bool {
        (1..=self.requests).contains(&request.0)
            || self.pending.contains_key(&request)
            || self.decided.contains_key(&request)
    }

    /// Whether no request waits for an answer.
    pub(super) fn none_open(&self) -> bool {
        self.pending.is_empty()
    }

    /// The rules "allow always" made.
    pub(super) fn always(&self) -> &[AlwaysRule] {
        &self.always
    }

    /// Whether a call let run (or asked about) changed which program a name runs.
    pub(super) fn lookup_changed(&self) -> bool {
        self.lookup_changed
    }

    /// Whether nothing was asked that waits, and no rule was made.
    pub(super) fn holds_nothing(&self) -> bool {
        self.pending.is_empty() && self.always.is_empty()
    }

    /// Decides a pending request by `answer` (the first answer wins): the run that asked hears
    /// it. The rule an "allow always" makes is handed to `store` before the run hears the
    /// answer (and applies from now on).
    pub(super) fn decide(
        &mut self,
        answer: &Answer,
        scope: Scope<'_>,
        store: impl FnOnce(AlwaysRule),
    ) -> Result<(), ErrorInfo> {
        let Some(pending) = self.pending.remove(&answer.request) else {
            return Err(match self.decided.get(&answer.request) {
                Some(by) => ErrorInfo::new(
                    ErrorCode::AlreadyDecided,
                    format!(
                        "permission request {} was already decided by {by}",
                        answer.request
                    ),
                ),
                None => ErrorInfo::new(
                    ErrorCode::UnknownPermissionRequest,
                    format!(
                        "no pending permission request {} in this session",
                        answer.request
                    ),
                ),
            });
        };
        if answer.decision == Decision::AllowAlways {
            let protected = permission::ProtectedPaths::default();
            let call = permission::Call {
                tool: pending.tool.as_call(),
                args: &pending.args,
                cwd: scope.cwd,
                plan_file: scope.plan_file,
                sandbox: false,
                path_var: None,
                protected: &protected,
                since: permission::unchanged_since(scope.created_ms),
                lookup_changed_before: self.lookup_changed,
                target: None,
                search_host: pending.search_host.as_deref(),
            };
            if let Some(rule) = permission::rule_for(call) {
                self.always.push(rule.clone());
                store(rule);
            }
        }
        let _ = pending.answer.send(answer.decision);
        self.decided
            .insert(answer.request, answer.by_client.clone());
        Ok(())
    }

    /// Decides `call` (the call `check` describes) by the session's `mode`, the run's grants
    /// (`options`), the answers and rules so far, and the configured `rules`. A call that asks
    /// opens a request: its `PermissionRequested` event is returned with the answer.
    pub(super) fn check(
        &mut self,
        call: permission::Call<'_>,
        check: &CallToCheck,
        mode: Mode,
        options: &RunOptions,
        rules: &permission::PermissionRules,
    ) -> (Authorization, Option<Event>) {
        let verdict = permission::check(call, mode, &options.grants, &self.always, rules);
        // A hook's allow answers the mode's question only: an ask with a reason (a command the
        // deny rules cannot see through, a protected path) still asks. Its ask asks; a deny
        // rule still wins.
        let verdict = match (check.hook, verdict) {
            (Some(crate::hooks::output::Permission::Allow), Verdict::Ask(None)) => Verdict::Allow,
            (Some(crate::hooks::output::Permission::Ask), Verdict::Allow) => {
                Verdict::Ask(Some("a PreToolUse hook asks".to_string()))
            }
            (_, verdict) => verdict,
        };
        match verdict {
            Verdict::Allow => {
                self.note_lookup_change(call);
                (Authorization::Allowed, None)
            }
            Verdict::Deny(reason) => (Authorization::Denied(reason), None),
            Verdict::Ask(reason) if options.deny_unanswered => {
                let reason = match reason {
                    Some(reason) => format!("denied: nobody is there to ask, and {reason}"),
                    None => permission::unattended_denial(check.tool.as_call().class()),
                };
                (Authorization::Denied(reason), None)
            }
            Verdict::Ask(reason) => {
                // It runs if the user allows it: from then on names may run other programs.
                self.note_lookup_change(call);
                let plain = reason.is_none();
                self.requests += 1;
                let request = PermissionRequestId(self.requests);
                let summary = match reason {
                    Some(reason) => format!("{} ({reason})", permission::summary(call)),
                    None => permission::summary(call),
                };
                let (answer, receiver) = oneshot::channel();
                self.pending.insert(
                    request,
                    PendingAsk {
                        answer,
                        tool: check.tool.clone(),
                        args: check.args.clone(),
                        search_host: call.search_host.map(str::to_string),
                    },
                );
                let asked = Event::PermissionRequested {
                    session: None,
                    request,
                    tool: check.call.name.clone(),
                    args: check.call.args.clone(),
                    summary,
                };
                (
                    Authorization::Pending(request, receiver, plain),
                    Some(asked),
                )
            }
        }
    }

    /// Marks the session when `call`, let run or asked about, changes which program a name runs
    /// for later commands: the deny rules can no longer tell what a name runs. A call refused
    /// outright did not run and changes nothing.
    fn note_lookup_change(&mut self, call: permission::Call<'_>) {
        if permission::changes_lookup(call) {
            self.lookup_changed = true;
        }
    }

    /// Denies every request still open, and `replayed` (requests a log left open), for `why`:
    /// the events that tell the clients.
    pub(super) fn deny_open(
        &mut self,
        why: Withdrawn,
        replayed: Vec<PermissionRequestId>,
    ) -> Vec<Event> {
        let open: Vec<_> = self.pending.drain().map(|(request, _)| request).collect();
        open.into_iter()
            .chain(replayed)
            .map(|request| {
                self.decided.insert(request, why.decided_by().to_string());
                Event::PermissionResolved {
                    session: None,
                    request,
                    decision: Decision::Deny,
                    by_client: why.by().to_string(),
                }
            })
            .collect()
    }

    /// A request read from the log: numbering goes on after it.
    pub(super) fn restore_request(&mut self, request: PermissionRequestId) {
        self.requests = self.requests.max(request.0);
    }

    /// A decision read from the log.
    pub(super) fn restore_decided(&mut self, request: PermissionRequestId, by: String) {
        self.decided.insert(request, by);
    }

    /// A rule read from the log.
    pub(super) fn restore_rule(&mut self, rule: AlwaysRule) {
        self.always.push(rule);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_withdrawn_by_a_restart_refuses_a_late_answer() {
        let mut asks = Asks::default();
        let request = PermissionRequestId(3);
        let events = asks.deny_open(Withdrawn::AskedAgain, vec![request]);
        assert!(matches!(
            &events[..],
            [Event::PermissionResolved { decision: Decision::Deny, by_client, .. }]
                if by_client == "the daemon restart (it is asked again)"
        ));
        let late = Answer {
            request,
            decision: Decision::Allow,
            by_client: "a client".to_string(),
        };
        let scope = Scope {
            cwd: Path::new("/work"),
            plan_file: Path::new("/work/plan.md"),
            created_ms: 0,
        };
        let refused = asks
            .decide(&late, scope, |_| {})
            .expect_err("already decided");
        assert_eq!(refused.code, ErrorCode::AlreadyDecided);
        assert!(refused.message.ends_with("decided by the daemon restart"));
    }
}
