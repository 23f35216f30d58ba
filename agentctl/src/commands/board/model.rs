//! What the board shows: every session's latest summary, arranged in groups with subagents
//! under their parent, the selection, the filter, and which requests are new (for the bell
//! and the guard against keys typed before a question).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use protocol::{Group, PendingSummary, PermissionRequestId, SessionId, SessionSummary};

use super::arrange::{self, Row};

/// Keys that answer a request are ignored this long after it appeared.
pub const ANSWER_GUARD: Duration = Duration::from_millis(300);

/// A request, as the board tells requests apart: (the session shown, the asker, the number).
type AskKey = (SessionId, Option<SessionId>, PermissionRequestId);

/// The board's state.
#[derive(Default)]
pub struct Board {
    sessions: HashMap<SessionId, SessionSummary>,
    /// When each pending request was first seen here.
    seen: HashMap<AskKey, Instant>,
    rows: Vec<Row>,
    selected: Option<SessionId>,
    /// Only sessions whose title, directory or id contain this (case-insensitive).
    pub filter: String,
    ready: bool,
}

impl Board {
    /// Takes in new summaries and deletions; returns the sessions that started needing you
    /// (only once the first summaries are in: a board that opens does not ring).
    pub fn apply(
        &mut self,
        updated: Vec<SessionSummary>,
        removed: &[SessionId],
        ready: bool,
    ) -> Vec<SessionId> {
        let now = Instant::now();
        let mut new_asks = Vec::new();
        for summary in updated {
            let id = summary.info.id.clone();
            for ask in &summary.pending {
                let key = (id.clone(), ask.session.clone(), ask.request);
                if let std::collections::hash_map::Entry::Vacant(entry) = self.seen.entry(key) {
                    entry.insert(now);
                    if self.ready && !new_asks.contains(&id) {
                        new_asks.push(id.clone());
                    }
                }
            }
            self.sessions.insert(id, summary);
        }
        for id in removed {
            self.sessions.remove(id);
        }
        // Requests no longer pending are forgotten.
        let pending: HashSet<AskKey> = self
            .sessions
            .values()
            .flat_map(|s| {
                s.pending
                    .iter()
                    .map(|p| (s.info.id.clone(), p.session.clone(), p.request))
            })
            .collect();
        self.seen.retain(|key, _| pending.contains(key));
        let opening = ready && !self.ready;
        self.ready |= ready;
        self.arrange();
        if opening {
            self.selected = self.oldest_ask().or_else(|| self.first_session());
        }
        new_asks
    }

    /// Whether every session has been summarised once.
    pub fn ready(&self) -> bool {
        self.ready
    }

    /// The lines to show.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// A session's summary.
    pub fn summary(&self, id: &SessionId) -> Option<&SessionSummary> {
        self.sessions.get(id)
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
    pub fn selected(&self) -> Option<&SessionId> {
        self.selected.as_ref()
    }

    /// The selected session's row.
    pub fn selected_row(&self) -> Option<usize> {
        let selected = self.selected.as_ref()?;
        self.rows
            .iter()
            .position(|row| matches!(row, Row::Session(id, _) if id == selected))
    }

    /// Moves the selection `by` sessions down (up when negative).
    pub fn move_selection(&mut self, by: isize) {
        let sessions: Vec<&SessionId> = self
            .rows
            .iter()
            .filter_map(|row| match row {
                Row::Session(id, _) => Some(id),
                Row::Heading(..) => None,
            })
            .collect();
        if sessions.is_empty() {
            self.selected = None;
            return;
        }
        let at = self
            .selected
            .as_ref()
            .and_then(|s| sessions.iter().position(|id| *id == s))
            .unwrap_or(0) as isize;
        let to = (at + by).clamp(0, sessions.len() as isize - 1) as usize;
        self.selected = Some(sessions[to].clone());
    }

    /// The selected session's oldest pending request, if it may be answered now (not within
    /// [`ANSWER_GUARD`] of its showing up); `Err` with the time left when it is too soon.
    pub fn answerable(&self) -> Option<Result<(SessionId, PendingSummary), Duration>> {
        let id = self.selected.as_ref()?;
        let ask = self
            .sessions
            .get(id)?
            .pending
            .iter()
            .min_by_key(|p| p.since_ms)?;
        let key = (id.clone(), ask.session.clone(), ask.request);
        let age = self
            .seen
            .get(&key)
            .map_or(Duration::ZERO, |at| at.elapsed());
        if age < ANSWER_GUARD {
            return Some(Err(ANSWER_GUARD - age));
        }
        Some(Ok((
            ask.session.clone().unwrap_or_else(|| id.clone()),
            ask.clone(),
        )))
    }

    /// Lays the rows out again (after a change or a new filter).
    pub fn arrange(&mut self) {
        self.rows = arrange::rows(&self.sessions, &self.filter);
        let visible = self.selected_row().is_some();
        if !visible {
            self.selected = self.first_session();
        }
    }

    fn first_session(&self) -> Option<SessionId> {
        self.rows.iter().find_map(|row| match row {
            Row::Session(id, _) => Some(id.clone()),
            Row::Heading(..) => None,
        })
    }

    /// The session shown whose pending request is the oldest.
    fn oldest_ask(&self) -> Option<SessionId> {
        self.rows
            .iter()
            .filter_map(|row| match row {
                Row::Session(id, _) => self.sessions.get(id),
                Row::Heading(..) => None,
            })
            .filter_map(|s| s.pending.iter().map(|p| p.since_ms).min().map(|t| (t, s)))
            .min_by_key(|(t, _)| *t)
            .map(|(_, s)| s.info.id.clone())
    }
}
