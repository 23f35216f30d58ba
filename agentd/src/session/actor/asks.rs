//! Permission asks: whether a call may run, the requests that wait for a user's answer, the
//! answers from any client (the first wins), and the timeout that denies.

use protocol::{
    Decision, ErrorCode, ErrorInfo, Event, PermissionRequestId, RunId, SessionState, ToolCallInfo,
};

use serde_json::Value;
use tokio::sync::oneshot;

use kameo::prelude::*;

use super::SessionActor;
use crate::permission::ToolRef;
use crate::permission::{self, Verdict};
use crate::store::Record;

/// A permission request waiting for an answer.
pub(super) struct PendingAsk {
    pub(super) answer: oneshot::Sender<Decision>,
    pub(super) tool: ToolRef,
    pub(super) args: Value,
}

impl SessionActor {
    /// Decides a pending permission request; the first answer wins.
    pub(super) fn resolve(&mut self, msg: Answer) -> Result<(), ErrorInfo> {
        let Some(pending) = self.pending.remove(&msg.request) else {
            return Err(match self.decided.get(&msg.request) {
                Some(by) => ErrorInfo::new(
                    ErrorCode::AlreadyDecided,
                    format!(
                        "permission request {} was already decided by {by}",
                        msg.request
                    ),
                ),
                None => ErrorInfo::new(
                    ErrorCode::UnknownPermissionRequest,
                    format!(
                        "no pending permission request {} in this session",
                        msg.request
                    ),
                ),
            });
        };
        if msg.decision == Decision::AllowAlways {
            let (cwd, plan) = (self.cwd(), self.plan_file());
            let protected = permission::ProtectedPaths::default();
            let call = permission::Call {
                tool: pending.tool.as_call(),
                args: &pending.args,
                cwd: &cwd,
                plan_file: &plan,
                sandbox: false,
                path_var: None,
                protected: &protected,
                since: permission::unchanged_since(self.info.created_ms),
                lookup_changed_before: self.lookup_changed,
                target: None,
            };
            if let Some(rule) = permission::rule_for(call) {
                self.record(&Record::Rule { rule: rule.clone() });
                self.always.push(rule);
            }
        }
        let _ = pending.answer.send(msg.decision);
        self.decided.insert(msg.request, msg.by_client.clone());
        self.emit(Event::PermissionResolved {
            session: None,
            request: msg.request,
            decision: msg.decision,
            by_client: msg.by_client,
        });
        if self.pending.is_empty() && self.run.is_some() {
            self.set_state(SessionState::Running);
        }
        Ok(())
    }
}

/// Answer a pending permission request.
pub struct Answer {
    /// The request.
    pub request: PermissionRequestId,
    /// The answer.
    pub decision: Decision,
    /// Who answered.
    pub by_client: String,
}

impl Message<Answer> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: Answer, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        // A subagent's request shown in this session's stream: the subagent decides it.
        if let Some(asker) = self.asker_of(msg.request)? {
            return match asker.ask(msg).await {
                Ok(()) => Ok(()),
                Err(SendError::HandlerError(err)) => Err(err),
                Err(err) => Err(ErrorInfo::new(
                    ErrorCode::UnknownPermissionRequest,
                    format!("the subagent that asked is gone: {err}"),
                )),
            };
        }
        self.resolve(msg)
    }
}

/// May this call run?
pub struct Authorize {
    /// The run asking.
    pub run: RunId,
    /// The tool.
    pub tool: ToolRef,
    /// Its arguments.
    pub args: Value,
    /// The call as the model made it.
    pub call: ToolCallInfo,
    /// What the call's PreToolUse hooks answered, if they did.
    pub hook: Option<crate::hooks::output::Permission>,
}

/// The answer to [`Authorize`], and the sandbox a command runs in when it runs.
pub struct Authorized {
    /// Whether it may run.
    pub authorization: Authorization,
    /// The sandbox of a `bash` call in auto mode (not asked to leave it), and what the call
    /// may not look at.
    pub confinement: crate::sandbox::Confinement,
}

/// Whether a call may run.
pub enum Authorization {
    /// Run it.
    Allowed,
    /// Do not; the model gets this reason.
    Denied(String),
    /// Wait for a user's answer to this request; `true` when it is only the mode's question
    /// (a PermissionRequest hook may answer it), `false` when a rule or a protected path asks.
    Pending(PermissionRequestId, oneshot::Receiver<Decision>, bool),
}

impl Message<Authorize> for SessionActor {
    type Reply = Result<Authorized, ErrorInfo>;

