//! One-shot commands on a session from any shell: `steer`, `queue`, `cancel`, `approve`,
//! `deny`.

use agentctl::client::paths::Paths;
use agentctl::client::{Feed, Flow, View};
use protocol::{
    Decision, Delivery, Event, PermissionRequestId, Reply, Request, RunOptions, SessionEvent,
    SessionId,
};

use super::run::provider_env;
use super::{request, unexpected};
use crate::{Failure, connect};

/// Sends a message to steer the running run, or to follow it; on an idle session either starts
/// a run (`ignore_config`: with the defaults if the daemon has no usable configuration).
pub async fn send(
    paths: &Paths,
    id: String,
    text: String,
    delivery: Delivery,
    ignore_config: bool,
) -> Result<u8, Failure> {
    let (text, images) = super::with_mentions(text, Vec::new())?;
    let client = connect::connect(paths, delivery.as_str()).await?;
    let options = RunOptions {
        env: provider_env(),
        ignore_config,
        ..RunOptions::default()
    };
    let reply = request(
        &client,
        Request::Send {
            session: SessionId(id.clone()),
            text,
            images,
            delivery,
            options,
        },
    )
    .await?;
    match reply {
        Reply::Sent { started: Some(run) } => outln!("started run {run} in session {id}"),
        Reply::Sent { started: None } => match delivery {
            Delivery::Steer => outln!("queued to steer the running run at its next turn"),
            Delivery::FollowUp => outln!("queued as a follow-up of the running run"),
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
    outln!("cancel sent to session {id}");
    Ok(0)
}

/// Compacts the session's history.
pub async fn compact(paths: &Paths, id: String) -> Result<u8, Failure> {
    let client = connect::connect(paths, "compact").await?;
    let mut feed =
        Feed::new(client).ok_or_else(|| Failure::new("the connection's events were taken"))?;
    // Only what happens from now on: the outcome of this compaction.
    let info = feed
        .follower()
        .follow(&SessionId(id.clone()), u64::MAX)
        .await
        .map_err(Failure::new)?;
    request(
        &feed.client(),
        Request::Compact {
            session: info.id.clone(),
        },
    )
    .await?;
    if info.state != protocol::SessionState::Idle {
        outln!(
            "session {} is running: it compacts before its next model call",
            info.id
        );
        return Ok(0);
    }
    // The summary is made in the background; `agentctl cancel` stops it.
    let mut outcome = CompactOutcome(None);
    match feed.drive(&mut outcome).await {
        Ok(()) => match outcome.0 {
            Some(Ok((before, after))) => {
                outln!(
                    "compacted session {}: about {before} tokens of history are now {after}",
                    info.id
                );
                Ok(0)
            }
            Some(Err(message)) => Err(Failure::new(message)),
            None => Ok(1),
        },
        Err(closed) => Err(Failure::new(closed)),
    }
}

/// Waits for a compaction's outcome: the tokens before and after, or the error.
struct CompactOutcome(Option<Result<(u64, u64), String>>);

impl View for CompactOutcome {
    fn event(&mut self, event: &SessionEvent, _replay: bool) -> Flow {
        self.0 = match &event.event {
            Event::Compacted {
                before_tokens,
                after_tokens,
            } => Some(Ok((*before_tokens, *after_tokens))),
            Event::Error { message } => Some(Err(message.clone())),
            _ => return Flow::Go,
        };
        Flow::Stop
    }
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
    outln!("request {request_id} {verb}");
    Ok(0)
}
