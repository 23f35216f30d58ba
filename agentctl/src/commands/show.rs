//! `agentctl show ID [--json]`: a session's history.

use agentctl::client::paths::Paths;
use protocol::{Reply, Request, SessionId};

use super::{request, unexpected};
use crate::json::JsonEvent;
use crate::view::{HumanView, Style};
use crate::{Failure, connect, format};

/// Prints the history as the human view renders it, or one JSON event per line, a page at a
/// time.
pub async fn show(paths: &Paths, id: String, json: bool) -> Result<u8, Failure> {
    let client = connect::connect(paths, "show").await?;
    let style = Style::detect();
    let mut view = HumanView::new(style);
    let mut session = SessionId(id);
    let mut from_seq = 0;
    loop {
        let request_page = Request::GetHistory {
            session: session.clone(),
            from_seq,
        };
        let (info, events, next_seq) = match request(&client, request_page).await? {
            Reply::History {
                session,
                events,
                next_seq,
            } => (session, events, next_seq),
            other => return Err(unexpected(other)),
        };
        if from_seq == 0 && !json {
            let model = match (&info.model, &info.provider) {
                (Some(model), Some(provider)) => format!(" · {model} ({provider})"),
                (Some(model), None) => format!(" · {model}"),
                (None, Some(provider)) => format!(" · the model of provider {provider}'s server"),
                (None, None) => String::new(),
            };
            outln!(
                "{}",
                style.dim(&crate::style::one_line(&format!(
                    "session {} · {} · {} · {}{model} · created {}",
                    info.id,
                    info.cwd,
                    info.state,
                    format::count(info.turns, "turn"),
                    format::ago(info.created_ms, format::now_ms())
                )))
            );
        }
        session = info.id;
        for event in &events {
            if json {
                outln!("{}", JsonEvent(event));
            } else {
                view.show(event);
            }
        }
        match next_seq {
            Some(next) if next > from_seq => from_seq = next,
            _ => return Ok(0),
        }
    }
}
