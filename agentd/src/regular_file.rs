//! Opening files that someone else controls (the project, the model): regular files only, and
//! never more bytes than asked for. A symlink to `/dev/zero`, a FIFO or a socket named like a
//! source file must not make the daemon allocate without end or wait for ever
//! (docs/architecture.md#tools).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Why a file could not be opened for reading.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    /// The file is not a regular file.
    #[error("it is {kind}, not a regular file; only regular files can be read")]
    NotRegular {
        /// What it is, with an article: "a directory", "a FIFO (named pipe)", ...
        kind: &'static str,
    },
    /// The file could not be opened or examined.
    #[error("{}", describe(.0))]
    Io(#[from] io::Error),
}

/// Opens `path` (symlinks followed) for reading if it is a regular file. The open itself never
/// blocks: a FIFO is opened non-blocking, seen for what it is and refused.
pub(crate) fn open(path: &Path) -> Result<File, OpenError> {
    let file = open_nonblocking(path).map_err(|err| {
        // A socket cannot be opened at all (ENXIO): name what it is.
        match std::fs::metadata(path) {
            Ok(meta) if !meta.is_file() => OpenError::NotRegular {
                kind: kind_of(&meta.file_type()),
            },
            _ => OpenError::Io(err),
        }
    })?;
    let meta = file.metadata()?;
    let kind = kind_of(&meta.file_type());
    if kind != "a regular file" {
        return Err(OpenError::NotRegular { kind });
    }
    if on_kernel_fs(&file) {
        return Err(OpenError::NotRegular { kind: KERNEL_FILE });
    }
    clear_nonblocking(&file)?;
    Ok(file)
}

/// What a file of `/proc`, `/sys` and the like is called in a refusal.
const KERNEL_FILE: &str = "a kernel interface file (/proc, /sys), not a file of a project";

/// Whether `file` lies on one of the kernel's pseudo file systems. Their "regular" files are
/// the reading process's own state: for the daemon, `/proc/self/environ` holds its keys, and a
/// project's symlink to it must not be read into a tool result or sent to a language server.
#[cfg(target_os = "linux")]
fn on_kernel_fs(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    /// procfs, sysfs, debugfs, securityfs, tracefs, configfs, bpf, cgroup, cgroup2, efivarfs.
    const KERNEL_FS: [i64; 10] = [
        0x9fa0,
        0x6265_6572,
        0x6462_6720,
        0x7363_6673,
        0x7472_6163,
        0x6265_6570,
        0xcafe_4a11,
        0x0027_e0eb,
        0x6367_7270,
        0xde5e_81e4,
    ];
    // SAFETY: fstatfs writes into the struct we pass, on a descriptor we own.
    let kind = unsafe {
        let mut stat = std::mem::zeroed::<libc::statfs>();
        if libc::fstatfs(file.as_raw_fd(), &mut stat) != 0 {
            // Undecided: refuse.
            return true;
        }
        stat.f_type as i64
    };
    KERNEL_FS.contains(&kind)
}

#[cfg(not(target_os = "linux"))]
fn on_kernel_fs(_: &File) -> bool {
    false
}

/// Opens `path` for reading without blocking and without looking at it again, for a file that
/// a directory listing already called regular: if it was swapped for a FIFO since, reads see
/// no data instead of waiting; the caller bounds what it reads.
pub(crate) fn open_listed(path: &Path) -> io::Result<File> {
    let file = open_nonblocking(path)?;
    if on_kernel_fs(&file) {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, KERNEL_FILE));
    }
    Ok(file)
}

/// Reads at most `max` bytes of the regular file `path`; `Ok((bytes, true))` when the file had
/// more than that.
pub(crate) fn read_at_most(path: &Path, max: usize) -> Result<(Vec<u8>, bool), OpenError> {
    Ok(read_file_at_most(open(path)?, max)?)
}

/// Reads at most `max` bytes of an open file; `Ok((bytes, true))` when it had more.
pub(crate) fn read_file_at_most(file: File, max: usize) -> io::Result<(Vec<u8>, bool)> {
    let mut bytes = Vec::new();
    file.take(max as u64 + 1).read_to_end(&mut bytes)?;
    let more = bytes.len() > max;
    bytes.truncate(max);
    Ok((bytes, more))
}

