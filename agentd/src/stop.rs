//! A planned stop of the daemon (`agentctl daemon restart` or `stop`, SIGTERM from a service
//! manager): from the moment it is asked for, no model turn and no tool call starts; the tool
//! calls already running finish and their results are stored, for at most the grace period;
//! then the daemon stops, and the next one resumes each run from those results. Only a crash
//! (or a stop asked for `--now`, or a grace that ran out) interrupts a command.
//!
//! ```toml
//! [daemon]
//! stop_grace_secs = 30   # 0 stops at once, as `--now` does
//! ```

use std::sync::Arc;
use std::sync::atomic::{Ordering, fence};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The `[daemon]` section of the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct DaemonConfig {
    /// Seconds a planned stop waits for the tool calls already running to finish; 0 stops
    /// them at once.
    pub(crate) stop_grace_secs: u64,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            stop_grace_secs: 30,
        }
    }
}

impl DaemonConfig {
    /// How long a planned stop waits for running tool calls.
    pub(crate) fn stop_grace(&self) -> Duration {
        Duration::from_secs(self.stop_grace_secs)
    }
}

/// The daemon's stop, shared by the daemon (which asks for it and waits), the connections
/// (`Shutdown`) and every run (which starts nothing new once it is asked for); cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct PlannedStop(Arc<Inner>);

#[derive(Default)]
struct Inner {
    /// The stop was asked for: nothing new starts.
    asked: CancellationToken,
    /// The stop is to happen now: running calls are not waited for.
    now: CancellationToken,
    /// Tool calls under way (announced, and not yet answered).
    calls: watch::Sender<usize>,
}

impl PlannedStop {
    /// A stop nobody asked for yet.
    pub(crate) fn new() -> PlannedStop {
        PlannedStop::default()
    }

    /// Asks for the stop; `now` skips the wait for running tool calls (a second request may
    /// hurry a first one).
    pub(crate) fn ask(&self, now: bool) {
        if now {
            self.0.now.cancel();
        }
        self.0.asked.cancel();
        // Paired with the fence in `call`: a call counted before the stop was asked for is
        // waited for, or it sees the stop.
        fence(Ordering::SeqCst);
    }

    /// Whether the stop was asked for.
    pub(crate) fn is_asked(&self) -> bool {
        self.0.asked.is_cancelled()
    }

    /// Waits until the stop is asked for.
    pub(crate) async fn asked(&self) {
        self.0.asked.cancelled().await
    }

    /// Counts a tool call as under way until the returned guard is dropped. Taken before
    /// [`PlannedStop::is_asked`] is looked at, it makes a stop either wait for the call or keep
    /// it from starting.
    pub(crate) fn call(&self) -> RunningCall {
        self.0.calls.send_modify(|n| *n += 1);
        fence(Ordering::SeqCst);
        RunningCall(self.0.clone())
    }

    /// Tool calls under way now.
    pub(crate) fn calls(&self) -> usize {
        *self.0.calls.borrow()
    }

    /// Waits until no tool call is under way, `grace` has passed, or the stop is to happen
    /// now; returns how many calls were still under way.
    pub(crate) async fn drained(&self, grace: Duration) -> usize {
        let mut calls = self.0.calls.subscribe();
        let idle = calls.wait_for(|n| *n == 0);
        tokio::select! {
            _ = idle => {}
            () = tokio::time::sleep(grace) => {}
            () = self.0.now.cancelled() => {}
        }
        self.calls()
    }
}

/// A tool call under way, as a planned stop counts it.
pub(crate) struct RunningCall(Arc<Inner>);

impl Drop for RunningCall {
    fn drop(&mut self) {
        self.0.calls.send_modify(|n| *n = n.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_wait_ends_when_the_last_call_ends() {
        let stop = PlannedStop::new();
        let call = stop.call();
        stop.ask(false);
        assert!(stop.is_asked());
        let waiting = tokio::spawn({
            let stop = stop.clone();
            async move { stop.drained(Duration::from_secs(60)).await }
        });
        drop(call);
        assert_eq!(waiting.await.unwrap(), 0);
    }

    #[tokio::test]
    async fn a_stop_asked_for_now_does_not_wait() {
        let stop = PlannedStop::new();
        let _call = stop.call();
        stop.ask(true);
        assert_eq!(stop.drained(Duration::from_secs(60)).await, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_ends_with_the_grace() {
        let stop = PlannedStop::new();
        let _call = stop.call();
        stop.ask(false);
        assert_eq!(stop.drained(Duration::from_secs(30)).await, 1);
    }
}
