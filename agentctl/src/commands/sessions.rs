//! `agentctl sessions`, `agentctl new`, `agentctl rm`.

use agentctl::client::paths::Paths;
use protocol::{CreateSession, Mode, Reply, Request, SessionId, SessionInfo};

use super::{request, unexpected};
use crate::connect;
use crate::{Failure, format};

/// Lists sessions, newest first, as a table or a JSON array.
pub async fn list(paths: &Paths, json: bool) -> Result<u8, Failure> {
    let client = connect::connect(paths, "sessions").await?;
    let listing = client.list_sessions().await.map_err(Failure::new)?;
    for problem in &listing.unreadable {
        eprintln!("agentctl: a session cannot be read: {problem}");
    }
    let sessions = listing.sessions;
    if json {
        let rows: Vec<serde_json::Value> = sessions.iter().map(session_json).collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else if sessions.is_empty() {
        println!("no sessions; `agentctl run \"...\"` or `agentctl new` creates one");
    } else {
        print_table(&sessions);
    }
    Ok(0)
}

fn session_json(s: &SessionInfo) -> serde_json::Value {
    serde_json::json!({
        "id": s.id.as_str(),
        "cwd": s.cwd,
        "state": s.state.as_str(),
        "mode": s.mode.as_str(),
        "turns": s.turns,
        "steer_queued": s.steer_queued,
        "follow_up_queued": s.follow_up_queued,
        "title": s.title,
        "model": s.model,
        "branch": s.branch,
        "created_ms": s.created_ms,
        "last_activity_ms": s.last_activity_ms,
    })
}

fn print_table(sessions: &[SessionInfo]) {
    let now = format::now_ms();
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            [
                s.id.to_string(),
                s.state.to_string(),
                s.turns.to_string(),
                format!("{}/{}", s.steer_queued, s.follow_up_queued),
                format::ago(s.last_activity_ms, now),
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
        "BRANCH",
        "DIRECTORY / TITLE",
    ];
    print!("{}", format::table(&header, &rows));
}

/// Creates a session in the current directory and prints its id.
pub async fn new(
    paths: &Paths,
    mode: Option<Mode>,
    model: Option<String>,
    title: Option<String>,
    worktree: bool,
) -> Result<u8, Failure> {
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::new(format!("cannot read the current directory: {e}")))?;
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
    .await?;
    match reply {
        Reply::SessionCreated(info) => {
            println!("{}", info.id);
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
    println!("deleted {id}");
    if let Reply::Deleted { notes } = reply {
        for note in notes.iter().map(|n| crate::style::printable(n)) {
            println!("{note}");
        }
    }
    Ok(0)
}
