//! The run's checkpoints (SPEC §13): the session directory is recorded before the first tool
//! of the run that may change files, and again when the run ends. A checkpoint that cannot be
//! recorded is reported once, and the run goes on without.

use std::sync::atomic::Ordering;

use protocol::Event;

use super::Run;
use crate::checkpoint::Point;

/// No checkpoint was tried yet in this run.
pub(super) const NOT_YET: u8 = 0;
/// The start checkpoint is recorded: the end one is due.
pub(super) const RECORDED: u8 = 1;
/// Checkpoints are off, or the start one failed.
pub(super) const NONE: u8 = 2;

impl Run {
    /// Records the start checkpoint if `names` has a tool that may change files and none did
    /// before in this run.
    pub(super) async fn checkpoint_before<'a>(&self, mut names: impl Iterator<Item = &'a str>) {
        if self.checkpoint.load(Ordering::Acquire) != NOT_YET
            || !names.any(|name| !self.concurrency_safe(name))
        {
            return;
        }
        let recorded = match self.record(Point::Start).await {
            Ok(()) => RECORDED,
            Err(err) => {
                self.emit(Event::Error {
                    message: format!("no checkpoint of this run, so it cannot be rewound: {err}"),
                });
                NONE
            }
        };
        self.checkpoint.store(recorded, Ordering::Release);
    }

    /// Records the end checkpoint of a run that recorded its start.
    pub(super) async fn checkpoint_end(&self) {
        if self.checkpoint.load(Ordering::Acquire) != RECORDED {
            return;
        }
        if let Err(err) = self.record(Point::End).await {
            self.emit(Event::Error {
                message: format!("the end of this run could not be recorded: {err}"),
            });
        }
    }

    async fn record(&self, point: Point) -> Result<(), String> {
        let Some(checkpoints) = self.setup.checkpoints.clone() else {
            return Err("checkpoints are off".to_string());
        };
        let (run, limits) = (self.setup.run, self.setup.checkpoint_limits);
        tokio::task::spawn_blocking(move || checkpoints.record(run, point, &limits))
            .await
            .map_err(|e| e.to_string())?
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}
