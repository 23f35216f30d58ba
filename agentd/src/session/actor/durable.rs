//! The session's durability (docs/architecture.md#state-on-disk): its event log, its store and
//! `meta.json`. Every event takes one path: numbered, stored, synced when it ends a unit of
//! work, then sent. Syncs are grouped: the first event that needs one schedules a [`Flush`]
//! message to the actor itself, and everything numbered until that message is handled waits
//! and is released by the same sync. `meta.json` is written by the same flush.

use std::path::PathBuf;
use std::sync::Arc;

use kameo::prelude::*;
use protocol::{Event, SessionEvent, SessionId};

use super::SessionActor;
use crate::ConnectionId;
use crate::config::DurabilityMode;
use crate::session::event_log::{Durability, EventLog, Subscription};
use crate::store::{DiskReplay, LogRead, Meta, Record, SessionStore};

/// `seq`s reserved at a time for deltas, which are not stored one by one.
const RESERVE: u64 = 4096;

/// The session's log, store and stored settings.
pub(super) struct Durable {
    /// The numbered events, the window of recent ones, and the subscribers.
    log: EventLog,
    /// The records on disk.
    store: SessionStore,
    /// The session's stored settings (`meta.json`).
    meta: Meta,
    /// `meta.json` is to be written by the next flush.
    meta_dirty: bool,
    /// A [`Flush`] is on its way.
    flush_scheduled: bool,
    /// The last `seq` reserved for deltas (see [`Record::Reserved`]).
    reserved_to: u64,
    /// The actor, to send itself a [`Flush`].
    me: WeakActorRef<SessionActor>,
}

/// A sync to make off the actor: the log, and `meta.json` when it changed.
pub(super) struct DueSync {
    file: Arc<std::fs::File>,
    dir: PathBuf,
    meta: Option<Meta>,
}

