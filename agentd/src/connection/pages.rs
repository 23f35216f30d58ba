//! Replies that grow with a session's data are sent in pages, and no frame is ever larger than
//! the frame limit: a page of history holds about [`PAGE_BYTES`], and an event too large to
//! send whole is replaced by an error event with its `seq` (docs/architecture.md#state-on-disk).

use protocol::{ErrorCode, ErrorInfo, Event, Reply, SessionEvent};

use crate::session::actor::HistorySource;
use crate::session::event_log::approximate_size;
use crate::store;

/// Bytes (roughly) of events in one page of history or replay.
pub(crate) const PAGE_BYTES: usize = 4 << 20;
/// The largest event sent whole; the frame limit is 16 MiB.
const MAX_EVENT_BYTES: usize = 12 << 20;

/// One page of a session's history after `from_seq`: from its log on disk, then its
/// in-memory window.
pub(crate) async fn history_page(source: HistorySource) -> Result<Reply, ErrorInfo> {
    let mut events = Vec::new();
    let mut bytes = 0;
    if let Some(disk) = source.disk {
        let offset = disk.offset;
        let page = tokio::task::spawn_blocking(move || store::read_page(&disk, offset, PAGE_BYTES))
            .await
            .map_err(|e| e.to_string())
            .and_then(|page| page.map_err(|e| e.to_string()))
            .map_err(|e| {
                ErrorInfo::new(
                    ErrorCode::Internal,
                    format!("cannot read the session's log: {e}"),
                )
            })?;
        events = page.events;
        if page.next_offset.is_some() {
            return Ok(reply(source.info, events, true));
        }
        bytes = events.iter().map(|e| approximate_size(&e.event)).sum();
    }
    let mut more = false;
    for event in source.recent {
        if bytes >= PAGE_BYTES && !events.is_empty() {
            more = true;
            break;
        }
        bytes += approximate_size(&event.event);
        events.push(event);
    }
    Ok(reply(source.info, events, more))
}

fn reply(session: protocol::SessionInfo, events: Vec<SessionEvent>, more: bool) -> Reply {
    let next_seq = if more {
        events.last().map(|e| e.seq)
    } else {
        None
    };
    Reply::History {
        session,
        events: events.into_iter().map(fit_in_frame).collect(),
        next_seq,
    }
}

/// `event`, or an error event in its place (same `seq`) when it is too large for a frame.
pub(crate) fn fit_in_frame(event: SessionEvent) -> SessionEvent {
    let size = approximate_size(&event.event);
    if size <= MAX_EVENT_BYTES {
        return event;
    }
    SessionEvent {
        event: Event::Error {
            message: format!(
                "event {} ({}) is {} MiB, too large to send",
                event.seq,
                event.event.kind(),
                size >> 20
            ),
        },
        ..event
    }
}
