//! The board's layout: top-level sessions in their group (the most urgent of their own and
//! their running subagents'), each subagent that still works or asks under its parent. The
//! board's state lays its rows out with this; this module knows nothing of the board.

use std::collections::HashMap;

use protocol::{Group, SessionId, SessionSummary};

/// The groups in the order they are shown.
pub const GROUPS: [Group; 4] = [Group::NeedsYou, Group::Working, Group::Done, Group::Failed];

/// One line of the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    /// A group's heading and how many sessions it holds.
    Heading(Group, usize),
    /// A session, `depth` levels under its parent.
    Session(SessionId, usize),
}

/// The rows for `sessions`, those matching `filter` only.
pub fn rows(sessions: &HashMap<SessionId, SessionSummary>, filter: &str) -> Vec<Row> {
    let mut children: HashMap<&SessionId, Vec<&SessionSummary>> = HashMap::new();
    let mut tops = Vec::new();
    for s in sessions.values() {
        match s.info.parent.as_ref().filter(|p| sessions.contains_key(*p)) {
            Some(parent) => children.entry(parent).or_default().push(s),
            None => tops.push(s),
        }
    }
    for list in children.values_mut() {
        list.sort_by(|a, b| (a.info.created_ms, &a.info.id).cmp(&(b.info.created_ms, &b.info.id)));
    }
    let filter = filter.to_lowercase();
    let mut rows = Vec::new();
    for group in GROUPS {
        let mut members: Vec<&SessionSummary> = tops
            .iter()
            .copied()
            .filter(|s| group_of(s, &children, 0) == group)
            .filter(|s| filter.is_empty() || matches(s, &filter))
            .collect();
        members.sort_by_key(|s| order_key(s, group));
        if members.is_empty() {
            continue;
        }
        rows.push(Row::Heading(group, members.len()));
        for s in members {
            push_tree(&mut rows, s, &children, 0);
        }
    }
    rows
}

fn push_tree(
    rows: &mut Vec<Row>,
    s: &SessionSummary,
    children: &HashMap<&SessionId, Vec<&SessionSummary>>,
    depth: usize,
) {
    rows.push(Row::Session(s.info.id.clone(), depth));
    if depth >= 8 {
        return;
    }
    for child in children.get(&s.info.id).into_iter().flatten() {
        if matches!(
            group_of(child, children, depth + 1),
            Group::NeedsYou | Group::Working
        ) {
            push_tree(rows, child, children, depth + 1);
        }
    }
}

/// A session's group, made more urgent by any subagent under it that asks or works.
fn group_of(
    s: &SessionSummary,
    children: &HashMap<&SessionId, Vec<&SessionSummary>>,
    depth: usize,
) -> Group {
    let own = s.group();
    if depth >= 8 {
        return own;
    }
    children
        .get(&s.info.id)
        .into_iter()
        .flatten()
        .map(|c| group_of(c, children, depth + 1))
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