/// Reads the regular file `path` as text (lossily), at most `max` bytes; `None` when it is
/// missing, not a regular file or unreadable.
pub(crate) fn read_text(path: &Path, max: usize) -> Option<String> {
    let (bytes, _) = read_at_most(path, max).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Opens the directory `dir` (an absolute path) without following a symlink on the way: each
/// part must be a real directory, so a path resolved earlier cannot be sent elsewhere by a
/// link swapped in since. With `create`, missing directories are made.
pub(crate) fn open_dir_nofollow(dir: &Path, create: bool) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    let open_at = |at: i32, name: &std::ffi::CStr| {
        // SAFETY: openat with a NUL-terminated name relative to an open descriptor.
        let fd = unsafe {
            libc::openat(
                at,
                name.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            // SAFETY: a new descriptor of our own.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        }
    };
    if !dir.is_absolute() {
        return Err(io::Error::other(format!(
            "{} is not absolute",
            dir.display()
        )));
    }
    let mut here = open_at(libc::AT_FDCWD, c"/")?;
    for part in dir.components() {
        let std::path::Component::Normal(name) = part else {
            if part == std::path::Component::RootDir {
                continue;
            }
            return Err(io::Error::other(format!(
                "{} is not resolved",
                dir.display()
            )));
        };
        let name = std::ffi::CString::new(name.as_bytes())
            .map_err(|_| io::Error::other("a path with a NUL byte"))?;
        let next = match open_at(here.as_raw_fd(), &name) {
            Err(err) if create && err.raw_os_error() == Some(libc::ENOENT) => {
                // SAFETY: mkdirat with a NUL-terminated name relative to a descriptor we own.
                let made = unsafe { libc::mkdirat(here.as_raw_fd(), name.as_ptr(), 0o755) };
                if made != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
                    return Err(io::Error::last_os_error());
                }
                open_at(here.as_raw_fd(), &name)
            }
            other => other,
        };
        here = next.map_err(|err| match err.raw_os_error() {
            Some(libc::ELOOP | libc::ENOTDIR) => io::Error::other(format!(
                "{} changed since the call was checked: a part of it is no longer a directory (a symlink?); nothing was written",
                dir.display()
            )),
            _ => err,
        })?;
    }
    Ok(here)
}

/// What kind of file `file_type` describes, with an article.
pub(crate) fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Regular files ignore `O_NONBLOCK`, but clear it so the descriptor behaves as usual.
#[cfg(unix)]
fn clear_nonblocking(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own, with flags from F_GETFL.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags == -1 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn clear_nonblocking(_: &File) -> io::Result<()> {
    Ok(())
}

/// An I/O error in words a model acts on.
pub(crate) fn describe(err: &io::Error) -> String {
    match err.kind() {
        io::ErrorKind::NotFound => "no such file".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_directories_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let link = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        for (path, kind) in [
            (fifo.as_path(), "a FIFO (named pipe)"),
            (link.as_path(), "a character device"),
            (dir.path(), "a directory"),
        ] {
            match open(path) {
                Err(OpenError::NotRegular { kind: found }) => assert_eq!(found, kind),
                other => panic!("{}: {other:?}", path.display()),
            }
        }
    }

    #[test]
    fn the_kernels_files_are_refused_even_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("e.py");
        std::os::unix::fs::symlink("/proc/self/environ", &link).unwrap();
        for path in [Path::new("/proc/self/status"), link.as_path()] {
            match open(path) {
                Err(OpenError::NotRegular { kind }) => assert_eq!(kind, KERNEL_FILE),
                other => panic!("{}: {other:?}", path.display()),
            }
            assert!(open_listed(path).is_err(), "{}", path.display());
        }
        let plain = dir.path().join("m.py");
        std::fs::write(&plain, "x = 1\n").unwrap();
        assert!(open(&plain).is_ok());
    }

    #[test]
    fn reads_stop_at_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "0123456789").unwrap();
        assert_eq!(read_at_most(&path, 4).unwrap(), (b"0123".to_vec(), true));
        assert_eq!(
            read_at_most(&path, 10).unwrap(),
            (b"0123456789".to_vec(), false)
        );
        assert_eq!(read_text(&dir.path().join("none"), 4), None);
    }
}
