//! One-shot commands on a session from any shell: `steer`, `queue`, `cancel`, `approve`,
//! `deny`.

use protocol::client::Incoming;
use protocol::paths::Paths;
use protocol::{
    Decision, Delivery, Event, PermissionRequestId, Reply, Request, RunOptions, SessionId,
};

use super::run::provider_env;
use super::{request, unexpected};
use crate::{Failure, connect};

/// Sends a message to steer the running run, or to follow it; on an idle session either starts
/// a run.
pub async fn send(
    paths: &Paths,
    id: String,
    text: String,
    delivery: Delivery,
) -> Result<u8, Failure> {
    let client = connect::connect(paths, delivery.as_str()).await?;
    let options = RunOptions {
        env: provider_env(),
        ..RunOptions::default()
    };
    let reply = request(
        &client,
        Request::Send {
            session: SessionId(id.clone()),
            text,
            delivery,
            options,
        },
    )
    .await?;
    match reply {
        Reply::Sent { started: Some(run) } => println!("started run {run} in session {id}"),
        Reply::Sent { started: None } => match delivery {
            Delivery::Steer => println!("queued to steer the running run at its next turn"),
            Delivery::FollowUp => println!("queued as a follow-up of the running run"),
        },
        other => return Err(unexpected(other)),
    }
    Ok(0)
}

/// Cancels the session's run.
pub async fn cancel(paths: &Paths, id: String) -> Result<u8, Failure> {
    let client = connect::connect(paths, "cancel").await?;
    request(
        &client,
        Request::Cancel {
            session: SessionId(id.clone()),
        },
    )
    .await?;
    println!("cancel sent to session {id}");
    Ok(0)
}

/// Compacts the session's history.
pub async fn compact(paths: &Paths, id: String) -> Result<u8, Failure> {
    let mut client = connect::connect(paths, "compact").await?;
    let mut incoming = client
        .take_incoming()
        .ok_or_else(|| Failure::new("the connection's events were taken"))?;
    // Only what happens from now on: the outcome of this compaction.
    let subscribe = Request::Subscribe {
        session: SessionId(id.clone()),
        from_seq: u64::MAX,
    };
    let info = match request(&client, subscribe).await? {
        Reply::Subscribed(info) => info,
        other => return Err(unexpected(other)),
    };
    request(
        &client,
        Request::Compact {
            session: info.id.clone(),
        },
    )
    .await?;
    if info.state != protocol::SessionState::Idle {
        println!(
            "session {} is running: it compacts before its next model call",
            info.id
        );
        return Ok(0);
    }
    // The summary is made in the background; `agentctl cancel` stops it.
    while let Some(incoming) = incoming.recv().await {
        match incoming {
            Incoming::Event(event) => match event.event {
                Event::Compacted {
                    before_tokens,
                    after_tokens,
                } => {
                    println!(
                        "compacted session {}: about {before_tokens} tokens of history are now {after_tokens}",
                        info.id
                    );
                    return Ok(0);
                }
                Event::Error { message } => return Err(Failure::new(message)),
                _ => {}
            },
            Incoming::Lagged { .. } => {}
            Incoming::Closed(reason) => {
                return Err(Failure::new(format!(
                    "the daemon closed the connection{}",
                    reason.map(|r| format!(": {r}")).unwrap_or_default()
                )));
            }
        }
    }
    Ok(1)
}

/// Answers a pending permission request.
pub async fn answer(
    paths: &Paths,
    id: String,
    request_id: u64,
    decision: Decision,
) -> Result<u8, Failure> {
    let client = connect::connect(paths, "approve").await?;
    request(
        &client,
        Request::Answer {
            session: SessionId(id),
            request: PermissionRequestId(request_id),
            decision,
        },
    )
    .await?;
    let verb = match decision {
        Decision::Allow => "allowed",
        Decision::AllowAlways => "allowed for the rest of the session",
        Decision::Deny => "denied",
    };
    println!("request {request_id} {verb}");
    Ok(0)
}
