//! The background shells of one session (docs/architecture.md#background-shells): numbered
//! from 1 for the session's life (numbers go on across daemons, from its log), each with its
//! ring of output and how it ended. The registry lives with the session, not with a run: the
//! session hands a handle to each run, and the tools reach it through their context. It tells
//! the session of each start and end through the reporter it was made with, whether a run is
//! going or not.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use protocol::{ShellEnd, ShellInfo};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::ring::{Ring, Unread};

/// The bytes of output each shell keeps.
pub(crate) const RING_BYTES: usize = 1 << 20;
/// Shells running at once per session, unless configured.
pub(crate) const DEFAULT_LIMIT: u32 = 8;
/// Ended shells a session keeps listing (the oldest are forgotten).
const KEPT_ENDED: usize = 32;
/// Ended shells whose whole ring is kept for a late look; older ones keep their last lines.
const KEPT_RINGS: usize = 8;
/// The lines and bytes of a shell's last output in a listing.
const TAIL_LINES: usize = 10;
/// See [`TAIL_LINES`].
const TAIL_BYTES: usize = 2048;
/// How long ending a shell waits for its processes to be gone and its sandbox looked at.
const END_WAIT: Duration = Duration::from_secs(10);
/// A wait that saw output returns once no more came for this long...
const QUIET: Duration = Duration::from_millis(50);
/// ...or this long after the output came, whichever is first.
const SETTLE: Duration = Duration::from_millis(300);

/// A shell started or ended: what the session stores as `ShellStarted` and `ShellEnded`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ShellNews {
    /// A shell started.
    Started {
        /// Its number.
        shell: u32,
        /// Its command line.
        command: String,
    },
    /// A shell ended.
    Ended {
        /// Its number.
        shell: u32,
        /// How.
        end: ShellEnd,
    },
}

/// Where a registry sends its news (the session's actor).
pub(crate) type Reporter = Arc<dyn Fn(ShellNews) + Send + Sync>;

/// A handle to a session's shells; clones share them. Each handle carries the limit of shells
/// running at once that starts through it obey (the configuration of the run it was given to).
#[derive(Clone)]
pub struct Shells {
    /// The shells.
    registry: Arc<Mutex<Registry>>,
    /// Where starts and ends are told.
    report: Reporter,
    /// Shells running at once.
    limit: u32,
}

impl std::fmt::Debug for Shells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shells")
            .field("limit", &self.limit)
            .finish()
    }
}

/// The shells of a session, by number.
#[derive(Default)]
struct Registry {
    /// The number of the next shell.
    next: u32,
    /// Every shell the session still lists.
    shells: BTreeMap<u32, Entry>,
}

/// One shell as the registry lists it.
struct Entry {
    /// Its command line.
    command: String,
    /// When it started, milliseconds since the Unix epoch.
    started_ms: u64,
    /// Its output and state, shared with its keeper and its readers.
    shell: Arc<Shell>,
}

/// One shell's output and state, shared by its keeper (the task that owns its processes), the
/// registry and the calls that look at it.
pub(crate) struct Shell {
    /// Its output and end.
    state: Mutex<State>,
    /// Woken when output comes or the shell ends.
    changed: Notify,
    /// Asks the keeper to end the shell.
    pub(crate) kill: CancellationToken,
    /// Fires once its processes are gone and everything about them was said.
    over: CancellationToken,
}

/// What changes of a shell.
struct State {
    /// What it printed.
    ring: Ring,
    /// How it ended; `None` while it runs.
    end: Option<ShellEnd>,
    /// The session ended it (deletion, the daemon's stop): its end is not reported.
    quiet: bool,
}

/// What a look at a shell saw.
#[derive(Debug)]
pub(crate) struct Look {
    /// What came since the last look.
    pub(crate) unread: Unread,
    /// How it ended; `None` while it runs.
    pub(crate) end: Option<ShellEnd>,
    /// Bytes it printed in all.
    pub(crate) written: u64,
}

impl Shell {
    /// A shell that runs, with an empty ring.
    fn running() -> Shell {
        Shell {
            state: Mutex::new(State {
                ring: Ring::new(RING_BYTES),
                end: None,
                quiet: false,
            }),
            changed: Notify::new(),
            kill: CancellationToken::new(),
            over: CancellationToken::new(),
        }
    }

