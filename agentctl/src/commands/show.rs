//! `agentctl show ID [--json]`: a session's history.

use protocol::paths::Paths;
use protocol::{Reply, Request, SessionId};

use super::{request, unexpected};
use crate::view::{HumanView, Style, event_json};
use crate::{Failure, connect, format};

/// Prints the history as the human view renders it, or one JSON event per line.
pub async fn show(paths: &Paths, id: String, json: bool) -> Result<u8, Failure> {
    let client = connect::connect(paths, "show").await?;
    let (info, events) = match request(
        &client,
        Request::GetHistory {
            session: SessionId(id),
        },
    )
    .await?
    {
        Reply::History { session, events } => (session, events),
        other => return Err(unexpected(other)),
    };
    if json {
        for event in &events {
            println!("{}", event_json(event));
        }
        return Ok(0);
    }
    let style = Style::detect();
    println!(
        "{}",
        style.dim(&format!(
            "session {} · {} · {} · {} turns · created {}",
            info.id,
            info.cwd,
            info.state,
            info.turns,
            format::ago(info.created_ms, format::now_ms())
        ))
    );
    let mut view = HumanView::new(style);
    for event in &events {
        view.show(event);
    }
    Ok(0)
}
