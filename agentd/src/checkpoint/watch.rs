//! What changed in the session directory during a run, told by the kernel: the walk for a
//! run's start checkpoint puts an inotify watch on every directory it enters, and the run's end
//! checkpoint reads the events and looks again only at the directories they name (and at new
//! ones, whole). When the kernel dropped events, a watch could not be added, or an ignore file
//! changed, the end walks everything, as without a watch.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The events that say a directory's entries changed.
const MASK: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_DONT_FOLLOW
    | libc::IN_ONLYDIR
    | libc::IN_EXCL_UNLINK;

/// Watches on the directories of one walk.
#[derive(Debug)]
pub(crate) struct Watch {
    fd: OwnedFd,
    /// Watch descriptor → directory, relative to the walked directory.
    dirs: HashMap<i32, Vec<u8>>,
    /// A watch could not be added: the events cannot be trusted to be complete.
    incomplete: bool,
}

/// What the events say changed.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    /// Directories whose entries changed (relative paths).
    pub(crate) dirty: HashSet<Vec<u8>>,
    /// Everything must be looked at again.
    pub(crate) everything: bool,
}

impl Watch {
    /// A new, empty set of watches; `None` where the kernel has no inotify for us.
    pub(crate) fn new() -> Option<Watch> {
        // SAFETY: inotify_init1 returns a new descriptor or -1.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        (fd >= 0).then(|| Watch {
            // SAFETY: a new descriptor of our own.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            dirs: HashMap::new(),
            incomplete: false,
        })
    }

    /// Watches `dir` (at `relative` in the walk). Called before its entries are read, so that a
    /// change after the read is seen.
    pub(crate) fn add(&mut self, dir: &Path, relative: &[u8]) {
        let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
            self.incomplete = true;
            return;
        };
        // SAFETY: inotify_add_watch reads a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), path.as_ptr(), MASK) };
        if wd < 0 {
            self.incomplete = true;
        } else {
            self.dirs.insert(wd, relative.to_vec());
        }
    }

    /// Reads every event so far: the directories that changed.
    pub(crate) fn changes(&self) -> Changes {
        let mut changes = Changes {
            everything: self.incomplete,
            ..Changes::default()
        };
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: read writes at most `buf.len()` bytes into `buf`.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            let header = std::mem::size_of::<libc::inotify_event>();
            while at + header <= n as usize {
                // SAFETY: the kernel wrote whole events; read_unaligned copes with alignment.
                let event: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf.as_ptr().add(at).cast()) };
                let name_bytes = buf
                    .get(at + header..at + header + event.len as usize)
                    .unwrap_or_default();
                let name: &[u8] = name_bytes.split(|b| *b == 0).next().unwrap_or_default();
                at += header + event.len as usize;
                if event.mask & libc::IN_Q_OVERFLOW != 0 || name == b".gitignore" {
                    changes.everything = true;
                    continue;
                }
                let Some(dir) = self.dirs.get(&event.wd) else {
                    continue;
                };
                changes.dirty.insert(dir.clone());
                // The directory itself went away or moved: its parent's entries changed too.
                if event.mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 {
                    let parent = dir
                        .iter()
                        .rposition(|b| *b == b'/')
                        .map_or(Vec::new(), |at| dir[..at].to_vec());
                    changes.dirty.insert(parent);
                }
            }
        }
        changes
    }
}

/// Joins a relative path (bytes) to `root`.
pub(crate) fn join(root: &Path, relative: &[u8]) -> PathBuf {
    if relative.is_empty() {
        root.to_path_buf()
    } else {
        root.join(std::ffi::OsStr::from_bytes(relative))
    }
}
