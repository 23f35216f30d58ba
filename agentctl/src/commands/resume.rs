//! `agentctl resume`: back to a session of this directory without its id. On a terminal the
//! sessions are offered in a list (newest first) and the one chosen is attached as `agentctl
//! attach ID` would; without a terminal the list is printed.

use std::io::IsTerminal;

use agentctl::client::paths::Paths;

use super::chat::{ChatArgs, chat};
use super::{here, pick};
use crate::{Failure, connect, format};

/// Offers the sessions of this directory (of every directory with `all`) and attaches the one
/// chosen; prints them when there is no terminal to choose on.
pub async fn resume(paths: &Paths, all: bool) -> Result<u8, Failure> {
    let cwd = here::current_dir()?;
    let client = connect::connect(paths, "resume").await?;
    let sessions = here::sessions_in(&client, (!all).then_some(cwd.as_path())).await?;
    drop(client);
    let place = if all {
        "any directory".to_string()
    } else {
        cwd.display().to_string()
    };
    if sessions.is_empty() {
        let also = if all {
            ""
        } else {
            "; `agentctl resume --all` offers those of every directory"
        };
        outln!("no session in {place}; `agentctl chat` starts one{also}");
        return Ok(0);
    }
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        out!("{}", format::table(&pick::HEADER, &pick::rows(&sessions)));
        outln!("`agentctl attach ID` joins one (`agentctl attach -` the first)");
        return Ok(0);
    }
    let heading = format!("Sessions in {place} — ↑↓ choose · Enter attaches · Esc leaves",);
    let offered = sessions.clone();
    let chosen = tokio::task::spawn_blocking(move || pick::pick(&offered, &heading))
        .await
        .map_err(|e| Failure::new(format!("the session list failed: {e}")))?
        .map_err(|e| Failure::new(format!("cannot use the terminal: {e}")))?;
    match chosen.and_then(|i| sessions.get(i)) {
        Some(session) => chat(paths, ChatArgs::attach(session.id.to_string())).await,
        None => Ok(0),
    }
}
