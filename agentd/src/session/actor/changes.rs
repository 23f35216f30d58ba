//! What the session's runs changed in its directory, and undoing it
//! (docs/architecture.md#checkpoints-fork-and-worktrees): the diff of a run, and the rewind, which
//! is refused while a run is going and recorded in the history so the model hears of it on its next
//! turn.

use kameo::prelude::*;
use protocol::{ErrorCode, ErrorInfo, Event, RewindReport, RunDiff, RunId};

use super::SessionActor;
use crate::checkpoint::CheckpointError;
use crate::conversation::Message as HistoryMessage;

fn failed(err: CheckpointError) -> ErrorInfo {
    let code = match err {
        CheckpointError::Missing(_) | CheckpointError::TooManyFiles(_) => ErrorCode::InvalidRequest,
        _ => ErrorCode::Internal,
    };
    ErrorInfo::new(code, err.to_string())
}

/// What a run changed.
pub(crate) struct Diff(pub(crate) Option<RunId>);

impl Message<Diff> for SessionActor {
    type Reply = DelegatedReply<Result<RunDiff, ErrorInfo>>;

    async fn handle(&mut self, msg: Diff, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let (checkpoints, limits) = (self.workspace.checkpoints(), self.env.config().checkpoints);
        // Reading the store takes a while on a large directory: not in the actor.
        ctx.spawn(async move {
            tokio::task::spawn_blocking(move || checkpoints.diff(msg.0, &limits).map_err(failed))
                .await
                .unwrap_or_else(|e| Err(ErrorInfo::new(ErrorCode::Internal, e.to_string())))
        })
    }
}

/// Put the directory back as it was before a run.
pub(crate) struct Rewind {
    /// The run; the last one with a checkpoint when `None`.
    pub(crate) run: Option<RunId>,
    /// Also restore files changed outside the agent since.
    pub(crate) force: bool,
    /// Only say what would be done.
    pub(crate) dry_run: bool,
}

impl Message<Rewind> for SessionActor {
    type Reply = Result<RewindReport, ErrorInfo>;

    async fn handle(&mut self, msg: Rewind, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if self.runs.is_running() {
            return Err(ErrorInfo::new(
                ErrorCode::Busy,
                format!(
                    "session {} is running; cancel it or wait for it to finish before rewinding",
                    self.shown.id()
                ),
            ));
        }
        let (checkpoints, limits) = (self.workspace.checkpoints(), self.env.config().checkpoints);
        // The actor waits: no run may start while files are being put back.
        let report = tokio::task::spawn_blocking(move || {
            checkpoints.rewind(msg.run, msg.force, msg.dry_run, &limits)
        })
        .await
        .map_err(|e| ErrorInfo::new(ErrorCode::Internal, e.to_string()))?
        .map_err(failed)?;
        let changed = !report.restored.is_empty() || !report.removed.is_empty();
        if !report.dry_run && changed {
            self.push_message(HistoryMessage::Notice {
                text: notice(&report),
            });
            self.emit(Event::Rewound {
                run: report.run,
                restored: report.restored.clone(),
                removed: report.removed.clone(),
                kept: report.kept.clone(),
            });
            self.request_sync();
        }
        Ok(report)
    }
}

/// What the model is told of a rewind.
fn notice(report: &RewindReport) -> String {
    let list = |paths: &[String]| {
        if paths.is_empty() {
            "none".to_string()
        } else {
            paths.join(", ")
        }
    };
    let mut text = format!(
        "The user rewound the working directory to its state before run {}: the files changed since are as they were then, so earlier tool results about them may be stale. Restored: {}. Removed: {}.",
        report.run,
        list(&report.restored),
        list(&report.removed)
    );
    if !report.kept.is_empty() {
        text.push_str(&format!(
            " Left as they are (changed outside the agent): {}.",
            list(&report.kept)
        ));
    }
    text
}
