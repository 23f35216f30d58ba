//! `agentctl sessions`, `agentctl new`, `agentctl rm`.

use std::collections::HashMap;

use agentctl::client::Summaries;
use agentctl::client::paths::Paths;
use protocol::{
    CreateSession, Mode, PendingSummary, Reply, Request, SessionId, SessionInfo, SessionState,
};

use super::board::describe::short_model;
use super::{request, unexpected};
use crate::connect;
use crate::{Failure, format};

/// Lists sessions, newest first, each subagent under its parent, as a table or a JSON array,
/// with the permission requests that wait for an answer; subagents that finished are shown
/// with `all` only.
pub async fn list(paths: &Paths, json: bool, all: bool) -> Result<u8, Failure> {
    let client = connect::connect(paths, "sessions").await?;
    let listing = client.list_sessions().await.map_err(Failure::new)?;
    for problem in &listing.unreadable {
        let problem =
            agentctl::client::one_line(problem, agentctl::client::far_text::MESSAGE_CHARS);
        eprintln!("agentctl: a session cannot be read: {problem}");
    }
    let waiting = listing
        .sessions
        .iter()
        .any(|s| s.state == SessionState::AwaitingApproval);
    let pending = if waiting {
        pending_requests(paths).await?
    } else {
        HashMap::new()
    };
    let (rows, hidden) = arrange(&listing.sessions, all);
    if json {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|(_, s)| session_json(s, pending.get(&s.id).map_or(&[], Vec::as_slice)))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&rows)?);
    } else if rows.is_empty() {
        outln!("no sessions; `agentctl run \"...\"` or `agentctl new` creates one");
    } else {
        print_table(&rows);
        for (_, session) in &rows {
            for ask in pending.get(&session.id).into_iter().flatten() {
                outln!("{}", waiting_line(&session.id, ask));
            }
        }
        if hidden > 0 {
            outln!("({hidden} finished subagents not shown; `agentctl sessions --all` shows them)");
        }
    }
    Ok(0)
}

/// The sessions in listing order with each subagent under its parent (oldest first) and its
/// depth; finished subagents (with no running one under them) are left out unless `all`.
/// Also says how many were left out.
fn arrange(sessions: &[SessionInfo], all: bool) -> (Vec<(usize, &SessionInfo)>, usize) {
    use std::collections::HashMap;
    let known: std::collections::HashSet<&SessionId> = sessions.iter().map(|s| &s.id).collect();
    let mut children: HashMap<&SessionId, Vec<&SessionInfo>> = HashMap::new();
    for s in sessions {
        if let Some(parent) = s.parent.as_ref().filter(|p| known.contains(p)) {
            children.entry(parent).or_default().push(s);
        }
    }
    for list in children.values_mut() {
        list.sort_by_key(|s| (s.created_ms, s.id.0.clone()));
    }
    fn busy(s: &SessionInfo, children: &HashMap<&SessionId, Vec<&SessionInfo>>) -> bool {
        s.state != protocol::SessionState::Idle
            || children
                .get(&s.id)
                .is_some_and(|c| c.iter().any(|c| busy(c, children)))
    }
    let mut rows = Vec::new();
    let mut hidden = 0;
    let mut stack: Vec<(usize, &SessionInfo)> = sessions
        .iter()
        .rev()
        .filter(|s| s.parent.as_ref().is_none_or(|p| !known.contains(p)))
        .map(|s| (0, s))
        .collect();
    while let Some((depth, s)) = stack.pop() {
        if depth > 0 && !all && !busy(s, &children) {
            hidden += 1;
            continue;
        }
        rows.push((depth, s));
        if let Some(list) = children.get(&s.id) {
            stack.extend(list.iter().rev().map(|c| (depth + 1, *c)));
        }
    }
    (rows, hidden)
}

/// The permission requests each session waits on (its own, not its subagents'), from the
/// board's summaries.
async fn pending_requests(
    paths: &Paths,
) -> Result<HashMap<SessionId, Vec<PendingSummary>>, Failure> {
    let client = connect::connect(paths, "sessions").await?;
    let feed = Summaries::follow(client).await.map_err(Failure::new)?;
    loop {
        let changes = feed.take();
        if changes.ready {
            let pending = changes
                .updated
                .into_iter()
                .map(|summary| {
                    let own = summary.pending.into_iter().filter(|p| p.session.is_none());
                    (summary.info.id, own.collect::<Vec<_>>())
                })
                .filter(|(_, own)| !own.is_empty())
                .collect();
            return Ok(pending);
        }
        if let Some(reason) = changes.closed {
            return Err(Failure::new(format!(
                "lost the daemon while reading the pending requests{}; try again",
                reason.map(|r| format!(": {r}")).unwrap_or_default()
            )));
        }
        feed.changed().await;
    }
}

