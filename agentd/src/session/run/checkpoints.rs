//! The run's checkpoints (docs/architecture.md#checkpoints-fork-and-worktrees): the session
//! directory is recorded just before the run's first tool that may change files, and again when the
//! run ends. A run that only reads records nothing (its store is not even created); a run that
//! changed nothing forgets its start. A checkpoint that cannot be recorded is reported once, and
//! the run goes on without.

use std::sync::Arc;

use protocol::{Event, RunId};
use tokio::task::JoinHandle;

use super::Run;
use crate::checkpoint::CheckpointConfig;
use crate::checkpoint::{Checkpoints, Point};

/// Where the run's checkpoints are.
enum State {
    /// Checkpoints are off, or the start one failed.
    Off,
    /// No tool that may change files ran yet.
    NotYet,
    /// The start checkpoint (of this tree) is recorded and a tool that may change files ran:
    /// the end is due.
    Used(git2::Oid),
}

/// The checkpoints of one run.
pub(super) struct RunCheckpoints {
    store: Option<Arc<Checkpoints>>,
    run: RunId,
    limits: CheckpointConfig,
    state: tokio::sync::Mutex<State>,
}

impl RunCheckpoints {
    /// The checkpoints of `run` in `store`, if checkpoints are on; nothing is recorded yet.
    pub(super) fn start(
        store: Option<Arc<Checkpoints>>,
        run: RunId,
        limits: CheckpointConfig,
    ) -> RunCheckpoints {
        let state = match &store {
            Some(_) => State::NotYet,
            None => State::Off,
        };
        RunCheckpoints {
            store,
            run,
            limits,
            state: tokio::sync::Mutex::new(state),
        }
    }
}

impl RunCheckpoints {
    /// A resumed run goes on from the start its first part recorded, if it did: its end is
    /// recorded when it ends (a rewind then knows what the agent left), and its start is not
    /// recorded again over what the first part changed.
    pub(super) async fn resume(&self) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let run = self.run;
        let start = tokio::task::spawn_blocking(move || store.recorded(run, Point::Start)).await;
        if let Ok(Some(start)) = start {
            *self.state.lock().await = State::Used(start.tree);
        }
    }
}

/// Records `point` of `run`, off the async threads: the tree it recorded.
fn record(
    store: Arc<Checkpoints>,
    run: RunId,
    point: Point,
    limits: CheckpointConfig,
) -> JoinHandle<Result<git2::Oid, String>> {
    tokio::task::spawn_blocking(move || {
        store
            .record(run, point, &limits)
            .map(|checkpoint| checkpoint.tree)
            .map_err(|e| e.to_string())
    })
}

async fn finished<T>(task: JoinHandle<Result<T, String>>) -> Result<T, String> {
    task.await.map_err(|e| e.to_string())?
}

impl Run {
    /// Before a batch of calls: if one of `names` may change files, records the start
    /// checkpoint (once per run).
    pub(super) async fn checkpoint_before<'a>(&self, mut names: impl Iterator<Item = &'a str>) {
        // The plan changes no file.
        let todo = crate::tools::Tool::Todo.name();
        if !names.any(|name| !self.concurrency_safe(name) && name != todo) {
            return;
        }
        let checkpoints = &self.checkpoints;
        let mut state = checkpoints.state.lock().await;
        let (State::NotYet, Some(store)) = (&*state, &checkpoints.store) else {
            return;
        };
        *state = State::Off;
        let task = record(
            store.clone(),
            checkpoints.run,
            Point::Start,
            checkpoints.limits,
        );
        match finished(task).await {
            Ok(tree) => *state = State::Used(tree),
            Err(err) => self.emit(Event::Error {
                message: format!("no checkpoint of this run, so it cannot be rewound: {err}"),
            }),
        }
    }

    /// At the end of the run: records the end checkpoint of a run that may have changed files;
    /// a run whose end is its start changed nothing and keeps no checkpoint.
    pub(super) async fn checkpoint_end(&self) {
        let checkpoints = &self.checkpoints;
        let mut state = checkpoints.state.lock().await;
        let (Some(store), state) = (
            &checkpoints.store,
            std::mem::replace(&mut *state, State::Off),
        ) else {
            return;
        };
        match state {
            State::Off | State::NotYet => {}
            State::Used(start) => {
                let end = record(
                    store.clone(),
                    checkpoints.run,
                    Point::End,
                    checkpoints.limits,
                );
                match finished(end).await {
                    Ok(end) if end == start => {
                        let (store, run) = (store.clone(), checkpoints.run);
                        let _ = tokio::task::spawn_blocking(move || store.forget(run)).await;
                    }
                    Ok(_) => {}
                    Err(err) => self.emit(Event::Error {
                        message: format!("the end of this run could not be recorded: {err}"),
                    }),
                }
            }
        }
    }
}
