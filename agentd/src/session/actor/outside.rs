//! Files the session read that change on disk: the daemon's watcher tells the session, and
//! the session tells its clients (and the stale-file guard refuses edits until a new read).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kameo::prelude::*;
use protocol::Event;

use super::SessionActor;
use crate::stale_files::{FileTracker, FileWatcher, Notice};

/// A tracker whose files the daemon's watcher reports to this session.
pub(super) fn tracker(
    watcher: &FileWatcher,
    owner: u64,
    session: &ActorRef<SessionActor>,
) -> FileTracker {
    let (watcher, session) = (watcher.clone(), session.downgrade());
    FileTracker::new(move |path| {
        let session = session.clone();
        let notice: Notice = Box::new(move |changed: &Path| {
            if let Some(session) = session.upgrade() {
                let _ = session.tell(FileTouched(changed.to_path_buf())).try_send();
            }
        });
        watcher.watch(path, owner, Arc::new(notice));
    })
}

/// A file the session read was touched on disk.
pub(super) struct FileTouched(PathBuf);

impl Message<FileTouched> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: FileTouched, _: &mut Context<Self, Self::Reply>) {
        if let Some(path) = self.workspace.changed_outside(&msg.0) {
            self.emit(Event::FileChanged { path });
        }
    }
}
