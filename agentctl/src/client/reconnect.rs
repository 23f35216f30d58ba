//! Reaching the daemon again after it went away: a `daemon restart`, an upgrade, a service
//! manager's restart, a crash. A [`Feed`](super::Feed) or [`Summaries`](super::Summaries) given
//! a [`Reconnect`] tries again and again for a while (30 s, or `AGENTCTL_RECONNECT_SECS`), then
//! follows its sessions again from where it was.
//!
//! The library does not know how the binary reaches or starts its daemon: the front end gives
//! the one attempt ([`Reconnect::new`]). When the daemon said it stops (someone is in charge of
//! it: a restart starts the next one) attempts only connect; when it died without a word, they
//! may start one after [`START_AFTER`], as commands do. Racing a `daemon restart` that starts
//! one at the same moment is harmless: the daemon's pid file lock lets one of them run, and the
//! other start connects to it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::connection::Client;

/// The environment variable that says how many seconds a client waits for the daemon to come
/// back before it gives up (`0`: it does not wait).
pub const PATIENCE_VAR: &str = "AGENTCTL_RECONNECT_SECS";

/// How long a client waits for the daemon to come back unless [`PATIENCE_VAR`] says otherwise.
pub const DEFAULT_PATIENCE: Duration = Duration::from_secs(30);

/// How long after a daemon died without a word a client starts one itself.
pub const START_AFTER: Duration = Duration::from_secs(1);

/// The longest pause between two attempts.
const MAX_PAUSE: Duration = Duration::from_millis(100);

/// Why one attempt to reach the daemon failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreachable {
    /// Nobody answers yet (the daemon is stopping or starting): try again.
    Away(String),
    /// A daemon answered but this client cannot use it (another protocol version, not the
    /// user's own): trying again does not help.
    Refused(String),
}

/// Why the daemon could not be reached again: the end of a feed that had lost it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GaveUp {
    /// It did not come back within the patience; `last` says what the last attempt met.
    #[error("the daemon did not come back within {} s ({last})", .patience.as_secs())]
    TimedOut {
        /// How long the client waited.
        patience: Duration,
        /// Why the last attempt failed.
        last: String,
    },
    /// A daemon answered but this client cannot use it ([`Unreachable::Refused`]).
    #[error("{0}")]
    Refused(String),
}

/// What is known of the connection that was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    /// The daemon's process id.
    pub pid: u32,
    /// The daemon said it stops on purpose (see [`Client::daemon_stopping`]).
    pub stopping: bool,
    /// When the connection ended.
    pub at: Instant,
}

impl Lost {
    /// What `client`, whose connection just ended, tells of it.
    pub fn of(client: &Client) -> Lost {
        Lost {
            pid: client.welcome().pid,
            stopping: client.daemon_stopping(),
            at: Instant::now(),
        }
    }
}

type Attempt = Pin<Box<dyn Future<Output = Result<Client, Unreachable>> + Send>>;
type ConnectFn = dyn Fn(bool) -> Attempt + Send + Sync;

/// How a front end reaches the daemon again, and for how long it tries; cheap to clone.
#[derive(Clone)]
pub struct Reconnect {
    connect: Arc<ConnectFn>,
    patience: Duration,
}

impl std::fmt::Debug for Reconnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reconnect")
            .field("patience", &self.patience)
            .finish_non_exhaustive()
    }
}

impl Reconnect {
    /// Reaches the daemon with `connect`, one attempt per call; its argument says whether it may
    /// start a daemon when none runs. Waits as long as [`Reconnect::patience_from_env`] says.
    pub fn new<F, Fut>(connect: F) -> Reconnect
    where
        F: Fn(bool) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Client, Unreachable>> + Send + 'static,
    {
        Reconnect {
            connect: Arc::new(move |start| Box::pin(connect(start)) as Attempt),
            patience: Reconnect::patience_from_env(),
        }
    }

    /// The same, waiting `patience` at most for the daemon to come back.
    pub fn with_patience(mut self, patience: Duration) -> Reconnect {
        self.patience = patience;
        self
    }

    /// How long to wait for the daemon: [`PATIENCE_VAR`] seconds, else [`DEFAULT_PATIENCE`].
    pub fn patience_from_env() -> Duration {
        std::env::var(PATIENCE_VAR)
            .ok()
            .and_then(|secs| secs.trim().parse::<f64>().ok())
            .filter(|secs| secs.is_finite() && *secs >= 0.0)
            // A day is patience enough; more would overflow a `Duration`.
            .map_or(DEFAULT_PATIENCE, |secs| {
                Duration::from_secs_f64(secs.min(86_400.0))
            })
    }

    /// How long the daemon may stay away.
    pub fn patience(&self) -> Duration {
        self.patience
    }

    /// Whether it tries at all (a patience of zero turns reconnecting off).
    pub fn enabled(&self) -> bool {
        !self.patience.is_zero()
    }

    /// A new connection, once the daemon is back; the reason to give up when it has not come
    /// back within the patience since the connection was `lost`, or when it refuses. A daemon
    /// that said it stops is not connected to again while it still accepts.
    pub async fn connect(&self, lost: &Lost) -> Result<Client, GaveUp> {
        let deadline = lost.at + self.patience;
        let mut pause = Duration::from_millis(5);
        let mut last = String::from("nobody answered");
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(GaveUp::TimedOut {
                    patience: self.patience,
                    last,
                });
            }
            // A daemon that stopped on purpose is someone else's to start.
            let start = !lost.stopping && now.duration_since(lost.at) >= START_AFTER;
            match tokio::time::timeout(deadline - now, (self.connect)(start)).await {
                Ok(Ok(client)) if lost.stopping && client.welcome().pid == lost.pid => {
                    last = "the old daemon is still stopping".to_string();
                }
                Ok(Ok(client)) => return Ok(client),
                Ok(Err(Unreachable::Refused(reason))) => return Err(GaveUp::Refused(reason)),
                Ok(Err(Unreachable::Away(reason))) => last = reason,
                Err(_) => {}
            }
            tokio::time::sleep(pause.min(deadline.saturating_duration_since(Instant::now()))).await;
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn giving_up_says_how_long_the_client_waited_and_what_it_met() {
        let gave_up = GaveUp::TimedOut {
            patience: Duration::from_secs(30),
            last: "the old daemon is still stopping".into(),
        };
        assert_eq!(
            gave_up.to_string(),
            "the daemon did not come back within 30 s (the old daemon is still stopping)"
        );
        let refused = GaveUp::Refused("protocol 14, this agentctl speaks 15".into());
        assert_eq!(refused.to_string(), "protocol 14, this agentctl speaks 15");
    }
}
