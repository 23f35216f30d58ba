//! A store's files, opened without following a link: the `images` directory itself and each
//! `<hash>.<ext>` in it must be what the daemon wrote, never a link planted to a secret file
//! (which would be sent to the model) nor a FIFO (docs/architecture.md#images).

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Why a stored file was not read.
#[derive(Debug)]
pub(crate) enum Unread {
    /// It is not there (nor is the directory).
    Missing,
    /// It is there but is not a regular file the daemon wrote: what it is.
    Unsound(String),
}

/// Opens the directory `dir` itself: refused (as [`Unread::Unsound`]) when it is a symlink or
/// not a directory.
pub(crate) fn open_dir(dir: &Path) -> Result<File, Unread> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|err| match (unread(&err), std::fs::symlink_metadata(dir)) {
            (Unread::Unsound(_), Ok(meta)) if !meta.is_dir() => Unread::Unsound(format!(
                "{}, not a directory",
                crate::regular_file::kind_of(&meta.file_type())
            )),
            (unread, _) => unread,
        })
}

/// Checks that the directory `dir`, if it exists, is one and not a symlink: before writing in
/// it. `Ok(false)` when it does not exist yet.
pub(crate) fn check_dir(dir: &Path) -> io::Result<bool> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(true),
        Ok(meta) => Err(io::Error::other(format!(
            "it is {}, not a directory; remove it",
            crate::regular_file::kind_of(&meta.file_type())
        ))),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err),
    }
}

/// Reads the regular file `name` in the open directory `dir` (a symlink is not followed, a
/// FIFO is not waited on), at most `max` bytes: a larger file is [`Unread::Unsound`] too.
pub(crate) fn read_in(dir: &File, name: &str, max: usize) -> Result<Vec<u8>, Unread> {
    let name = std::ffi::CString::new(name)
        .map_err(|_| Unread::Unsound("a name with a NUL byte".to_owned()))?;
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
    // SAFETY: openat with a NUL-terminated name relative to a descriptor we hold open.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(unread(&io::Error::last_os_error()));
    }
    // SAFETY: a new descriptor of our own.
    let file = unsafe { File::from_raw_fd(fd) };
    let meta = file.metadata().map_err(|err| unread(&err))?;
    if !meta.is_file() {
        let kind = crate::regular_file::kind_of(&meta.file_type());
        return Err(Unread::Unsound(format!("{kind}, not a regular file")));
    }
    match crate::regular_file::read_file_at_most(file, max) {
        Ok((bytes, false)) => Ok(bytes),
        Ok((_, true)) => Err(Unread::Unsound(format!(
            "larger than {max} bytes, more than the daemon stores"
        ))),
        Err(err) => Err(unread(&err)),
    }
}

/// Whether the regular file `name` in the open directory `dir` holds exactly `bytes`.
pub(crate) fn holds(dir: &File, name: &str, bytes: &[u8]) -> bool {
    read_in(dir, name, bytes.len()).is_ok_and(|held| held == bytes)
}

/// What an error opening or reading a stored file means.
fn unread(err: &io::Error) -> Unread {
    match err.raw_os_error() {
        Some(libc::ENOENT) => Unread::Missing,
        Some(libc::ELOOP) => Unread::Unsound("a symbolic link, which is not followed".to_owned()),
        Some(libc::ENOTDIR) => Unread::Unsound("not a directory".to_owned()),
        _ => Unread::Unsound(format!("unreadable ({err})")),
    }
}
