//! The disk as the session's tools see it, for the language servers: after a command, its
//! servers re-read their open files as `read` would (what the agent may not see stays unseen)
//! and look for the files it wrote as `grep` walks (`.gitignore` honoured).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::ToolContext;
use crate::lsp::disk::{Disk, OnDisk};
use crate::sandbox::hidden::HiddenPaths;

/// How long a command's result waits for its servers to be told (they go on being told after).
const MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The session's view of the disk.
struct SessionDisk {
    hidden: Arc<HiddenPaths>,
}

/// `path` as a language server may be told of it: read as `read` would (what the agent may not
/// see stays unseen), whole, UTF-8 text, at most [`crate::lsp::MAX_FILE_BYTES`].
pub(super) fn server_text(path: &Path, hidden: &HiddenPaths) -> OnDisk {
    if let Err(e) = path.symlink_metadata()
        && e.kind() == std::io::ErrorKind::NotFound
    {
        return OnDisk::Gone;
    }
    match super::read_visible(path, hidden, crate::lsp::MAX_FILE_BYTES) {
        Ok((bytes, false)) => String::from_utf8(bytes).map_or(OnDisk::Unreadable, OnDisk::Text),
        _ => OnDisk::Unreadable,
    }
}

impl Disk for SessionDisk {
    fn read(&self, path: &Path) -> OnDisk {
        server_text(path, &self.hidden)
    }

    fn written_since(
        &self,
        root: &Path,
        since: SystemTime,
        max: usize,
        wanted: &(dyn Fn(&Path) -> bool + Sync),
    ) -> Vec<(PathBuf, bool)> {
        super::walk::walker(root, self.hidden.clone())
            .build()
            .take(max)
            .flatten()
            .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
            .filter(|entry| wanted(entry.path()))
            .filter_map(|entry| {
                let meta = entry.metadata().ok()?;
                let modified = meta.modified().ok()?;
                let created = meta.created().is_ok_and(|at| at >= since);
                (modified >= since).then(|| (entry.into_path(), created))
            })
            .collect()
    }
}

/// A command of the session that started at `started` has ended: the session's language servers
/// are told what it changed (waited for at most [`MAX_WAIT`]). Nothing when no server runs for
/// the session.
pub(crate) async fn commands_ran(started: SystemTime, ctx: &ToolContext) {
    if let Some(hub) = &ctx.lsp {
        let disk = Arc::new(SessionDisk {
            hidden: ctx.hidden.clone(),
        });
        let _ = tokio::time::timeout(MAX_WAIT, hub.commands_ran(started, disk)).await;
    }
}
