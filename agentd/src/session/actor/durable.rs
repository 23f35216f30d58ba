//! The one path every event takes (SPEC §8): numbered, stored, synced when it ends a unit of
//! work, then sent. Syncs are grouped: the first event that needs one schedules a [`Flush`]
//! message to the actor itself, and everything numbered until that message is handled waits
//! and is released by the same sync. `meta.json` is written by the same flush.

use std::path::Path;

use kameo::prelude::*;
use protocol::Event;

use super::SessionActor;
use crate::config::DurabilityMode;
use crate::session::event_log::Durability;
use crate::store::{Meta, Record};

/// `seq`s reserved at a time for deltas, which are not stored one by one.
const RESERVE: u64 = 4096;

impl SessionActor {
    /// Numbers, stores and sends `event` as its [`Durability`] says, and tells the supervisor
    /// when the listing changed.
    pub(super) fn emit(&mut self, event: Event) {
        let durability = Durability::of(&event);
        self.tell_parent(&event);
        let event = self.log.number(event);
        self.board.apply(&event.event, event.time_ms);
        self.usage.apply(&event.event);
        if let Some((from, to)) = self.log.take_abandoned() {
            self.record(&Record::Gap { from, to });
        }
        if let Some((from, to)) = self.log.take_tool_output() {
            self.record(&Record::Gap { from, to });
        }
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
            }
            Durability::Stored | Durability::Synced => {
                self.record(&Record::Event {
                    seq: event.seq,
                    time_ms: event.time_ms,
                    event: event.event.clone(),
                });
                if durability == Durability::Synced && self.durability() == DurabilityMode::Fsync {
                    if self.log.hold(event) {
                        self.schedule_flush();
                    }
                } else {
                    self.log.publish(event);
                }
                // Streamed pieces change nothing in the listing; telling the supervisor of
                // each would put work on the hottest path. Its mailbox is unbounded.
                self.listing.publish(self.summary());
            }
        }
    }

    /// Appends a record to the session's store. A failing disk must not take the session
    /// down: the failure is logged and told to the clients.
    pub(super) fn record(&mut self, record: &Record) {
        if let Err(err) = self.store.append(record) {
            tracing::error!(session = %self.info.id, "cannot store a record: {err}");
            let event = self.log.number(Event::Error {
                message: format!("the session could not be saved: {err}"),
            });
            self.log.publish(event);
        }
    }

    /// Asks for the records written so far to be synced (a unit of work ended without an
    /// event to wait for it, like a batch of tool results).
    pub(super) fn request_sync(&mut self) {
        if self.durability() == DurabilityMode::Fsync {
            self.schedule_flush();
        }
    }

    /// Writes `meta.json` with the session's settings and counters as of now: with the next
    /// flush, or at once when records are not synced.
    pub(super) fn save_meta(&mut self) {
        let info = self.info();
        self.meta.mode = info.mode.as_str().to_string();
        self.meta.turns = info.turns;
        self.meta.last_activity_ms = info.last_activity_ms;
        self.meta.last_run = self.board.finished_run();
        match self.durability() {
            DurabilityMode::Fsync => {
                self.meta_dirty = true;
                self.schedule_flush();
            }
            DurabilityMode::Flush => {
                if let Err(err) = self.store.write_meta(&self.meta, false) {
                    tracing::error!(session = %self.info.id, "cannot save the session settings: {err}");
                }
            }
        }
    }

    fn durability(&self) -> DurabilityMode {
        self.env.config().durability
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
        if !self.flush_scheduled {
            return;
        }
        let meta = self.meta_dirty.then(|| self.meta.clone());
        if let Err(err) = sync(&self.store.file(), self.store.dir(), meta.as_ref()) {
            tracing::error!(session = %self.info.id, "cannot sync the session: {err}");
        }
        self.finish_flush();
    }

    fn finish_flush(&mut self) {
        self.flush_scheduled = false;
        self.meta_dirty = false;
        self.log.release();
    }
}

/// Syncs the log, and writes `meta` (synced) when given.
fn sync(file: &std::fs::File, dir: &Path, meta: Option<&Meta>) -> Result<(), String> {
    file.sync_data().map_err(|e| e.to_string())?;
    if let Some(meta) = meta {
        crate::store::save_meta(dir, meta).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Sync what was stored, then send the events that waited for it.
pub struct Flush;

impl Message<Flush> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, _: Flush, _: &mut Context<Self, Self::Reply>) {
        if !self.flush_scheduled {
            return;
        }
        let file = self.store.file();
        let meta = self.meta_dirty.then(|| self.meta.clone());
        let dir = self.store.dir().to_path_buf();
        // The sync runs off the runtime's threads; the actor waits for it, as its clients do.
        let synced = tokio::task::spawn_blocking(move || sync(&file, &dir, meta.as_ref()))
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
        if let Err(err) = synced {
            tracing::error!(session = %self.info.id, "cannot sync the session: {err}");
        }
        self.finish_flush();
    }
}
