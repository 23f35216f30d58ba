//! The run's checkpoints (SPEC §13): the session directory is recorded as the run starts, while
//! the model thinks (a first checkpoint of a large tree takes a while), and the run's first tool
//! that may change files waits for it; the directory is recorded again when the run ends. A run
//! that changed nothing forgets its start. A checkpoint that cannot be recorded is reported
//! once, and the run goes on without.

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
    /// The start checkpoint is being recorded (or is, but no change was made yet).
    Starting(JoinHandle<Result<(), String>>),
    /// The start checkpoint is recorded and a tool that may change files ran: the end is due.
    Used,
}

/// The checkpoints of one run.
pub(super) struct RunCheckpoints {
    store: Option<Arc<Checkpoints>>,
    run: RunId,
    limits: CheckpointConfig,
    state: tokio::sync::Mutex<State>,
}

impl RunCheckpoints {
    /// Starts recording the start checkpoint of `run` in `store`, if checkpoints are on.
    pub(super) fn start(
        store: Option<Arc<Checkpoints>>,
        run: RunId,
        limits: CheckpointConfig,
    ) -> RunCheckpoints {
        let state = match &store {
            Some(store) => State::Starting(record(store.clone(), run, Point::Start, limits)),
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

fn record(
    store: Arc<Checkpoints>,
    run: RunId,
    point: Point,
    limits: CheckpointConfig,
) -> JoinHandle<Result<(), String>> {
    tokio::task::spawn_blocking(move || {
        store
            .record(run, point, &limits)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
}

async fn finished(task: JoinHandle<Result<(), String>>) -> Result<(), String> {
    task.await.map_err(|e| e.to_string())?
}

impl Run {
    /// Before a batch of calls: if one of `names` may change files, waits for the start
    /// checkpoint (once per run).
    pub(super) async fn checkpoint_before<'a>(&self, mut names: impl Iterator<Item = &'a str>) {
        if !names.any(|name| !self.concurrency_safe(name)) {
            return;
        }
        let mut state = self.checkpoints.state.lock().await;
        if !matches!(*state, State::Starting(_)) {
            return;
        }
        let State::Starting(task) = std::mem::replace(&mut *state, State::Off) else {
            return;
        };
        match finished(task).await {
            Ok(()) => *state = State::Used,
            Err(err) => self.emit(Event::Error {
                message: format!("no checkpoint of this run, so it cannot be rewound: {err}"),
            }),
        }
    }

    /// At the end of the run: records the end checkpoint of a run that may have changed files,
    /// and forgets the start of one that did not.
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
            State::Off => {}
            State::Starting(task) => {
                if finished(task).await.is_ok() {
                    let (store, run) = (store.clone(), checkpoints.run);
                    let _ = tokio::task::spawn_blocking(move || store.forget(run)).await;
                }
            }
            State::Used => {
                let end = record(
                    store.clone(),
                    checkpoints.run,
                    Point::End,
                    checkpoints.limits,
                );
                if let Err(err) = finished(end).await {
                    self.emit(Event::Error {
                        message: format!("the end of this run could not be recorded: {err}"),
                    });
                }
            }
        }
    }
}