    /// A shell known only from the session's log: no process is behind it.
    fn restored() -> Shell {
        let shell = Shell::running();
        shell.over.cancel();
        shell
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds output as it was read.
    pub(crate) fn push(&self, bytes: &[u8]) {
        self.state().ring.push(bytes);
        self.changed.notify_waiters();
    }

    /// How it ended, if it did.
    pub(crate) fn end(&self) -> Option<ShellEnd> {
        self.state().end.clone()
    }

    /// What came since the last look (at most `limit` bytes), and how the shell stands.
    pub(crate) fn look(&self, limit: usize) -> Look {
        let mut state = self.state();
        Look {
            unread: state.ring.take_unread(limit),
            end: state.end.clone(),
            written: state.ring.written(),
        }
    }

    /// The last lines it printed.
    pub(crate) fn tail(&self) -> String {
        self.state().ring.tail(TAIL_LINES, TAIL_BYTES)
    }

    /// Waits until output came that was not looked at, the shell ended, `wait` passed or
    /// `cancel` fired. Output that came lets the rest of its burst arrive too (until
    /// [`QUIET`] passes without more, at most [`SETTLE`]), so a line is not cut where a
    /// program wrote it in pieces.
    pub(crate) async fn wait_for_news(&self, wait: Duration, cancel: &CancellationToken) {
        let deadline = tokio::time::Instant::now() + wait;
        let mut settled: Option<tokio::time::Instant> = None;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before the state is looked at: no wake-up falls in between.
            changed.as_mut().enable();
            {
                let state = self.state();
                if state.end.is_some() {
                    return;
                }
                if state.ring.has_unread() && settled.is_none() {
                    settled = Some((tokio::time::Instant::now() + SETTLE).min(deadline));
                }
            }
            let until = match settled {
                Some(settled) => settled.min(tokio::time::Instant::now() + QUIET),
                None => deadline,
            };
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep_until(until) => return,
                () = cancel.cancelled() => return,
            }
        }
    }

    /// Waits (at most [`END_WAIT`]) until its processes are gone and its end was said.
    pub(crate) async fn wait_over(&self) {
        let _ = tokio::time::timeout(END_WAIT, self.over.cancelled()).await;
    }
}

impl Shells {
    /// The shells of a session that hears of their starts and ends through `report`.
    pub(crate) fn new(report: Reporter) -> Shells {
        Shells {
            registry: Arc::default(),
            report,
            limit: DEFAULT_LIMIT,
        }
    }

    /// Shells that tell nobody (tests and benchmarks).
    pub(crate) fn detached() -> Shells {
        Shells::new(Arc::new(|_| {}))
    }

