//! Sending a subscription's events: first the stretch only the log on disk still holds, read a
//! page at a time off the runtime's threads, then the session's in-memory window, then live
//! events. A client that lags is told so and resubscribes from its last `seq`.

use protocol::{ErrorCode, ErrorInfo, ServerFrame, SessionId};
use tokio::sync::mpsc;

use super::pages::{PAGE_BYTES, fit_in_frame};

/// Bytes (roughly) of the first page of a replay.
const FIRST_PAGE_BYTES: usize = 64 * 1024;
use crate::session::event_log::Subscription;
use crate::store;

/// Replays a subscription, then passes live events on; tells the client when the session
/// dropped it for lagging.
pub(crate) async fn forward(
    session: SessionId,
    from_seq: u64,
    mut subscription: Subscription,
    out: mpsc::Sender<ServerFrame>,
) {
    let mut last_seq = from_seq.min(subscription.through_seq);
    if let Some(disk) = subscription.disk.take() {
        let mut offset = disk.offset;
        // A small first page, so that the client sees its first event at once.
        let mut budget = FIRST_PAGE_BYTES;
        loop {
            let stretch = disk.clone();
            let page =
                tokio::task::spawn_blocking(move || store::read_page(&stretch, offset, budget))
                    .await;
            budget = PAGE_BYTES;
            let page = match page {
                Ok(Ok(page)) => page,
                failed => {
                    let reason = match failed {
                        Ok(Err(err)) => err.to_string(),
                        Err(err) => err.to_string(),
                        Ok(Ok(_)) => String::new(),
                    };
                    tracing::error!(session = %session, "cannot replay the session's log: {reason}");
                    let _ = out
                        .send(ServerFrame::Error(ErrorInfo::new(
                            ErrorCode::Internal,
                            format!("cannot replay session {session} from its log: {reason}"),
                        )))
                        .await;
                    return;
                }
            };
            if !send_all(page.events, &mut last_seq, &out).await {
                return;
            }
            match page.next_offset {
                Some(next) => offset = next,
                None => break,
            }
        }
    }
    if !send_all(
        std::mem::take(&mut subscription.replay),
        &mut last_seq,
        &out,
    )
    .await
    {
        return;
    }
    let done = ServerFrame::ReplayDone {
        session: session.clone(),
        last_seq: subscription.through_seq,
    };
    if out.send(done).await.is_err() {
        return;
    }
    let mut deleted = false;
    while let Some(event) = subscription.live.recv().await {
        last_seq = event.seq;
        deleted = matches!(event.event, protocol::Event::SessionDeleted);
        if out
            .send(ServerFrame::Event(fit_in_frame(event)))
            .await
            .is_err()
        {
            return;
        }
    }
    // The session stopped sending without being deleted or unsubscribed: the client lagged, or
    // the session's actor failed and was restarted. Either way the client resumes by
    // subscribing again.
    let unsubscribed = subscription
        .unsubscribed
        .load(std::sync::atomic::Ordering::Acquire);
    if !deleted && !unsubscribed {
        let _ = out.send(ServerFrame::Lagged { session, last_seq }).await;
    }
}

/// Sends `events` in order, noting the last `seq` sent; false when the client is gone.
async fn send_all(
    events: Vec<protocol::SessionEvent>,
    last_seq: &mut u64,
    out: &mpsc::Sender<ServerFrame>,
) -> bool {
    for event in events {
        *last_seq = event.seq;
        if out
            .send(ServerFrame::Event(fit_in_frame(event)))
            .await
            .is_err()
        {
            return false;
        }
    }
    true
}
