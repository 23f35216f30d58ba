//! Deleting a session: its subagents first, its actor closed off the supervisor's thread, its
//! files, checkpoints and worktree removed, its SessionEnd hooks run.

use kameo::prelude::*;
use protocol::{ErrorCode, ErrorInfo, SessionId, SessionState};

use super::Supervisor;
use crate::session::actor::Close;
use crate::store;

/// How long a deleted session's actor may take to close before its files go anyway.
const CLOSE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Delete a session.
pub(crate) struct Delete {
    /// The session.
    pub(crate) id: SessionId,
    /// Cancel a running run first.
    pub(crate) force: bool,
}

impl Message<Delete> for Supervisor {
    /// What was kept of the session's worktree, and why.
    type Reply = DelegatedReply<Result<Vec<String>, ErrorInfo>>;

    async fn handle(&mut self, msg: Delete, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let root = match self.resolve(&msg.id) {
            Ok(entry) => entry.info.with(|i| i.id.clone()),
            Err(err) => return ctx.reply(Err(err)),
        };
        // Its subagents go with it, deepest first.
        let tree = self.family_of(&root);
        let running = |id: &SessionId| {
            self.sessions
                .get(id)
                .is_some_and(|e| e.info.with(|i| i.state != SessionState::Idle))
        };
        if !msg.force
            && let Some(busy) = tree.iter().find(|id| running(id))
        {
            let message = if *busy == root {
                format!("session {root} is running; cancel it first or delete with --force")
            } else {
                format!(
                    "subagent {busy} of session {root} is running; cancel it first or delete with --force"
                )
            };
            return ctx.reply(Err(ErrorInfo::new(ErrorCode::Busy, message)));
        }
        // The actors are closed by the task below, never while this handler waits: an actor
        // that is stopping may itself wait for the supervisor to hear of it.
        let mut gone = Vec::new();
        let mut actors = Vec::new();
        for id in tree {
            let Some(entry) = self.sessions.remove(&id) else {
                continue;
            };
            entry.info.retire();
            actors.extend(entry.actor.clone().map(|a| (id.clone(), a)));
            let cwd = entry.info.with(|i| i.cwd.clone());
            // Every deleted session's SessionEnd hooks run, loaded or not.
            let config = self.env.config();
            let env = config.shell_env.for_commands(&crate::shell_env::current());
            crate::hooks::session_end(
                &config.hooks,
                &id.0,
                std::path::Path::new(&cwd),
                entry.info.with(|i| i.mode),
                env,
            );
            gone.push((id, entry.meta.worktree.clone(), cwd));
        }
        // A fork works in the same directory: its worktree stays while another session uses it.
        let gone: Vec<_> = gone
            .into_iter()
            .map(|(id, worktree, cwd)| {
                let user = worktree.as_ref().and_then(|w| {
                    self.sessions
                        .values()
                        .find(|e| {
                            e.info
                                .with(|i| std::path::Path::new(&i.cwd).starts_with(&w.path))
                        })
                        .map(|e| e.info.with(|i| i.id.clone()))
                });
                (id, worktree, cwd, user)
            })
            .collect();
        let sessions_dir = self.paths.sessions_dir();
        let checkpoints = self.paths.checkpoints_dir();
        // The files go off the supervisor's thread: a worktree may be large.
        ctx.spawn(async move {
            for (id, actor) in actors {
                let close = actor.ask(Close { force: true });
                match tokio::time::timeout(CLOSE_TIMEOUT, close).await {
                    Ok(Ok(())) => {}
                    // An actor that is already gone has nothing left to close.
                    Ok(Err(err)) => tracing::warn!(session = %id, "closing session actor: {err}"),
                    Err(_) => {
                        tracing::warn!(session = %id, "the session actor did not close in time")
                    }
                }
            }
            let notes = tokio::task::spawn_blocking(move || {
                let mut notes = Vec::new();
                for (id, worktree, cwd, user) in gone {
                    notes.extend(delete_files(
                        &sessions_dir,
                        &checkpoints,
                        &id,
                        cwd,
                        worktree,
                        user,
                    ));
                }
                notes
            })
            .await
            .unwrap_or_default();
            Ok(notes)
        })
    }
}

impl Supervisor {
    /// Session `root` and its subagents, theirs too, children before their parent.
    fn family_of(&self, root: &SessionId) -> Vec<SessionId> {
        let mut order = vec![root.clone()];
        let mut at = 0;
        while at < order.len() {
            let parent = order[at].0.clone();
            let children = self.sessions.iter().filter(|(id, e)| {
                e.meta.child.as_ref().is_some_and(|c| c.parent == parent) && !order.contains(id)
            });
            let children: Vec<SessionId> = children.map(|(id, _)| id.clone()).collect();
            order.extend(children);
            at += 1;
        }
        order.reverse();
        order
    }
}

/// Removes a deleted session's files: its log, its checkpoints and its worktree (unless
/// `user` still works in it); says what was kept.
fn delete_files(
    sessions_dir: &std::path::Path,
    checkpoints: &std::path::Path,
    id: &SessionId,
    cwd: String,
    worktree: Option<crate::worktree::Worktree>,
    user: Option<SessionId>,
) -> Vec<String> {
    let checkpoints = crate::checkpoint::Checkpoints::new(checkpoints, &id.0, cwd.into());
    if let Err(err) = checkpoints.delete() {
        tracing::warn!(session = %id, "cannot drop the session's checkpoints: {err}");
    }
    if let Err(err) = store::delete(sessions_dir, id) {
        tracing::error!(session = %id, "cannot delete the session's files: {err}");
    }
    tracing::info!(session = %id, "session deleted");
    match (worktree, user) {
        (Some(w), Some(user)) => vec![format!(
            "worktree kept at {} (branch {}): session {user} works in it",
            w.path, w.branch
        )],
        (Some(w), None) => crate::worktree::remove(&w),
        (None, _) => Vec::new(),
    }
}