    /// A handle to the same shells whose starts obey `limit`.
    pub(crate) fn with_limit(&self, limit: u32) -> Shells {
        Shells {
            limit,
            ..self.clone()
        }
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the next number for a shell that runs `command`, unless the limit of shells
    /// running at once is reached (the error says which run and how to end one).
    pub(crate) fn reserve(&self, command: &str) -> Result<(u32, Arc<Shell>), String> {
        let mut registry = self.registry();
        let running: Vec<String> = registry
            .shells
            .iter()
            .filter(|(_, e)| e.shell.end().is_none())
            .map(|(n, e)| format!("{n} ({})", short(&e.command)))
            .collect();
        if running.len() >= self.limit as usize {
            return Err(if self.limit == 0 {
                "background shells are turned off ([tools] max_background_shells = 0); run the \
                 command without \"background\""
                    .to_string()
            } else {
                format!(
                    "refused: this session already runs {} background shells, its limit \
                     ([tools] max_background_shells); end one with kill_shell first. Running: {}",
                    running.len(),
                    running.join(", ")
                )
            });
        }
        let number = registry.next.max(1);
        registry.next = number.saturating_add(1);
        let shell = Arc::new(Shell::running());
        registry.shells.insert(
            number,
            Entry {
                command: command.to_string(),
                started_ms: crate::now_ms(),
                shell: shell.clone(),
            },
        );
        registry.forget_oldest_ended();
        Ok((number, shell))
    }

    /// Gives back a number whose shell did not start.
    pub(crate) fn unreserve(&self, number: u32) {
        let mut registry = self.registry();
        registry.shells.remove(&number);
        if registry.next == number.saturating_add(1) {
            registry.next = number;
        }
    }

    /// Says that shell `number` started.
    pub(crate) fn announce(&self, number: u32, command: &str) {
        (self.report)(ShellNews::Started {
            shell: number,
            command: command.to_string(),
        });
    }

    /// The keeper of shell `number` is done: it ended as `end` (unless the session ended it
    /// already), and everything about it was said.
    pub(crate) fn finish(&self, number: u32, shell: &Shell, end: ShellEnd) {
        let told = {
            let mut state = shell.state();
            let end = state.end.get_or_insert(end).clone();
            (!state.quiet).then_some(end)
        };
        if let Some(end) = told {
            (self.report)(ShellNews::Ended { shell: number, end });
        }
        self.registry().forget_oldest_ended();
        shell.over.cancel();
        shell.changed.notify_waiters();
    }

    /// Shell `number`, or an error that lists the session's shells.
    pub(crate) fn find(&self, number: u32) -> Result<Arc<Shell>, String> {
        let registry = self.registry();
        if let Some(entry) = registry.shells.get(&number) {
            return Ok(entry.shell.clone());
        }
        let known: Vec<String> = registry
            .shells
            .iter()
            .map(|(n, e)| {
                let state = e
                    .shell
                    .end()
                    .map_or("running".to_string(), |end| end.to_string());
                format!("{n} ({state}: {})", short(&e.command))
            })
            .collect();
        Err(if known.is_empty() {
            format!(
                "no background shell {number}: this session has none; start one with bash and \
                 \"background\": true"
            )
        } else {
            format!(
                "no background shell {number} in this session; its shells are: {}",
                known.join(", ")
            )
        })
    }

    /// The command line of shell `number`.
    pub(crate) fn command(&self, number: u32) -> Option<String> {
        self.registry()
            .shells
            .get(&number)
            .map(|e| e.command.clone())
    }

    /// Ends shell `number` and its process group, and waits until it is over; how it ended
    /// (it may have ended by itself before), and whether this call ended it.
    pub(crate) async fn kill(&self, number: u32) -> Result<(ShellEnd, bool), String> {
        let shell = self.find(number)?;
        if let Some(end) = shell.end() {
            return Ok((end, false));
        }
        shell.kill.cancel();
        shell.wait_over().await;
        Ok((shell.end().unwrap_or(ShellEnd::Killed), true))
    }

    /// Ends every running shell without telling (the session is deleted or the daemon
    /// stops), and waits until they are over; their numbers.
    pub(crate) async fn end_all(&self) -> Vec<u32> {
        let running: Vec<(u32, Arc<Shell>)> = {
            let registry = self.registry();
            registry
                .shells
                .iter()
                .filter(|(_, e)| !e.shell.over.is_cancelled())
                .map(|(n, e)| (*n, e.shell.clone()))
                .collect()
        };
        for (_, shell) in &running {
            let mut state = shell.state();
            state.quiet = true;
            state.end.get_or_insert(ShellEnd::Lost);
            drop(state);
            shell.kill.cancel();
        }
        futures::future::join_all(running.iter().map(|(_, s)| s.wait_over())).await;
        running.into_iter().map(|(n, _)| n).collect()
    }

    /// How many shells run now.
    pub(crate) fn running(&self) -> usize {
        self.registry()
            .shells
            .values()
            .filter(|e| e.shell.end().is_none())
            .count()
    }

    /// Every shell the session lists, in the order they started.
    pub(crate) fn list(&self) -> Vec<ShellInfo> {
        self.registry()
            .shells
            .iter()
            .map(|(n, e)| {
                let state = e.shell.state();
                ShellInfo {
                    shell: *n,
                    command: e.command.clone(),
                    started_ms: e.started_ms,
                    end: state.end.clone(),
                    tail: state.ring.tail(TAIL_LINES, TAIL_BYTES),
                    bytes: state.ring.written(),
                }
            })
            .collect()
    }

    /// A shell the session's log says started at `time_ms` (while the session is loaded).
    pub(crate) fn restore_started(&self, number: u32, command: &str, time_ms: u64) {
        let mut registry = self.registry();
        registry.next = registry.next.max(number.saturating_add(1));
        registry.shells.insert(
            number,
            Entry {
                command: command.to_string(),
                started_ms: time_ms,
                shell: Arc::new(Shell::restored()),
            },
        );
        registry.forget_oldest_ended();
    }

    /// A shell the session's log says ended.
    pub(crate) fn restore_ended(&self, number: u32, end: &ShellEnd) {
        if let Some(entry) = self.registry().shells.get(&number) {
            entry.shell.state().end = Some(end.clone());
        }
    }

    /// Shells the log says started and did not end, with no process behind them here (the
    /// daemon that ran them stopped): they count as lost from now. Their numbers and commands.
    pub(crate) fn lose_orphans(&self) -> Vec<(u32, String)> {
        let registry = self.registry();
        let mut lost = Vec::new();
        for (n, entry) in &registry.shells {
            let mut state = entry.shell.state();
            if state.end.is_none() && entry.shell.over.is_cancelled() {
                state.end = Some(ShellEnd::Lost);
                lost.push((*n, entry.command.clone()));
            }
        }
        lost
    }
}

impl Registry {
    /// Forgets the oldest ended shells beyond [`KEPT_ENDED`], and keeps the whole ring of the
    /// newest [`KEPT_RINGS`] ended ones only: a session's memory stays within its running
    /// shells' rings and a few more.
    fn forget_oldest_ended(&mut self) {
        let ended: Vec<u32> = self
            .shells
            .iter()
            .filter(|(_, e)| e.shell.end().is_some())
            .map(|(n, _)| *n)
            .collect();
        for number in ended.iter().take(ended.len().saturating_sub(KEPT_ENDED)) {
            self.shells.remove(number);
        }
        let older = ended.len().saturating_sub(KEPT_RINGS);
        for number in ended.iter().take(older) {
            if let Some(entry) = self.shells.get(number) {
                entry.shell.state().ring.shrink(TAIL_BYTES);
            }
        }
    }
}

/// A command line cut short for a list.
pub(crate) fn short(command: &str) -> String {
    let line = command.lines().next().unwrap_or_default();
    let mut short: String = line.chars().take(60).collect();
    if short.len() < command.len() {
        short.push('…');
    }
    short
}
