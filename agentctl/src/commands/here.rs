//! Getting back to a session without its id: the sessions of the current directory, newest
//! first by last activity (what `resume` offers), the latest of them (what `-` and `--last`
//! name wherever a session is taken), and turning what the user typed into the session meant.
//! Subagents are left out: they are reached through their parent.

use std::path::{Path, PathBuf};

use agentctl::client::Client;
use agentctl::client::paths::Paths;
use protocol::{SessionId, SessionInfo};

use crate::cli::SessionArg;
use crate::{Failure, connect};

/// What names the latest session of the current directory where a session id is taken.
pub const LATEST: &str = "-";

/// The current directory, as sessions record theirs (symbolic links resolved).
pub fn current_dir() -> Result<PathBuf, Failure> {
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::new(format!("cannot read the current directory: {e}")))?;
    Ok(cwd.canonicalize().unwrap_or(cwd))
}

/// The sessions of `cwd` (not subagents), newest first by last activity; every session of the
/// daemon when `cwd` is `None`.
pub async fn sessions_in(client: &Client, cwd: Option<&Path>) -> Result<Vec<SessionInfo>, Failure> {
    let listing = client.list_sessions().await.map_err(Failure::new)?;
    let mut sessions: Vec<SessionInfo> = listing
        .sessions
        .into_iter()
        .filter(|s| s.parent.is_none())
        .filter(|s| cwd.is_none_or(|cwd| Path::new(&s.cwd) == cwd))
        .collect();
    sessions.sort_by_key(|s| std::cmp::Reverse((s.last_activity_ms, s.created_ms)));
    Ok(sessions)
}

/// The session of `cwd` with the latest activity; `hint` says how to start one when there is
/// none.
pub async fn latest_in(client: &Client, cwd: &Path, hint: &str) -> Result<SessionId, Failure> {
    sessions_in(client, Some(cwd))
        .await?
        .into_iter()
        .next()
        .map(|s| s.id)
        .ok_or_else(|| Failure::new(format!("no session in {}; {hint}", cwd.display())))
}

/// The session `id` names: the latest of the current directory for `-`, else the id or prefix
/// as typed (the daemon resolves a unique prefix).
pub async fn session_named(client: &Client, id: &str) -> Result<SessionId, Failure> {
    if id == LATEST {
        latest_in(client, &current_dir()?, NO_SESSION_HINT).await
    } else {
        Ok(SessionId(id.to_string()))
    }
}

/// The id of the session `arg` names; the daemon is asked only for the latest one here.
pub async fn chosen(paths: &Paths, arg: &SessionArg) -> Result<String, Failure> {
    let id = if arg.last {
        LATEST
    } else {
        arg.id.as_deref().unwrap_or(LATEST)
    };
    id_named(paths, id).await
}

/// The id `id` names (`-`: the latest session of this directory); the daemon is asked only
/// for that one.
pub async fn id_named(paths: &Paths, id: &str) -> Result<String, Failure> {
    if id != LATEST {
        return Ok(id.to_string());
    }
    let client = connect::connect(paths, "latest").await?;
    Ok(session_named(&client, id).await?.0)
}

/// What to do when this directory has no session.
const NO_SESSION_HINT: &str =
    "`agentctl sessions` lists those of other directories, `agentctl chat` starts one here";
