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

/// The directory `--cwd` named, when it did.
static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Where this process's sessions are created and looked up: `dir` (`--cwd`) instead of the
/// current directory. On this machine it must be a directory (relative to the current one); on
/// another machine (`remote`) it is that machine's path, so it must be absolute there.
pub fn set_dir(dir: Option<&Path>, remote: Option<&crate::hosts::Remote>) -> Result<(), Failure> {
    let Some(dir) = dir else { return Ok(()) };
    let resolved = match remote {
        Some(remote) if !dir.is_absolute() => {
            return Err(crate::commands::usage(format!(
                "--cwd {}: give an absolute path on {}",
                dir.display(),
                remote.label
            )));
        }
        Some(_) => dir.to_path_buf(),
        None => dir.canonicalize().map_err(|e| {
            crate::commands::usage(format!(
                "--cwd {}: {e}; give a directory on this machine",
                dir.display()
            ))
        })?,
    };
    let _ = DIR.set(resolved);
    Ok(())
}

/// The directory of this process's sessions (see [`set_dir`]), as sessions record theirs
/// (symbolic links resolved): `--cwd`, else the current directory, whose path a remote run
/// uses on the other machine.
pub fn current_dir() -> Result<PathBuf, Failure> {
    if let Some(dir) = DIR.get() {
        return Ok(dir.clone());
    }
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::new(format!("cannot read the current directory: {e}")))?;
    Ok(cwd.canonicalize().unwrap_or(cwd))
}

/// `--cwd` when given, else `dir` (an editor's directory), as the path a session is created in.
pub fn dir_or(dir: &Path) -> String {
    DIR.get()
        .map_or(dir, |d| d.as_path())
        .to_string_lossy()
        .into_owned()
}

/// `failure` with what to do when it says the session's directory does not exist on the other
/// machine: a remote run works in the same path there, or in `--cwd`.
pub fn on_missing_dir(failure: Failure) -> Failure {
    let Some(remote) = crate::connect::remote_host() else {
        return failure;
    };
    if !failure.message.contains("session directory") {
        return failure;
    }
    let dir = current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let why = match DIR.get() {
        Some(_) => "given with --cwd".to_string(),
        None => "this directory's path, which a run there uses unless --cwd".to_string(),
    };
    Failure::new(format!(
        "{}\n{dir} ({why}) is not a directory on {}; give --cwd DIR, a directory there",
        failure.message, remote.label
    ))
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
