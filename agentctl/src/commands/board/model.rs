//! What the board shows: every session's latest summary, of every host, arranged in groups
//! with subagents under their parent, the hosts that cannot be reached, the selection, the
//! filter, and which requests are new (for the bell and the guard against keys typed before a
//! question).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use protocol::{Group, PendingSummary, PermissionRequestId, SessionId, SessionSummary};

use super::arrange::{self, Key, Row};

/// Keys that answer a request are ignored this long after it appeared.
pub const ANSWER_GUARD: Duration = Duration::from_millis(300);

/// A request, as the board tells requests apart: (the session shown, the asker, the number).
type AskKey = (Key, Option<SessionId>, PermissionRequestId);

/// What the board knows of one host.
#[derive(Debug, Default, Clone)]
pub struct HostState {
    /// The name shown on its rows.
    pub label: String,
    /// Every one of its sessions has been summarised once (since it was last reached).
    pub ready: bool,
    /// Why it cannot be reached now, while it cannot.
    pub unreachable: Option<String>,
}

/// The board's state.
#[derive(Default)]
pub struct Board {
    /// Every host shown, in the order given; one host (this machine's daemon, or one `--host`)
    /// shows no host column.
    hosts: Vec<HostState>,
    sessions: HashMap<Key, SessionSummary>,
    /// When each pending request was first seen here.
    seen: HashMap<AskKey, Instant>,
    rows: Vec<Row>,
    selected: Option<Key>,
    /// Only sessions whose title, directory, id or host contain this (case-insensitive).
    pub filter: String,
    ready: bool,
}

impl Board {
    /// A board for the hosts named `labels`, in that order.
    pub fn new(labels: Vec<String>) -> Board {
        Board {
            hosts: labels
                .into_iter()
                .map(|label| HostState {
                    label,
                    ..HostState::default()
                })
                .collect(),
            ..Board::default()
        }
    }

    /// Whether rows name their host (there are several).
    pub fn several_hosts(&self) -> bool {
        self.hosts.len() > 1
    }

    /// The hosts, in the order given.
    pub fn hosts(&self) -> &[HostState] {
        &self.hosts
    }

    /// Takes in new summaries and deletions of host number `host`; returns the sessions that
    /// started needing you (only once that host's first summaries are in: a board that opens,
    /// or a host that comes back, does not ring).
    pub fn apply(
        &mut self,
        host: usize,
        updated: Vec<SessionSummary>,
        removed: &[SessionId],
        ready: bool,
    ) -> Vec<Key> {
        let now = Instant::now();
        let host_ready = self.hosts.get(host).is_some_and(|h| h.ready);
        let mut new_asks = Vec::new();
        for summary in updated {
            let key = Key::new(host, summary.info.id.clone());
            for ask in &summary.pending {
                let ask_key = (key.clone(), ask.session.clone(), ask.request);
                if let std::collections::hash_map::Entry::Vacant(entry) = self.seen.entry(ask_key) {
                    entry.insert(now);
                    if self.ready && host_ready && !new_asks.contains(&key) {
                        new_asks.push(key.clone());
                    }
                }
            }
            self.sessions.insert(key, summary);
        }
        for id in removed {
            self.sessions.remove(&Key::new(host, id.clone()));
        }
        if ready && let Some(h) = self.hosts.get_mut(host) {
            h.ready = true;
            h.unreachable = None;
        }
        self.settle();
        new_asks
    }

    /// Host number `host` cannot be reached (`reason`): its sessions leave the board until it
    /// is back, and the board says so on a line of its own.
    pub fn unreachable(&mut self, host: usize, reason: String) {
        let Some(h) = self.hosts.get_mut(host) else {
            return;
        };
        h.unreachable = Some(reason);
        h.ready = false;
        self.sessions.retain(|key, _| key.host != host);
        self.settle();
    }

    /// Host number `host` went away and its feed is reaching it again (`reason`): its
    /// sessions stay as last seen, and the board says it is reconnecting.
    pub fn reconnecting(&mut self, host: usize, reason: String) {
        if let Some(h) = self.hosts.get_mut(host) {
            h.unreachable = Some(reason);
        }
        self.arrange();
    }

    /// Forgets answered requests, lays the rows out again, and once every host was heard from
    /// (summarised, or found unreachable) opens on the oldest request.
    fn settle(&mut self) {
        // Requests no longer pending are forgotten.
        let pending: HashSet<AskKey> = self
            .sessions
            .iter()
            .flat_map(|(key, s)| {
                s.pending
                    .iter()
                    .map(|p| (key.clone(), p.session.clone(), p.request))
            })
            .collect();
        self.seen.retain(|key, _| pending.contains(key));
        let opening = !self.ready
            && self
                .hosts
                .iter()
                .all(|h| h.ready || h.unreachable.is_some());
        self.ready |= opening;
        self.arrange();
        if opening {
            self.selected = self.oldest_ask().or_else(|| self.first_session());
        }
    }

