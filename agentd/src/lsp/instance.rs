//! One (root, server) pair of the pool: started on first need, shared by every session with
//! files under the root, started again after a crash (at once the first time, then with a
//! growing wait), failed after repeated crashes, stopped when idle.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use protocol::{LspServerInfo, SessionId};

use super::confine::ServerSandbox;
use super::documents::Documents;
use super::published::PublishedStore;
use super::select::ServerSpec;
use super::server::Live;
use crate::tools::processes::ProcessRecords;

/// Crashes (or failed starts) within [`CRASH_WINDOW`] after which a server is not started again
/// until the window has passed.
const FAILED_AFTER: usize = 5;
/// The window crashes are counted in.
const CRASH_WINDOW: Duration = Duration::from_secs(600);

/// A running server with the files it has open.
pub(crate) struct Running {
    /// The connection and process.
    pub(crate) live: Live,
    /// Its open files; one change at a time.
    pub(crate) docs: tokio::sync::Mutex<Documents>,
}

/// One server for one root.
pub(crate) struct Instance {
    /// What it runs.
    pub(crate) spec: ServerSpec,
    /// Its root.
    pub(crate) root: PathBuf,
    /// Its diagnostics, by file.
    pub(crate) published: PublishedStore,
    slot: tokio::sync::Mutex<Slot>,
    last_used: Mutex<Instant>,
    /// Uses going on (a start, a wait for diagnostics): an instance in use is not idle.
    busy: AtomicUsize,
    /// The sessions that used it, as `agentctl lsp list` shows them.
    sessions: Mutex<BTreeSet<SessionId>>,
    /// Fired when it is stopped for good: a start under way gives up at once.
    stopping: tokio_util::sync::CancellationToken,
}

/// A use of an instance: while it lives the instance is not idle, and its end counts as the
/// last use.
pub(crate) struct InUse(Arc<Instance>);

