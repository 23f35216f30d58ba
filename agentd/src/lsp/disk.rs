//! Changes the agent made through commands, told to the servers (docs/architecture.md#language-servers).
//! A `write` or `edit` tells its server itself; a command (`sed -i`, `git checkout`, a code
//! generator) changes files behind the servers' backs. After each command, the files a server of
//! the session has open are read again (changed: `didChange` and `didSave`; gone: `didClose`),
//! and the files under its root that the command wrote are announced with
//! `workspace/didChangeWatchedFiles`: servers read unopened files from the disk and count on
//! their client to say when those change.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use lsp_types::notification::DidChangeWatchedFiles;
use lsp_types::{DidChangeWatchedFilesParams, FileChangeType, FileEvent, Url};

use super::instance::Instance;
use super::{LspHub, defaults};

/// Entries of a root looked at for files a command wrote; a bigger tree is looked at in part.
pub(crate) const MAX_WALKED: usize = 20_000;
/// Files announced after one command at most.
const MAX_ANNOUNCED: usize = 1000;
/// Files' times are the kernel's coarse clock: a file written just after the command started
/// may show a time a little before it.
const CLOCK_SLACK: Duration = Duration::from_secs(1);

/// A file as the session's tools may see it on the disk.
pub(crate) enum OnDisk {
    /// Its text.
    Text(String),
    /// No file there any more.
    Gone,
    /// Not readable as text by the agent (hidden, not a regular file, not UTF-8, too big).
    Unreadable,
}

/// How the session's tools see the disk: reading as `read` does (what the agent may not see stays
/// unseen), walking as `grep` does (`.gitignore` honoured).
pub(crate) trait Disk: Send + Sync + 'static {
    /// `path`, as `read` would see it.
    fn read(&self, path: &Path) -> OnDisk;
    /// The regular files under `root` (at most `max` entries looked at) for which `wanted`
    /// holds, modified at `since` or after, each with whether it was created then.
    fn written_since(
        &self,
        root: &Path,
        since: SystemTime,
        max: usize,
        wanted: &(dyn Fn(&Path) -> bool + Sync),
    ) -> Vec<(PathBuf, bool)>;
}

impl LspHub {
    /// A command of this session that started at `started` has ended: its servers are told what
    /// it changed on `disk`. Done when every server was told (before the model's next step, so
    /// that an edit right after is checked against what the command left); the telling goes on
    /// in the background when the caller stops waiting.
    pub(crate) async fn commands_ran(&self, started: SystemTime, disk: Arc<dyn Disk>) {
        let Some(session) = &self.session else { return };
        let used: Vec<Arc<Instance>> = self
            .instances()
            .values()
            .filter(|i| i.is_used_by(session))
            .cloned()
            .collect();
        let since = started.checked_sub(CLOCK_SLACK).unwrap_or(started);
        let telling = used.into_iter().map(|instance| {
            let disk = disk.clone();
            tokio::spawn(async move { tell(instance, since, disk).await })
        });
        futures::future::join_all(telling.collect::<Vec<_>>()).await;
    }
}

/// Tells `instance`'s server, when it runs, what changed on `disk` since `since`.
async fn tell(instance: Arc<Instance>, since: SystemTime, disk: Arc<dyn Disk>) {
    let Some(running) = instance.running().await else {
        return;
    };
    let _in_use = instance.hold();
    let (root, spec) = (instance.root.clone(), instance.spec.clone());
    let looking = disk.clone();
    let written = tokio::task::spawn_blocking(move || {
        looking.written_since(&root, since, MAX_WALKED, &|path| spec.covers(path))
    })
    .await
    .unwrap_or_default();
    // The open files are read under the documents' lock, so that no edit's text is overtaken
    // by an older read; all in one blocking task.
    let mut docs = running.docs.lock().await;
    let paths = docs.paths();
    let now: Vec<(PathBuf, OnDisk)> = tokio::task::spawn_blocking(move || {
        paths
            .into_iter()
            .map(|path| {
                let found = disk.read(&path);
                (path, found)
            })
            .collect()
    })
    .await
    .unwrap_or_default();
    let mut events = Vec::new();
    for (path, found) in now {
        match found {
            OnDisk::Text(text) => {
                let language = defaults::document_language(&path);
                docs.sync(&running.live, &path, &language, &text, true);
            }
            OnDisk::Gone => {
                docs.close(&running.live, &path);
                instance.published.forget(&path);
                events.extend(event(&path, FileChangeType::DELETED));
            }
            OnDisk::Unreadable => {}
        }
    }
    for (path, created) in written {
        if docs.version(&path).is_some() || events.len() >= MAX_ANNOUNCED {
            continue;
        }
        let kind = if created {
            FileChangeType::CREATED
        } else {
            FileChangeType::CHANGED
        };
        events.extend(event(&path, kind));
    }
    if !events.is_empty() {
        tracing::debug!(server = %instance.spec.name, files = events.len(), "files changed by a command");
        running
            .live
            .notify::<DidChangeWatchedFiles>(DidChangeWatchedFilesParams { changes: events });
    }
}

/// The event for `path`, when it makes a URI.
fn event(path: &Path, typ: FileChangeType) -> Option<FileEvent> {
    Some(FileEvent {
        uri: Url::from_file_path(path).ok()?,
        typ,
    })
}