    /// Host number `host` is back after its feed reconnected.
    pub fn back(&mut self, host: usize) {
        if let Some(h) = self.hosts.get_mut(host) {
            h.unreachable = None;
        }
        self.arrange();
    }

    /// Whether every host was heard from once.
    pub fn ready(&self) -> bool {
        self.ready
    }

    /// The lines to show.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// A session's summary.
    pub fn summary(&self, key: &Key) -> Option<&SessionSummary> {
        self.sessions.get(key)
    }

    /// The name of host number `host`.
    pub fn label(&self, host: usize) -> &str {
        self.hosts.get(host).map_or("", |h| h.label.as_str())
    }

    /// How many sessions are in each group (top-level sessions only, filter applied).
    pub fn count(&self, group: Group) -> usize {
        self.rows
            .iter()
            .find_map(|row| match row {
                Row::Heading(g, n) if *g == group => Some(*n),
                _ => None,
            })
            .unwrap_or(0)
    }

    /// The selected session.
    pub fn selected(&self) -> Option<&Key> {
        self.selected.as_ref()
    }

    /// The selected session's row.
    pub fn selected_row(&self) -> Option<usize> {
        let selected = self.selected.as_ref()?;
        self.rows
            .iter()
            .position(|row| matches!(row, Row::Session(key, _) if key == selected))
    }

    /// Moves the selection `by` sessions down (up when negative).
    pub fn move_selection(&mut self, by: isize) {
        let sessions: Vec<&Key> = self
            .rows
            .iter()
            .filter_map(|row| match row {
                Row::Session(key, _) => Some(key),
                Row::Heading(..) | Row::Unreachable(_) => None,
            })
            .collect();
        if sessions.is_empty() {
            self.selected = None;
            return;
        }
        let at = self
            .selected
            .as_ref()
            .and_then(|s| sessions.iter().position(|key| *key == s))
            .unwrap_or(0) as isize;
        let to = (at + by).clamp(0, sessions.len() as isize - 1) as usize;
        self.selected = Some(sessions[to].clone());
    }

    /// The selected session's oldest pending request, if it may be answered now (not within
    /// [`ANSWER_GUARD`] of its showing up): the host, the session that asked, the request;
    /// `Err` with the time left when it is too soon.
    pub fn answerable(&self) -> Option<Result<(Key, PendingSummary), Duration>> {
        let key = self.selected.as_ref()?;
        let ask = self
            .sessions
            .get(key)?
            .pending
            .iter()
            .min_by_key(|p| p.since_ms)?;
        let ask_key = (key.clone(), ask.session.clone(), ask.request);
        let age = self
            .seen
            .get(&ask_key)
            .map_or(Duration::ZERO, |at| at.elapsed());
        if age < ANSWER_GUARD {
            return Some(Err(ANSWER_GUARD - age));
        }
        let asker = ask.session.clone().unwrap_or_else(|| key.id.clone());
        Some(Ok((Key::new(key.host, asker), ask.clone())))
    }

    /// Lays the rows out again (after a change or a new filter): first a line for each host
    /// that cannot be reached, then the groups.
    pub fn arrange(&mut self) {
        let labels: Vec<String> = match self.several_hosts() {
            true => self.hosts.iter().map(|h| h.label.clone()).collect(),
            false => Vec::new(),
        };
        let mut rows: Vec<Row> = (0..self.hosts.len())
            .filter(|&i| self.hosts[i].unreachable.is_some())
            .map(Row::Unreachable)
            .collect();
        rows.extend(arrange::rows(&self.sessions, &self.filter, &labels));
        self.rows = rows;
        let visible = self.selected_row().is_some();
        if !visible {
            self.selected = self.first_session();
        }
    }

    /// The first session shown.
    fn first_session(&self) -> Option<Key> {
        self.rows.iter().find_map(|row| match row {
            Row::Session(key, _) => Some(key.clone()),
            Row::Heading(..) | Row::Unreachable(_) => None,
        })
    }

    /// The session shown whose pending request is the oldest.
    fn oldest_ask(&self) -> Option<Key> {
        self.rows
            .iter()
            .filter_map(|row| match row {
                Row::Session(key, _) => self.sessions.get(key).map(|s| (key, s)),
                Row::Heading(..) | Row::Unreachable(_) => None,
            })
            .filter_map(|(key, s)| s.pending.iter().map(|p| p.since_ms).min().map(|t| (t, key)))
            .min_by_key(|(t, _)| *t)
            .map(|(_, key)| key.clone())
    }
}
