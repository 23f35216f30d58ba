//! The session's run slot: the run in progress (at most one), how many runs the session has
//! had, the options of the last one, and a run to resume once the session is loaded.

use std::time::Instant;

use protocol::{ErrorCode, ErrorInfo, ResumeReason, RunId, RunOptions};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::session::run::Resumed;

/// The run in progress.
struct ActiveRun {
    id: RunId,
    cancel: CancellationToken,
    options: RunOptions,
    /// When it started (or was resumed).
    started: Instant,
    _task: JoinHandle<()>,
}

/// A run the daemon did not live to finish, to resume once the session is loaded.
pub(super) struct Resume {
    /// The run.
    pub(super) run: RunId,
    /// Its turn limit.
    pub(super) max_turns: u32,
    /// Its options.
    pub(super) options: RunOptions,
    /// Why it stopped.
    pub(super) reason: ResumeReason,
    /// Where it stood.
    pub(super) resumed: Resumed,
}

/// How a run that ended went: its options and how long it took.
pub(super) struct Ended {
    /// The run's options, which the next run of what it left queued takes.
    pub(super) options: RunOptions,
    /// How long it took since it started (or was resumed).
    pub(super) duration_ms: u64,
}

/// The run in progress, and what the session keeps of its runs.
#[derive(Default)]
pub(super) struct RunSlot {
    /// The run in progress.
    current: Option<ActiveRun>,
    /// The last run's number.
    count: u64,
    /// The options of the last run, for work started without a client (manual compaction, a
    /// subagent's result).
    last_options: RunOptions,
    /// A run the daemon did not live to finish, to resume once the session is loaded.
    to_resume: Option<Resume>,
}

impl RunSlot {
    /// The number of a new run.
    pub(super) fn next_id(&mut self) -> RunId {
        self.count += 1;
        RunId(self.count)
    }

    /// Run `run` exists (read from the log, or resumed): new runs are numbered after it.
    pub(super) fn restore_count(&mut self, run: RunId) {
        self.count = self.count.max(run.0);
    }

    /// A run read from the log was started with `options`.
    pub(super) fn restore_options(&mut self, options: RunOptions) {
        self.last_options = options;
    }

    /// Run `id`, whose task is `task` and whose cancel is `cancel`, is in progress.
    pub(super) fn begin(
        &mut self,
        id: RunId,
        cancel: CancellationToken,
        options: RunOptions,
        task: JoinHandle<()>,
    ) {
        self.last_options = options.clone();
        self.current = Some(ActiveRun {
            id,
            cancel,
            options,
            started: Instant::now(),
            _task: task,
        });
    }

    /// Run `run` ended: the slot is free. `None` when `run` is not the one in progress.
    pub(super) fn end(&mut self, run: RunId) -> Option<Ended> {
        if self.current.as_ref().map(|r| r.id) != Some(run) {
            return None;
        }
        let ended = self.current.take()?;
        Some(Ended {
            options: ended.options,
            duration_ms: ended.started.elapsed().as_millis() as u64,
        })
    }

    /// Whether a run is in progress.
    pub(super) fn is_running(&self) -> bool {
        self.current.is_some()
    }

    /// Whether the run in progress is `run` or a later one.
    pub(super) fn running_from(&self, run: RunId) -> bool {
        self.current.as_ref().is_some_and(|r| r.id >= run)
    }

    /// The options of run `run`, if it is the run in progress; messages of a run that is gone
    /// are refused.
    pub(super) fn active(&self, run: RunId) -> Result<&RunOptions, ErrorInfo> {
        self.current
            .as_ref()
            .filter(|r| r.id == run)
            .map(|r| &r.options)
            .ok_or_else(|| {
                ErrorInfo::new(
                    ErrorCode::InvalidRequest,
                    format!("run {run} is not running"),
                )
            })
    }

    /// Cancels the run in progress; which one it was.
    pub(super) fn cancel(&self) -> Option<RunId> {
        let run = self.current.as_ref()?;
        run.cancel.cancel();
        Some(run.id)
    }

    /// Whether the session has had one run only, and it is over.
    pub(super) fn had_one_run(&self) -> bool {
        self.current.is_none() && self.count == 1
    }

    /// The options of the last run.
    pub(super) fn last_options(&self) -> &RunOptions {
        &self.last_options
    }

    /// Keeps `resume` for when the session is loaded.
    pub(super) fn keep_for_resume(&mut self, resume: Resume) {
        self.to_resume = Some(resume);
    }

    /// The run to resume now that the session is loaded, if there is one.
    pub(super) fn take_resume(&mut self) -> Option<Resume> {
        self.to_resume.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_run_in_progress_takes_messages() {
        let mut slot = RunSlot::default();
        let first = slot.next_id();
        let task = tokio::spawn(async {});
        slot.begin(first, CancellationToken::new(), RunOptions::default(), task);
        assert!(slot.active(first).is_ok());
        assert!(slot.active(RunId(first.0 + 1)).is_err());
        assert!(slot.end(RunId(first.0 + 1)).is_none());
        assert!(slot.end(first).is_some());
        assert!(slot.active(first).is_err());
        assert!(slot.had_one_run());
        assert_eq!(slot.next_id(), RunId(2));
    }
}
