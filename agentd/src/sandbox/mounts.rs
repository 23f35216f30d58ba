//! The sandbox's view of the file system, built in its own mount namespace the way bubblewrap
//! builds one: a private, size-limited `/tmp` and `/dev/shm`, the daemon's directories covered
//! by an empty tmpfs, credential stores covered by an unreadable one (a file by an unreadable
//! empty file), protected paths bound read-only over themselves, and writable roots that those
//! steps covered bound back in (readable roots too, read-only). Nothing here changes what other
//! processes see.
//!
//! Landlock cannot make a read-only hole in a writable tree; a read-only bind mount can, and the
//! two intersect: a write must pass both.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::policy::{Policy, SHM_MOUNT, TMP_MOUNT};

/// Builds the view for `policy`. The caller is alone in a new user and mount namespace.
pub(crate) fn build(policy: &Policy) -> Result<(), String> {
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )
    .map_err(|e| format!("a private mount namespace: {e}"))?;
    // Every source is opened before anything is mounted over the way to it.
    let roots: Vec<(PathBuf, OwnedFd)> = policy
        .writable
        .iter()
        .filter_map(|path| open_path(path).ok().map(|fd| (path.clone(), fd)))
        .collect();
    let readable: Vec<(PathBuf, OwnedFd)> = policy
        .readable
        .iter()
        .filter_map(|path| open_path(path).ok().map(|fd| (path.clone(), fd)))
        .collect();
    let size = format!("size={}m", policy.limits.tmp_size_mb);
    if policy.tmp {
        tmpfs(Path::new(TMP_MOUNT), &format!("mode=1777,{size}"))
            .map_err(|e| format!("a private {TMP_MOUNT}: {e}"))?;
    }
    if Path::new(SHM_MOUNT).is_dir() {
        tmpfs(Path::new(SHM_MOUNT), &format!("mode=1777,{size}"))
            .map_err(|e| format!("{SHM_MOUNT}: {e}"))?;
    }
    pin_ancestors(policy, |_| true)?;
    cover(policy, |_| true)?;

    // What covers the way to a root is the sandbox's own (its /tmp, an empty tmpfs), not the
    // host's, unless a root already restored is on the way.
    let scratch: Vec<&Path> = std::iter::once(Path::new(TMP_MOUNT))
        .chain(policy.hidden.iter().map(PathBuf::as_path))
        .chain(policy.secrets.iter().map(PathBuf::as_path))
        .collect();
    // Writable roots that the steps above hid or made read-only come back as they are.
    let mut restored: Vec<PathBuf> = Vec::new();
    for (path, fd) in &roots {
        let hidden = !same_file(path, fd);
        let inside_protected = policy
            .protected
            .iter()
            .any(|p| path.starts_with(p) && path != p);
        if hidden || inside_protected {
            let point = mount_point(path, fd, &scratch, &restored)?;
            bind(&fd_path(fd), &fd_path(&point), true)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            restored.push(path.clone());
        }
    }
    // Readable roots the steps above hid come back read-only.
    for (path, fd) in readable.iter().filter(|(path, fd)| !same_file(path, fd)) {
        let point = mount_point(path, fd, &scratch, &restored)?;
        bind(&fd_path(fd), &fd_path(&point), true)
            .and_then(|()| remount_read_only(path))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        restored.push(path.clone());
    }
    // What lies inside a root that came back is covered again.
    if !restored.is_empty() {
        pin_ancestors(policy, |root| restored.iter().any(|r| r == root))?;
        cover(policy, |p| {
            restored.iter().any(|r| p.starts_with(r) && p != r)
        })?;
    }
    Ok(())
}

/// Makes every directory between a writable root and a path the sandbox hides or protects a
/// mount point of its own (bound over itself, as writable as before): a mount point cannot be
/// renamed, so a command cannot move a hidden or protected path's parent away, hidden mount and
/// all, and put a socket or a configuration of its own where the daemon will look. Outermost
/// first, each bound with what is mounted below it; only below the writable roots `roots`
/// selects (a root bound back in later is pinned once it is back).
fn pin_ancestors(policy: &Policy, roots: impl Fn(&Path) -> bool) -> Result<(), String> {
    let mut ancestors: Vec<&Path> = Vec::new();
    let guarded = policy
        .hidden
        .iter()
        .chain(&policy.secrets)
        .chain(&policy.protected);
    for path in guarded {
        for root in policy
            .writable
            .iter()
            .filter(|w| path.starts_with(w) && roots(w))
        {
            let between = path
                .ancestors()
                .skip(1)
                .take_while(|a| *a != root.as_path() && a.starts_with(root));
            ancestors.extend(between);
        }
    }
    ancestors.sort_by(|a, b| (a.components().count(), a).cmp(&(b.components().count(), b)));
    ancestors.dedup();
    for ancestor in ancestors {
        // A directory that is not there (or not a directory) has nothing to pin.
        if !std::fs::symlink_metadata(ancestor).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        bind(ancestor, ancestor, true)
            .map_err(|e| format!("cannot pin {}: {e}", ancestor.display()))?;
    }
    Ok(())
}

