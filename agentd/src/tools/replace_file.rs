//! Replacing a file's content all at once, at the path the permission check saw: a temporary
//! file in the same directory renamed over it, the directory reached without following a
//! symlink on the way. A command running meanwhile (a subagent's, in the sandbox) may swap a
//! directory of the path for a link elsewhere; the write then fails instead of landing there.

use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{ToolContext, read};
use crate::regular_file::open_dir_nofollow;

/// Why a whole-file write did not land.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    /// The file system refused.
    #[error("{}", read::describe(.0))]
    Io(#[from] std::io::Error),
    /// The run was cancelled before the file was replaced; nothing changed.
    #[error("interrupted: the run was cancelled before the file was written")]
    Interrupted,
}

/// Replaces a file's content all at once (a temporary file renamed over it), so that nobody,
/// the file watcher included, ever sees it half written. The file is the one the permission
/// check resolved (`ctx.target`; else `path` with its symlinks followed now), missing
/// directories are made, and the old file's permissions are kept. The rename happens only if
/// the call commits before a cancel claims it; the stale-file guard learns the new content
/// just before.
pub(crate) async fn write_whole(
    ctx: &ToolContext,
    path: &Path,
    bytes: &[u8],
) -> Result<(), WriteError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let target = match &ctx.target {
        Some(target) => target.clone(),
        None => tokio::fs::canonicalize(path)
            .await
            .unwrap_or_else(|_| path.to_path_buf()),
    };
    let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(std::io::Error::other("the path names no file").into());
    };
    let (parent, name) = (parent.to_path_buf(), name.to_os_string());
    let unique = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = format!(
        ".{}.agentd-{}-{unique}",
        name.to_string_lossy(),
        std::process::id()
    );
    let owned = bytes.to_vec();
    let staged = tokio::task::spawn_blocking(move || stage(&parent, &name, &tmp, &owned))
        .await
        .map_err(std::io::Error::other)??;
    if !ctx.gate.commit() {
        staged.discard();
        return Err(WriteError::Interrupted);
    }
    ctx.files.writing(path, bytes);
    tokio::task::spawn_blocking(move || staged.land())
        .await
        .map_err(std::io::Error::other)??;
    Ok(())
}

/// A temporary file written in the target's directory, not yet renamed over it.
struct Staged {
    dir: OwnedFd,
    tmp: CString,
    name: CString,
}

fn stage(
    parent: &Path,
    name: &std::ffi::OsStr,
    tmp: &str,
    bytes: &[u8],
) -> std::io::Result<Staged> {
    let dir = open_dir_nofollow(parent, true)?;
    let cstr = |s: &[u8]| CString::new(s).map_err(|_| std::io::Error::other("a NUL byte"));
    let staged = Staged {
        tmp: cstr(tmp.as_bytes())?,
        name: cstr(name.as_bytes())?,
        dir,
    };
    // SAFETY: openat with a NUL-terminated name relative to a descriptor we own.
    let fd = unsafe {
        libc::openat(
            staged.dir.as_raw_fd(),
            staged.tmp.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor of our own.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let written = file.write_all(bytes).map(|()| {
        // The permissions of the file it replaces, if that is a regular file.
        // SAFETY: an all-zero stat is a valid value to be overwritten.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstatat reads the NUL-terminated name and writes into the struct we own.
        let found = unsafe {
            libc::fstatat(
                staged.dir.as_raw_fd(),
                staged.name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if found == 0 && st.st_mode & libc::S_IFMT == libc::S_IFREG {
            // SAFETY: fchmod on the descriptor we own.
            unsafe { libc::fchmod(file.as_raw_fd(), st.st_mode & 0o7777) };
        }
    });
    if let Err(err) = written {
        staged.discard();
        return Err(err);
    }
    Ok(staged)
}

impl Staged {
    /// Renames the temporary file over the target.
    fn land(self) -> std::io::Result<()> {
        // SAFETY: renameat with NUL-terminated names relative to a descriptor we own.
        let renamed = unsafe {
            libc::renameat(
                self.dir.as_raw_fd(),
                self.tmp.as_ptr(),
                self.dir.as_raw_fd(),
                self.name.as_ptr(),
            )
        };
        if renamed != 0 {
            let err = std::io::Error::last_os_error();
            self.discard();
            return Err(err);
        }
        Ok(())
    }

    /// Removes the temporary file.
    fn discard(&self) {
        // SAFETY: unlinkat of a NUL-terminated name relative to a descriptor we own.
        unsafe { libc::unlinkat(self.dir.as_raw_fd(), self.tmp.as_ptr(), 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_directory_swapped_for_a_link_after_the_check_is_not_written_through() {
        let base = tempfile::tempdir().unwrap();
        let (project, outside) = (base.path().join("p"), base.path().join("outside"));
        std::fs::create_dir_all(project.join("d")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let mut ctx = ToolContext::standalone(&project);
        // Checked while `d` was a directory of the project.
        ctx.target = Some(project.join("d/config"));
        std::fs::remove_dir(project.join("d")).unwrap();
        std::os::unix::fs::symlink(&outside, project.join("d")).unwrap();
        let written = write_whole(&ctx, &project.join("d/config"), b"planted").await;
        assert!(written.is_err());
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        // Missing directories of the checked path are made, and the file lands there.
        ctx.target = Some(project.join("new/dir/f.txt"));
        write_whole(&ctx, &project.join("new/dir/f.txt"), b"ok")
            .await
            .unwrap();
        assert_eq!(std::fs::read(project.join("new/dir/f.txt")).unwrap(), b"ok");
    }
}