/// "3f2a awaiting approval #3: bash run `rm -rf build` (agentctl approve 3f2a 3)".
fn waiting_line(id: &SessionId, ask: &PendingSummary) -> String {
    let line = format!(
        "{id} awaiting approval #{}: {} {} (agentctl approve {id} {})",
        ask.request, ask.tool, ask.summary, ask.request
    );
    crate::style::one_line(&line).into_owned()
}

fn session_json(s: &SessionInfo, pending: &[PendingSummary]) -> serde_json::Value {
    let pending: Vec<serde_json::Value> = pending
        .iter()
        .map(|p| {
            serde_json::json!({
                "request": p.request.0,
                "tool": p.tool,
                "summary": p.summary,
                "since_ms": p.since_ms,
            })
        })
        .collect();
    serde_json::json!({
        "id": s.id.as_str(),
        "parent": s.parent.as_ref().map(|p| p.as_str()),
        "cwd": s.cwd,
        "state": s.state.as_str(),
        "mode": s.mode.as_str(),
        "turns": s.turns,
        "steer_queued": s.steer_queued,
        "follow_up_queued": s.follow_up_queued,
        "title": s.title,
        "model": s.model,
        "provider": s.provider,
        "pending": pending,
        "branch": s.branch,
        "created_ms": s.created_ms,
        "last_activity_ms": s.last_activity_ms,
    })
}

fn print_table(sessions: &[(usize, &SessionInfo)]) {
    let now = format::now_ms();
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|(depth, s)| {
            let id = match depth {
                0 => s.id.to_string(),
                d => format!("{}└ {}", "  ".repeat(d - 1), s.id),
            };
            [
                id,
                s.state.to_string(),
                s.turns.to_string(),
                format!("{}/{}", s.steer_queued, s.follow_up_queued),
                format::ago(s.last_activity_ms, now),
                s.model.as_deref().map(short_model).unwrap_or_default(),
                crate::style::one_line(s.branch.as_deref().unwrap_or_default()).into_owned(),
                crate::style::one_line(&match &s.title {
                    Some(title) => format!("{}  {title}", s.cwd),
                    None => s.cwd.clone(),
                })
                .into_owned(),
            ]
            .into()
        })
        .collect();
    let header = [
        "ID",
        "STATE",
        "TURNS",
        "QUEUED",
        "ACTIVE",
        "MODEL",
        "BRANCH",
        "DIRECTORY / TITLE",
    ];
    out!("{}", format::table(&header, &rows));
}

/// Creates a session in the current directory and prints its id.
pub async fn new(
    paths: &Paths,
    mode: Option<Mode>,
    model: Option<String>,
    title: Option<String>,
    worktree: bool,
) -> Result<u8, Failure> {
    let cwd = super::here::current_dir()?;
    let client = connect::connect(paths, "new").await?;
    let reply = request(
        &client,
        Request::CreateSession(CreateSession {
            cwd: cwd.to_string_lossy().into_owned(),
            model,
            provider: None,
            mode,
            max_turns: None,
            title,
            env: super::client_env(),
            worktree,
        }),
    )
    .await
    .map_err(super::here::on_missing_dir)?;
    match reply {
        Reply::SessionCreated(info) => {
            outln!("{}", info.id);
            Ok(0)
        }
        other => Err(unexpected(other)),
    }
}

/// Deletes a session.
pub async fn remove(paths: &Paths, id: String, force: bool) -> Result<u8, Failure> {
    let client = connect::connect(paths, "rm").await?;
    let reply = request(
        &client,
        Request::DeleteSession {
            session: SessionId(id.clone()),
            force,
        },
    )
    .await?;
    outln!("deleted {id}");
    if let Reply::Deleted { notes } = reply {
        for note in notes.iter().map(|n| crate::style::printable(n)) {
            outln!("{note}");
        }
    }
    Ok(0)
}
