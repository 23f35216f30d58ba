//! The board's layout: top-level sessions in their group (the most urgent of their own and
//! their running subagents'), each subagent that still works or asks under its parent. The
//! board's state lays its rows out with this; this module knows nothing of the board. Sessions
//! of several hosts share the groups; a session's parent is looked up on its own host.

use std::collections::HashMap;

use protocol::{Group, SessionId, SessionSummary};

/// The groups in the order they are shown.
pub const GROUPS: [Group; 4] = [Group::NeedsYou, Group::Working, Group::Done, Group::Failed];

/// A session as the board tells sessions apart: the host it lives on (its place in the list of
/// hosts the board shows) and its id there. Two hosts may hold the same id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// The host's place in the board's list of hosts.
    pub host: usize,
    /// The session's id on that host.
    pub id: SessionId,
}

impl Key {
    /// The session `id` of host number `host`.
    pub fn new(host: usize, id: SessionId) -> Key {
        Key { host, id }
    }
}

/// One line of the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    /// A host that cannot be reached now (its place in the list of hosts).
    Unreachable(usize),
    /// A group's heading and how many sessions it holds.
    Heading(Group, usize),
    /// A session, `depth` levels under its parent.
    Session(Key, usize),
}

/// The subagents of each session shown, by their parent's key.
type Children<'a> = HashMap<Key, Vec<(&'a Key, &'a SessionSummary)>>;

/// The rows for `sessions`, those matching `filter` only (in their title, directory or id, or
/// in the name of their host among `hosts`, the names the board shows).
pub fn rows(sessions: &HashMap<Key, SessionSummary>, filter: &str, hosts: &[String]) -> Vec<Row> {
    let mut children: Children = HashMap::new();
    let mut tops = Vec::new();
    for (key, s) in sessions {
        let parent = s
            .info
            .parent
            .as_ref()
            .map(|p| Key::new(key.host, p.clone()))
            .filter(|p| sessions.contains_key(p));
        match parent {
            Some(parent) => children.entry(parent).or_default().push((key, s)),
            None => tops.push((key, s)),
        }
    }
    for list in children.values_mut() {
        list.sort_by(|(ka, a), (kb, b)| (a.info.created_ms, *ka).cmp(&(b.info.created_ms, *kb)));
    }
    let filter = filter.to_lowercase();
    let mut rows = Vec::new();
    for group in GROUPS {
        let mut members: Vec<(&Key, &SessionSummary)> = tops
            .iter()
            .copied()
            .filter(|(k, s)| group_of(k, s, &children, 0) == group)
            .filter(|(k, s)| {
                let host = hosts.get(k.host).map(|h| h.to_lowercase());
                filter.is_empty()
                    || matches(s, &filter)
                    || host.is_some_and(|h| h.contains(&filter))
            })
            .collect();
        members.sort_by_key(|(k, s)| (order_key(s, group), k.host));
        if members.is_empty() {
            continue;
        }
        rows.push(Row::Heading(group, members.len()));
        for (key, _) in members {
            push_tree(&mut rows, key, &children, 0);
        }
    }
    rows
}

/// Pushes the row of `s` and, under it, those of its subagents that still ask or work.
fn push_tree(rows: &mut Vec<Row>, key: &Key, children: &Children, depth: usize) {
    rows.push(Row::Session(key.clone(), depth));
    if depth >= 8 {
        return;
    }
    for (child_key, child) in children.get(key).into_iter().flatten() {
        if matches!(
            group_of(child_key, child, children, depth + 1),
            Group::NeedsYou | Group::Working
        ) {
            push_tree(rows, child_key, children, depth + 1);
        }
    }
}

/// A session's group, made more urgent by any subagent under it that asks or works.
fn group_of(key: &Key, s: &SessionSummary, children: &Children, depth: usize) -> Group {
    let own = s.group();
    if depth >= 8 {
        return own;
    }
    children
        .get(key)
        .into_iter()
        .flatten()
        .map(|(k, c)| group_of(k, c, children, depth + 1))
        .filter(|g| matches!(g, Group::NeedsYou | Group::Working))
        .chain(std::iter::once(own))
        .min()
        .unwrap_or(own)
}

/// Needs-you by its oldest request, working by its run's start (oldest first), done and
/// failed newest first.
fn order_key(s: &SessionSummary, group: Group) -> (i128, String) {
    let time = match group {
        Group::NeedsYou => s
            .pending
            .iter()
            .map(|p| p.since_ms)
            .min()
            .unwrap_or(u64::MAX) as i128,
        Group::Working => s.run.as_ref().map_or(s.info.created_ms, |r| r.started_ms) as i128,
        Group::Done | Group::Failed => {
            let end = s
                .run
                .as_ref()
                .and_then(|r| r.end.as_ref())
                .map_or(s.info.last_activity_ms, |e| e.finished_ms);
            -(end as i128)
        }
    };
    (time, s.info.id.0.clone())
}

fn matches(s: &SessionSummary, filter: &str) -> bool {
    [
        s.info.title.as_deref().unwrap_or(""),
        &s.info.cwd,
        &s.info.id.0,
    ]
    .iter()
    .any(|field| field.to_lowercase().contains(filter))
}
