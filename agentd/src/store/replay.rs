//! Reading stored events back a page at a time, from a byte offset the index gave: for
//! replays to subscribers and for history pages, without holding a session's events in memory
//! and without the session's actor.

use std::io::{BufRead, BufReader, Seek, SeekFrom};

use protocol::{Event, SessionEvent, SessionId};

use super::Record;

/// A stretch of a session's events to read from its log on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DiskReplay {
    /// The session.
    pub(crate) session: SessionId,
    /// The log file.
    pub(crate) path: std::path::PathBuf,
    /// A byte offset at or before the first wanted record.
    pub(crate) offset: u64,
    /// Events with a `seq` above this...
    pub(crate) after_seq: u64,
    /// ...up to and including this.
    pub(crate) through_seq: u64,
}

/// A page of stored events.
#[derive(Debug, Default)]
pub(crate) struct Page {
    /// The events, in order.
    pub(crate) events: Vec<SessionEvent>,
    /// Where to go on reading, when the stretch was not read to its end.
    pub(crate) next_offset: Option<u64>,
}

/// Reads the events of `stretch` from `offset` on, until its end or until the page holds
/// about `budget` bytes of records (at least one event).
pub(crate) fn read_page(stretch: &DiskReplay, offset: u64, budget: usize) -> std::io::Result<Page> {
    let mut file = std::fs::File::open(&stretch.path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut page = Page::default();
    let mut position = offset;
    let mut taken = 0usize;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 || !line.ends_with(b"\n") {
            return Ok(page);
        }
        position += n as u64;
        let Ok(Record::Event {
            seq,
            time_ms,
            event,
        }) = serde_json::from_slice::<Record>(&line)
        else {
            continue;
        };
        if seq <= stretch.after_seq
            || matches!(event, Event::TextDelta { .. } | Event::ThinkingDelta { .. })
        {
            continue;
        }
        if seq > stretch.through_seq {
            return Ok(page);
        }
        page.events.push(SessionEvent {
            session: stretch.session.clone(),
            seq,
            time_ms,
            event,
        });
        taken += n;
        if taken >= budget {
            page.next_offset = Some(position);
            return Ok(page);
        }
    }
}