/// Hides and protects the paths of `policy` that `which` selects and that are visible. What is
/// hidden needs no protection (and stays writable for mount points).
fn cover(policy: &Policy, which: impl Fn(&Path) -> bool) -> Result<(), String> {
    for dir in policy.hidden.iter().filter(|p| which(p)) {
        if dir.is_dir() {
            tmpfs(dir, "mode=755,size=64k").map_err(|e| format!("{}: {e}", dir.display()))?;
        }
    }
    let secrets: Vec<&PathBuf> = policy.secrets.iter().filter(|p| which(p)).collect();
    let mut blank = None;
    for secret in &secrets {
        let Ok(meta) = std::fs::symlink_metadata(secret) else {
            continue;
        };
        let covered = if meta.is_dir() {
            tmpfs(secret, "mode=000,size=4k")
        } else {
            if blank.is_none() {
                if !policy.tmp {
                    return Err(format!(
                        "cannot hide {} without a private {TMP_MOUNT}",
                        secret.display()
                    ));
                }
                blank = Some(Blank::make()?);
            }
            let source = blank.as_ref().map(|b| b.path.as_path()).unwrap_or(secret);
            bind(source, secret, false)
        };
        covered.map_err(|e| format!("cannot hide {}: {e}", secret.display()))?;
    }
    drop(blank);
    let hidden = |p: &Path| {
        policy
            .hidden
            .iter()
            .chain(&policy.secrets)
            .any(|h| p.starts_with(h))
    };
    for path in policy.protected.iter().filter(|p| which(p) && !hidden(p)) {
        if std::fs::symlink_metadata(path).is_ok() {
            read_only(path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// An empty file nobody may read, in the sandbox's own `/tmp`, to bind over secret files; it
/// is unlinked once the mounts are made (they keep it).
struct Blank {
    path: PathBuf,
}

impl Blank {
    fn make() -> Result<Blank, String> {
        let path = Path::new(TMP_MOUNT).join(format!(".agentd-blank-{}", std::process::id()));
        std::fs::File::options()
            .write(true)
            .create_new(true)
            .mode(0o000)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| format!("an unreadable file to hide credentials with: {e}"))?;
        Ok(Blank { path })
    }
}

impl Drop for Blank {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds `path` over itself, read-only, keeping the flags its mount has (a user namespace may
/// not drop `nosuid` or `nodev` that it inherited).
fn read_only(path: &Path) -> std::io::Result<()> {
    bind(path, path, true)?;
    remount_read_only(path)
}

/// Makes the bind mount at `path` read-only, keeping the flags its mount has.
fn remount_read_only(path: &Path) -> std::io::Result<()> {
    let kept = locked_flags(path)?;
    mount(
        None,
        path,
        None,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | kept,
        None,
    )
}

/// Opens the place a bind mount of `source` at `path` goes, creating the directories (and, for
/// a file, the empty file) that are missing, never following a symlink: a command could have
/// left links in its private /tmp to send the mount, and the directories made for it, to the
/// host. What is in the way below `scratch` (the sandbox's own /tmp or tmpfs, not a root in
/// `restored`) is removed; anywhere else it is an error.
fn mount_point(
    path: &Path,
    source: &OwnedFd,
    scratch: &[&Path],
    restored: &[PathBuf],
) -> Result<OwnedFd, String> {
    use std::os::fd::FromRawFd;
    let fail =
        |what: &str, e: std::io::Error| format!("a mount point at {}: {what}: {e}", path.display());
    let is_dir = fstat(source).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);
    let parts: Vec<&std::ffi::OsStr> = path
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    let mut dir = open_path(Path::new("/")).map_err(|e| fail("/", e))?;
    let mut here = PathBuf::from("/");
    for (i, name) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let want_dir = !last || is_dir;
        here.push(name);
        let c = CString::new(name.as_bytes())
            .map_err(|_| format!("{} has a NUL byte", path.display()))?;
        let removable = scratch.iter().any(|s| here.starts_with(s) && here != *s)
            && !restored.iter().any(|r| here.starts_with(r));
        let mut tries = 0;
        loop {
            tries += 1;
            let flags = libc::O_PATH
                | libc::O_NOFOLLOW
                | libc::O_CLOEXEC
                | if want_dir { libc::O_DIRECTORY } else { 0 };
            // SAFETY: openat with a NUL-terminated name relative to a descriptor we own.
            let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags) };
            if fd >= 0 {
                // SAFETY: a new descriptor of our own.
                dir = unsafe { OwnedFd::from_raw_fd(fd) };
                break;
            }
            let err = std::io::Error::last_os_error();
            if tries > 2 {
                return Err(fail(&here.display().to_string(), err));
            }
            match err.raw_os_error() {
                Some(libc::ENOENT) => {
                    // SAFETY: mkdirat and openat with a NUL-terminated name relative to a
                    // descriptor we own.
                    let made = unsafe {
                        if want_dir {
                            libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o755)
                        } else {
                            let f = libc::openat(
                                dir.as_raw_fd(),
                                c.as_ptr(),
                                libc::O_CREAT
                                    | libc::O_EXCL
                                    | libc::O_WRONLY
                                    | libc::O_NOFOLLOW
                                    | libc::O_CLOEXEC,
                                0o644,
                            );
                            if f >= 0 {
                                libc::close(f);
                                0
                            } else {
                                -1
                            }
                        }
                    };
                    if made != 0 {
                        return Err(fail(
                            &here.display().to_string(),
                            std::io::Error::last_os_error(),
                        ));
                    }
                }
                Some(libc::ELOOP | libc::ENOTDIR) if removable => {
                    // SAFETY: unlinkat of a NUL-terminated name relative to a descriptor we own;
                    // a link or file, never a directory (no AT_REMOVEDIR).
                    if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) } != 0 {
                        return Err(fail(
                            &here.display().to_string(),
                            std::io::Error::last_os_error(),
                        ));
                    }
                }
                _ => return Err(fail(&here.display().to_string(), err)),
            }
        }
    }
    Ok(dir)
}