impl InUse {
    /// The instance in use.
    pub(crate) fn instance(&self) -> &Arc<Instance> {
        &self.0
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The running server, if any, and its history of crashes.
#[derive(Default)]
struct Slot {
    running: Option<Arc<Running>>,
    /// Stopped for good (idle, or the daemon stopping): it is not started again.
    retired: bool,
    crashes: Vec<Instant>,
    /// Crashes (and failed starts) since the instance was made.
    restarts: u32,
    last_error: Option<String>,
}

impl Instance {
    /// An instance of `spec` for `root`, not started.
    pub(crate) fn new(spec: ServerSpec, root: PathBuf) -> Instance {
        Instance {
            spec,
            root,
            published: PublishedStore::default(),
            slot: tokio::sync::Mutex::default(),
            last_used: Mutex::new(Instant::now()),
            busy: AtomicUsize::new(0),
            sessions: Mutex::default(),
            stopping: tokio_util::sync::CancellationToken::new(),
        }
    }

    /// Records that `session` uses the instance.
    pub(crate) fn used_by(&self, session: &SessionId) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: a long-lived server does not list every session it ever served.
        if sessions.len() < 64 || sessions.contains(session) {
            sessions.insert(session.clone());
        }
    }

    /// Whether `session` uses the instance.
    pub(crate) fn is_used_by(&self, session: &SessionId) -> bool {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(session)
    }

    /// Records that `session` no longer uses the instance (it was unloaded or deleted).
    pub(crate) fn not_used_by(&self, session: &SessionId) {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(session);
    }

    /// The instance as `agentctl lsp list` shows it. A start holds the slot, so a slot taken
    /// counts as starting.
    pub(crate) fn info(&self) -> LspServerInfo {
        let (state, pid, restarts, last_error) = match self.slot.try_lock() {
            Err(_) => ("starting", None, 0, None),
            Ok(slot) => {
                let state = match &slot.running {
                    _ if slot.retired => "stopped",
                    Some(running) if running.live.alive() => "ready",
                    Some(_) => "restarting",
                    None if slot.crashes.len() >= FAILED_AFTER => "failed",
                    None if !slot.crashes.is_empty() => "restarting",
                    None => "starting",
                };
                let pid = slot.running.as_ref().map(|r| r.live.pid);
                (state, pid, slot.restarts, slot.last_error.clone())
            }
        };
        LspServerInfo {
            name: self.spec.name.clone(),
            root: self.root.display().to_string(),
            state: state.to_string(),
            pid,
            sessions: self
                .sessions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .cloned()
                .collect(),
            languages: self.spec.languages.clone(),
            restarts,
            last_error,
        }
    }

    /// Marks the instance as in use until the guard is dropped.
    pub(crate) fn hold(self: &Arc<Self>) -> InUse {
        self.busy.fetch_add(1, Ordering::SeqCst);
        self.touch();
        InUse(self.clone())
    }

    /// Marks the instance as used now.
    pub(crate) fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// How long ago it was last used (nothing while in use).
    pub(crate) fn idle_for(&self) -> Duration {
        if self.busy.load(Ordering::SeqCst) > 0 {
            return Duration::ZERO;
        }
        self.last_used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }

    /// The running server, started (or started again after a crash) when there is none, with
    /// `env`, in `sandbox` when `sandboxed`; an error says why it cannot run now. A server
    /// that runs otherwise than `sandboxed` says (`[lsp] sandbox` changed) is started anew.
    pub(crate) async fn ensure(
        &self,
        env: &[(String, String)],
        records: &ProcessRecords,
        sandbox: &ServerSandbox,
        sandboxed: bool,
    ) -> Result<Arc<Running>, String> {
        let name = &self.spec.name;
        let mut slot = self.slot.lock().await;
        if slot.retired {
            return Err(format!("language server {name} was stopped; try again"));
        }
        if let Some(running) = &slot.running
            && running.live.alive()
            && running.live.confined != sandboxed
        {
            tracing::info!(server = %name, root = %self.root.display(), sandboxed, "[lsp] sandbox changed; starting the language server anew");
            running.live.stop().await;
            slot.running = None;
            self.published.clear();
        }
        if let Some(running) = &slot.running {
            if running.live.alive() {
                return Ok(running.clone());
            }
            let error = format!("exited{}", running.live.stderr_tail());
            tracing::warn!(server = %name, root = %self.root.display(), "language server {error}; it is started again");
            slot.crashes.push(Instant::now());
            slot.restarts = slot.restarts.saturating_add(1);
            slot.last_error = Some(error);
            slot.running = None;
            self.published.clear();
        }
        slot.crashes.retain(|at| at.elapsed() < CRASH_WINDOW);
        let last_error = slot.last_error.clone().unwrap_or_default();
        if slot.crashes.len() >= FAILED_AFTER {
            return Err(format!(
                "language server {name} failed {FAILED_AFTER} times in {} minutes ({last_error}); it is not started again for a while",
                CRASH_WINDOW.as_secs() / 60
            ));
        }
        if let Some(last) = slot.crashes.last() {
            let wait = backoff(slot.crashes.len());
            if last.elapsed() < wait {
                return Err(format!(
                    "language server {name} is started again in {} s ({last_error})",
                    (wait - last.elapsed()).as_secs().max(1)
                ));
            }
        }
        let started = Instant::now();
        let started_live = Live::start(
            &self.spec,
            &self.root,
            env,
            records,
            sandbox,
            sandboxed,
            self.published.clone(),
        );
        let started_live = tokio::select! {
            started = started_live => started,
            () = self.stopping.cancelled() => Err("stopped while starting".to_string()),
        };
        match started_live {
            Ok(live) => {
                tracing::info!(
                    server = %name,
                    root = %self.root.display(),
                    pid = live.pid,
                    sandboxed = live.confined,
                    ms = started.elapsed().as_millis() as u64,
                    "language server ready"
                );
                let running = Arc::new(Running {
                    live,
                    docs: tokio::sync::Mutex::default(),
                });
                slot.running = Some(running.clone());
                Ok(running)
            }
            Err(error) => {
                tracing::warn!(server = %name, root = %self.root.display(), "language server failed to start: {error}");
                slot.crashes.push(Instant::now());
                slot.restarts = slot.restarts.saturating_add(1);
                slot.last_error = Some(error.clone());
                Err(format!(
                    "language server {name} failed to start: {error} (check [lsp.{name}] in config.toml)"
                ))
            }
        }
    }

    /// The running server, if there is one, without starting it.
    pub(crate) async fn running(&self) -> Option<Arc<Running>> {
        self.slot.lock().await.running.clone()
    }

    /// Stops the server for good if it runs: `shutdown`, `exit`, and its group killed.
    pub(crate) async fn stop(&self) {
        self.stopping.cancel();
        let running = {
            let mut slot = self.slot.lock().await;
            slot.retired = true;
            slot.running.take()
        };
        if let Some(running) = running {
            tracing::info!(server = %self.spec.name, root = %self.root.display(), pid = running.live.pid, "stopping language server");
            running.live.stop().await;
        }
        self.published.clear();
    }
}

/// The wait before starting a server again after `crashes` crashes in a row: none after the
/// first, then 1, 2, 4 ... seconds, at most a minute.
fn backoff(crashes: usize) -> Duration {
    let after_the_first = u32::try_from(crashes.saturating_sub(1)).unwrap_or(u32::MAX);
    crate::restart_backoff::backoff(after_the_first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_crash_restarts_at_once_and_later_ones_wait_longer() {
        assert_eq!(backoff(1), Duration::ZERO);
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(4), Duration::from_secs(4));
        assert_eq!(backoff(40), Duration::from_secs(60));
    }
}
