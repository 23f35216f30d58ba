//! Whether a call may run, from the session's side (docs/architecture.md#permissions-and-modes):
//! the check a run asks for (with the sandbox and the paths a command may not reach), the
//! answers from any client or hook (the first wins; a subagent's request shown here goes to
//! the subagent), and the timeout that denies.

use kameo::prelude::*;
use protocol::{Decision, ErrorCode, ErrorInfo, PermissionRequestId, RunId, SessionState};

use super::SessionActor;
use super::asks::Scope;
use crate::permission;
use crate::session::run::{Answer, Authorized, CallToCheck};
use crate::store::Record;

impl Message<Answer> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: Answer, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.answer(msg).await
    }
}

impl SessionActor {
    /// Answers a pending permission request: this session's own, or a subagent's shown in its
    /// stream (the subagent decides it). A number this session ever gave is its own (a second
    /// answer to it is refused as already decided), never a subagent's that has the same number.
    pub(super) async fn answer(&mut self, msg: Answer) -> Result<(), ErrorInfo> {
        let own = self.asks.issued(msg.request);
        if own && !self.asks.is_open(msg.request) {
            // Decided already; a subagent's request of the same number is not this one, and
            // is answered in the subagent's own session.
            if let Some(child) = self.family.askers_numbered(msg.request).first() {
                return Err(ErrorInfo::new(
                    ErrorCode::AlreadyDecided,
                    format!(
                        "permission request {request} of this session was already decided; subagent {child} has its own request {request} waiting: answer it in that session (`agentctl approve {child} {request}`)",
                        request = msg.request
                    ),
                ));
            }
        }
        if let Some(asker) = self.family.asker_of(msg.request, own)? {
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

    /// Decides a pending permission request of this session; the first answer wins.
    pub(super) fn resolve(&mut self, msg: Answer) -> Result<(), ErrorInfo> {
        let scope = Scope {
            cwd: self.workspace.cwd(),
            plan_file: self.workspace.plan_file(),
            created_ms: self.shown.created_ms(),
        };
        let durable = &mut self.durable;
        self.asks.decide(&msg, scope, |rule| {
            durable.record(&Record::Rule { rule });
        })?;
        self.emit(protocol::Event::PermissionResolved {
            session: None,
            request: msg.request,
            decision: msg.decision,
            by_client: msg.by_client,
        });
        if self.asks.none_open() && self.runs.is_running() {
            self.set_state(SessionState::Running);
        }
        Ok(())
    }

    /// Nobody answered request `request` in time: it is denied, if it still waits.
    pub(super) fn expire(&mut self, request: PermissionRequestId) -> Result<(), ErrorInfo> {
        if !self.asks.is_open(request) {
            return Ok(());
        }
        let answer = Answer {
            request,
            decision: Decision::Deny,
            by_client: "the permission timeout".to_string(),
        };
        self.resolve(answer)
    }

    /// Whether the call `check` describes, of run `run`, may run, and the sandbox it runs in.
    pub(super) fn authorize(
        &mut self,
        run: RunId,
        check: CallToCheck,
    ) -> Result<Authorized, ErrorInfo> {
        let paths = &self.env.paths;
        let (cwd, plan) = (self.workspace.cwd(), self.workspace.plan_file());
        let bash = crate::permission::ToolRef::Builtin(crate::tools::Tool::Bash);
        // Only a call that writes (a tool's path, a command's redirections) meets the
        // guarded paths: a read is not made to look for them.
        let writes = check.tool.writes() || check.tool == bash;
        let config = self.env.config();
        let env = self.workspace.command_env(&config);
        let protected = self.workspace.protected_paths(&config, &env, writes, paths);
        let path_var = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str());
        // A written path is resolved once: the check and the tool see the same file, whatever
        // a command running meanwhile does to the directories on the way.
        let target = check.tool.writes().then(|| {
            check.args["path"]
                .as_str()
                .map(|p| permission::real_path(&crate::tools::resolve(cwd, p)))
        });
        let target = target.flatten();
        let mode = self.shown.mode();
        let search_host = config.web_search.as_ref().and_then(|s| s.host());
        let call = permission::Call {
            tool: check.tool.as_call(),
            args: &check.args,
            cwd,
            plan_file: plan,
            sandbox: mode == protocol::Mode::Auto && crate::sandbox::available(),
            path_var,
            protected: &protected,
            since: permission::unchanged_since(self.shown.created_ms()),
            lookup_changed_before: self.asks.lookup_changed(),
            target: target.as_deref(),
            search_host: search_host.as_deref(),
        };
        let hidden = self.workspace.hidden_paths(&config, &env, mode, paths);
        let sandbox = (call.sandbox && check.tool == bash && !call.unsandboxed()).then(|| {
            let worktree = self.durable.meta().worktree.as_ref();
            Box::new(
                self.workspace
                    .sandbox_policy(&config, &env, &hidden, paths, worktree),
            )
        });
        let options = self.runs.active(run)?;
        // A network call carries its rules to the hosts it meets later (redirects).
        let reach = match check.tool {
            permission::ToolRef::Builtin(tool)
                if tool.class() == protocol::PermissionClass::Network =>
            {
                let rules = permission::network::NetworkRules {
                    tool,
                    mode,
                    grants: options.grants.clone(),
                    always: self.asks.always().to_vec(),
                    rules: config.permissions.clone(),
                };
                Some(std::sync::Arc::new(rules) as std::sync::Arc<dyn crate::web::Reach>)
            }
            _ => None,
        };
        let (authorization, asked) =
            self.asks
                .check(call, &check, mode, options, &config.permissions);
        if let Some(asked) = asked {
            // The event below publishes the listing.
            self.shown.set_state(SessionState::AwaitingApproval);
            self.emit(asked);
        }
        Ok(Authorized {
            authorization,
            confinement: crate::sandbox::Confinement {
                sandbox,
                hidden: std::sync::Arc::new(hidden),
                target,
                reach,
            },
        })
    }
}