    async fn handle(&mut self, msg: Authorize, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let (cwd, plan) = (self.cwd(), self.plan_file());
        // Only a call that writes (a tool's path, a command's redirections) meets the
        // guarded paths: a read is not made to look for them.
        let writes = msg.tool.writes()
            || msg.tool == crate::permission::ToolRef::Builtin(crate::tools::Tool::Bash);
        let config = self.env.config();
        let env = self.command_env(&config);
        let protected = self.protected_paths(&config, &env, writes);
        let path_var = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str());
        // A written path is resolved once: the check and the tool see the same file, whatever
        // a command running meanwhile does to the directories on the way.
        let target = msg.tool.writes().then(|| {
            msg.args["path"]
                .as_str()
                .map(|p| permission::real_path(&crate::tools::resolve(&cwd, p)))
        });
        let target = target.flatten();
        let call = permission::Call {
            tool: msg.tool.as_call(),
            args: &msg.args,
            cwd: &cwd,
            plan_file: &plan,
            sandbox: self.info.mode == protocol::Mode::Auto && crate::sandbox::available(),
            path_var,
            protected: &protected,
            since: permission::unchanged_since(self.info.created_ms),
            lookup_changed_before: self.lookup_changed,
            target: target.as_deref(),
        };
        let hidden = self.hidden_paths(&config, &env);
        let sandbox = (call.sandbox
            && msg.tool == crate::permission::ToolRef::Builtin(crate::tools::Tool::Bash)
            && !call.unsandboxed())
        .then(|| Box::new(self.sandbox_policy(&config, &env, &hidden)));
        let authorization = self.authorize(&msg, call)?;
        Ok(Authorized {
            authorization,
            confinement: crate::sandbox::Confinement {
                sandbox,
                hidden: std::sync::Arc::new(hidden),
                target,
            },
        })
    }
}

impl SessionActor {
    /// Marks the session when `call`, let run or asked about, changes which program a name runs
    /// for later commands: the deny rules can no longer tell what a name runs. A call refused
    /// outright did not run and changes nothing.
    fn note_lookup_change(&mut self, call: permission::Call<'_>) {
        if permission::changes_lookup(call) {
            self.lookup_changed = true;
        }
    }

    /// Decides `call` by the session's mode, grants, answers and rules.
    fn authorize(
        &mut self,
        msg: &Authorize,
        call: permission::Call<'_>,
    ) -> Result<Authorization, ErrorInfo> {
        let run = self.active(msg.run)?;
        let rules = self.env.config().permissions.clone();
        let verdict = permission::check(
            call,
            self.info.mode,
            &run.options.grants,
            &self.always,
            &rules,
        );
        // A hook's allow answers the mode's question only: an ask with a reason (a command the
        // deny rules cannot see through, a protected path) still asks. Its ask asks; a deny
        // rule still wins.
        let verdict = match (msg.hook, verdict) {
            (Some(crate::hooks::output::Permission::Allow), Verdict::Ask(None)) => Verdict::Allow,
            (Some(crate::hooks::output::Permission::Ask), Verdict::Allow) => {
                Verdict::Ask(Some("a PreToolUse hook asks".to_string()))
            }
            (_, verdict) => verdict,
        };
        match verdict {
            Verdict::Allow => {
                self.note_lookup_change(call);
                Ok(Authorization::Allowed)
            }
            Verdict::Deny(reason) => Ok(Authorization::Denied(reason)),
            Verdict::Ask(reason) if run.options.deny_unanswered => {
                Ok(Authorization::Denied(match reason {
                    Some(reason) => format!("denied: nobody is there to ask, and {reason}"),
                    None => permission::unattended_denial(msg.tool.as_call().class()),
                }))
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
                        tool: msg.tool.clone(),
                        args: msg.args.clone(),
                    },
                );
                self.info.state = SessionState::AwaitingApproval;
                self.emit(Event::PermissionRequested {
                    session: None,
                    request,
                    tool: msg.call.name.clone(),
                    args: msg.call.args.clone(),
                    summary,
                });
                Ok(Authorization::Pending(request, receiver, plain))
            }
        }
    }
}

/// Nobody answered a permission request in time: deny it.
pub struct Expire(pub PermissionRequestId);

impl Message<Expire> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: Expire, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if !self.pending.contains_key(&msg.0) {
            return Ok(());
        }
        let answer = Answer {
            request: msg.0,
            decision: Decision::Deny,
            by_client: "the permission timeout".to_string(),
        };
        self.resolve(answer)
    }
}