fn open_path(path: &Path) -> std::io::Result<OwnedFd> {
    std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(path)
        .map(OwnedFd::from)
}

fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

fn fstat(fd: &OwnedFd) -> std::io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes into the struct we own; the descriptor is open.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

/// Whether `path` still leads to the file `fd` was opened on.
fn same_file(path: &Path, fd: &OwnedFd) -> bool {
    match (std::fs::metadata(path), fstat(fd)) {
        (Ok(meta), Ok(st)) => meta.dev() == st.st_dev && meta.ino() == st.st_ino,
        _ => false,
    }
}

/// The per-mount flags of the mount `path` is on that a remount must repeat.
fn locked_flags(path: &Path) -> std::io::Result<libc::c_ulong> {
    let c = cstring(path)?;
    // SAFETY: an all-zero statvfs is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: statvfs reads a NUL-terminated path and writes into the struct we own.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(pairs
        .iter()
        .filter(|(st_flag, _)| st.f_flag & st_flag != 0)
        .fold(0, |acc, (_, ms)| acc | ms))
}

fn bind(source: &Path, target: &Path, recursive: bool) -> std::io::Result<()> {
    let flags = libc::MS_BIND | if recursive { libc::MS_REC } else { 0 };
    mount(Some(source), target, None, flags, None)
}

fn tmpfs(target: &Path, options: &str) -> std::io::Result<()> {
    mount(
        Some(Path::new("tmpfs")),
        target,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(options),
    )
}

fn cstring(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("a path with a NUL byte"))
}

fn mount(
    source: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> std::io::Result<()> {
    let source = source.map(cstring).transpose()?;
    let target = cstring(target)?;
    let fstype = fstype
        .map(|t| CString::new(t).map_err(std::io::Error::other))
        .transpose()?;
    let data = data
        .map(|d| CString::new(d).map_err(std::io::Error::other))
        .transpose()?;
    let ptr = |c: &Option<CString>| c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: every pointer is a NUL-terminated string we own, or null where mount allows it.
    let done = unsafe {
        libc::mount(
            ptr(&source),
            target.as_ptr(),
            ptr(&fstype),
            flags,
            data.as_ref()
                .map_or(std::ptr::null(), |d| d.as_ptr().cast()),
        )
    };
    if done != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Mounts a `proc` of the caller's PID namespace over `/proc`, so that the sandbox sees only
/// its own processes. The caller is the namespace's first process.
pub(crate) fn own_proc() -> std::io::Result<()> {
    mount(
        Some(Path::new("proc")),
        Path::new("/proc"),
        Some("proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )
}