impl DueSync {
    /// Syncs the log, and writes `meta.json` (synced) when it changed.
    fn run(&self) -> Result<(), String> {
        self.file.sync_data().map_err(|e| e.to_string())?;
        if let Some(meta) = &self.meta {
            crate::store::save_meta(&self.dir, meta).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

impl Durable {
    /// The durability of the session `meta` describes, stored in `store`; `me` is its actor.
    pub(super) fn new(store: SessionStore, meta: Meta, me: WeakActorRef<SessionActor>) -> Durable {
        Durable {
            log: EventLog::new(SessionId(meta.id.clone())),
            store,
            meta,
            meta_dirty: false,
            flush_scheduled: false,
            reserved_to: 0,
            me,
        }
    }

    /// The session's directory.
    pub(super) fn dir(&self) -> &std::path::Path {
        self.store.dir()
    }

    /// The session's stored settings.
    pub(super) fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The last `seq` handed out, and the time of the last event.
    pub(super) fn last(&self) -> (u64, u64) {
        (self.log.last_seq(), self.log.last_time_ms())
    }

    /// Numbers `event`; the `seq`s of deltas and tool output given up meanwhile are recorded
    /// as gaps.
    pub(super) fn number(&mut self, event: Event) -> SessionEvent {
        let event = self.log.number(event);
        if let Some((from, to)) = self.log.take_abandoned() {
            self.record(&Record::Gap { from, to });
        }
        if let Some((from, to)) = self.log.take_tool_output() {
            self.record(&Record::Gap { from, to });
        }
        event
    }

    /// Stores and sends a numbered event as its [`Durability`] says; with `wait_for_sync` it
    /// is sent once the disk has it. Whether it was stored (and so may change the listing).
    pub(super) fn keep(
        &mut self,
        event: SessionEvent,
        durability: Durability,
        wait_for_sync: bool,
    ) -> bool {
        match durability {
            Durability::Folded => {
                if self.log.deltas_from() == Some(event.seq) {
                    self.record(&Record::Deltas { seq: event.seq });
                }
                if event.seq > self.reserved_to {
                    self.reserved_to = event.seq + RESERVE;
                    let to = self.reserved_to;
                    self.record(&Record::Reserved { to });
                }
                self.log.publish(event);
                false
            }
            Durability::Stored | Durability::Synced => {
                self.record(&Record::Event {
                    seq: event.seq,
                    time_ms: event.time_ms,
                    event: event.event.clone(),
                });
                if wait_for_sync {
                    if self.log.hold(event) {
                        self.schedule_flush();
                    }
                } else {
                    self.log.publish(event);
                }
                true
            }
        }
    }

    /// Appends a record to the session's store. A failing disk must not take the session
    /// down: the failure is logged and told to the clients.
    pub(super) fn record(&mut self, record: &Record) {
        if let Err(err) = self.store.append(record) {
            tracing::error!(session = %self.meta.id, "cannot store a record: {err}");
            let event = self.log.number(Event::Error {
                message: format!("the session could not be saved: {err}"),
            });
            self.log.publish(event);
        }
    }

    /// Asks for the records written so far to be synced (a unit of work ended without an
    /// event to wait for it, like a batch of tool results).
    pub(super) fn request_sync(&mut self, mode: DurabilityMode) {
        if mode == DurabilityMode::Fsync {
            self.schedule_flush();
        }
    }

    /// Applies `change` to the stored settings and writes `meta.json`: with the next flush,
    /// or at once when records are not synced (`mode`).
    pub(super) fn save_meta(&mut self, mode: DurabilityMode, change: impl FnOnce(&mut Meta)) {
        change(&mut self.meta);
        match mode {
            DurabilityMode::Fsync => {
                self.meta_dirty = true;
                self.schedule_flush();
            }
            DurabilityMode::Flush => {
                if let Err(err) = self.store.write_meta(&self.meta, false) {
                    tracing::error!(session = %self.meta.id, "cannot save the session settings: {err}");
                }
            }
        }
    }

    fn schedule_flush(&mut self) {
        if self.flush_scheduled {
            return;
        }
        self.flush_scheduled = true;
        let sent = self
            .me
            .upgrade()
            .is_some_and(|me| me.tell(Flush).try_send().is_ok());
        // While the actor (re)starts its mailbox may not take messages: sync at once.
        if !sent {
            self.flush_now();
        }
    }

    /// Syncs now, on this thread, and sends what waited (when the actor stops).
    pub(super) fn flush_now(&mut self) {
        let Some(sync) = self.due_sync() else {
            return;
        };
        if let Err(err) = sync.run() {
            tracing::error!(session = %self.meta.id, "cannot sync the session: {err}");
        }
        self.synced();
    }

    /// The sync a scheduled flush is to make, if one is scheduled.
    fn due_sync(&self) -> Option<DueSync> {
        self.flush_scheduled.then(|| DueSync {
            file: self.store.file(),
            dir: self.store.dir().to_path_buf(),
            meta: self.meta_dirty.then(|| self.meta.clone()),
        })
    }

    /// The sync is made: what waited for it is sent.
    fn synced(&mut self) {
        self.flush_scheduled = false;
        self.meta_dirty = false;
        self.log.release();
    }

    /// Subscribes connection `conn` from `from_seq`.
    pub(super) fn subscribe(&mut self, conn: ConnectionId, from_seq: u64) -> Subscription {
        let disk = self.disk_before_window(from_seq);
        self.log.subscribe(conn, from_seq, disk)
    }

    /// Ends connection `conn`'s subscription.
    pub(super) fn unsubscribe(&mut self, conn: ConnectionId) {
        self.log.unsubscribe(conn);
    }

    /// How many connections follow the session.
    pub(super) fn followers(&self) -> usize {
        self.log.subscriber_count()
    }

    /// Ends every subscription (the session is deleted).
    pub(super) fn close_all(&mut self) {
        self.log.close_all();
    }

    /// The events after `from_seq`: the stretch only the log on disk holds, and the window's.
    pub(super) fn events_after(&self, from_seq: u64) -> (Option<DiskReplay>, Vec<SessionEvent>) {
        (
            self.disk_before_window(from_seq),
            self.log.recent_after(from_seq),
        )
    }

    /// The stretch of events after `from_seq` that only the log on disk still holds.
    fn disk_before_window(&self, from_seq: u64) -> Option<DiskReplay> {
        let through = self.log.window_start().saturating_sub(1);
        (from_seq < through).then(|| DiskReplay {
            session: SessionId(self.meta.id.clone()),
            path: self.store.log_path(),
            offset: self.store.offset_after(from_seq),
            after_seq: from_seq,
            through_seq: through,
        })
    }

    /// Where the hooks' transcript of the session is written.
    pub(super) fn transcript_path(&self) -> PathBuf {
        self.store.dir().join("transcript.jsonl")
    }

    /// The environment of the client that created the session, as stored.
    pub(super) fn stored_client_env(&self) -> Vec<(String, String)> {
        self.store.env()
    }

    /// The log file, to read it when the session loads.
    pub(super) fn log_path(&self) -> PathBuf {
        self.store.log_path()
    }

    /// Takes what reading the log found (where to append, the offsets of `seq`s).
    pub(super) fn adopt(&mut self, read: LogRead) -> Result<(), crate::store::StoreError> {
        self.store.adopt(read)
    }

    /// Puts an event read from the log back into the log's window.
    pub(super) fn restore(&mut self, seq: u64, time_ms: u64, event: Event) {
        self.log.restore(seq, time_ms, event);
    }

    /// `seq`s handed out to deltas of a reply cut short by a stop, and those reserved and never
    /// used, are recorded as a gap, and numbering goes on after them, so no `seq` a client saw
    /// is used twice.
    pub(super) fn account_for_reserved(
        &mut self,
        open_deltas: Option<u64>,
        reserved: u64,
        explained: u64,
    ) {
        self.reserved_to = reserved;
        let stored = self.log.last_seq().max(explained);
        let to = reserved.max(stored);
        let from = open_deltas.unwrap_or(stored + 1);
        if from <= to && (open_deltas.is_some() || reserved > stored) {
            self.record(&Record::Gap { from, to });
            self.log.advance_to(to);
        }
    }
}

/// Sync what was stored, then send the events that waited for it.
pub(crate) struct Flush;

impl Message<Flush> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, _: Flush, _: &mut Context<Self, Self::Reply>) {
        let Some(sync) = self.durable.due_sync() else {
            return;
        };
        // The sync runs off the runtime's threads; the actor waits for it, as its clients do.
        let synced = tokio::task::spawn_blocking(move || sync.run())
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
        if let Err(err) = synced {
            tracing::error!(session = %self.durable.meta.id, "cannot sync the session: {err}");
        }
        self.durable.synced();
    }
}
