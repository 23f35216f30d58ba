//! Who is at the other end of a connection (docs/architecture.md#protocol,
//! docs/architecture.md#sandbox). The daemon serves processes of its own user in its own user
//! namespace only: a process in another user namespace is a command in auto mode's sandbox, which
//! must not drive the daemon that confined it.
//!
//! The check fails closed. The peer is pinned by a pidfd (`SO_PEERPIDFD`, Linux 6.5), so a
//! process that exits before it is looked at cannot lend its id to another: a peer that is gone
//! is refused. Older kernels compare the process's start time before and after its namespace
//! is read, and refuse when either read fails.

use interprocess::local_socket::tokio::Stream;
use protocol::{ErrorCode, ErrorInfo};

/// Looks at the peer of `stream`: the stream back (it is taken apart to reach its socket), and
/// a refusal for a peer of another user, of another user namespace, or that cannot be told.
#[cfg(target_os = "linux")]
pub(crate) fn inspect(stream: Stream) -> std::io::Result<(Stream, Result<(), ErrorInfo>)> {
    use std::os::fd::{AsRawFd, OwnedFd};
    let Stream::UdSocket(socket) = stream;
    let fd = OwnedFd::try_from(socket)?;
    let verdict = check(fd.as_raw_fd());
    let socket = interprocess::os::unix::uds_local_socket::tokio::Stream::try_from(fd)?;
    Ok((Stream::from(socket), verdict))
}

#[cfg(target_os = "linux")]
fn check(fd: std::os::fd::RawFd) -> Result<(), ErrorInfo> {
    let refuse = |why: String| {
        tracing::warn!("refused a peer: {why}");
        Err(ErrorInfo::new(ErrorCode::InvalidRequest, why))
    };
    let creds = match linux::peer_creds(fd) {
        Ok(creds) => creds,
        Err(err) => return refuse(format!("cannot tell who is connecting: {err}")),
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if creds.uid != me {
        return refuse("this daemon serves only its own user".to_string());
    }
    match linux::same_user_namespace(fd, creds.pid) {
        Ok(true) => Ok(()),
        Ok(false) => refuse("commands in auto mode's sandbox cannot use agentd".to_string()),
        Err(why) => refuse(format!(
            "cannot tell whether the connecting process runs in auto mode's sandbox ({why}); connect again from a process that stays until it is answered"
        )),
    }
}

/// Other Unix systems: the peer's user only.
#[cfg(all(unix, not(target_os = "linux")))]
pub(crate) fn inspect(stream: Stream) -> std::io::Result<(Stream, Result<(), ErrorInfo>)> {
    use interprocess::local_socket::traits::StreamCommon;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let verdict = match stream.peer_creds().ok().and_then(|c| c.euid()) {
        Some(uid) if uid == me => Ok(()),
        _ => Err(ErrorInfo::new(
            ErrorCode::InvalidRequest,
            "this daemon serves only its own user",
        )),
    };
    Ok((stream, verdict))
}

/// Windows pipes are checked by the OS's access rules.
#[cfg(not(unix))]
pub(crate) fn inspect(stream: Stream) -> std::io::Result<(Stream, Result<(), ErrorInfo>)> {
    Ok((stream, Ok(())))
}

#[cfg(target_os = "linux")]
mod linux {
    use std::os::fd::{FromRawFd, OwnedFd, RawFd};

    /// `SO_PEERPIDFD` (Linux 6.5); the same number on every architecture that has it.
    const SO_PEERPIDFD: libc::c_int = 77;

    /// The peer's process and user, as the kernel recorded them at `connect`.
    pub(crate) struct Creds {
        pub(crate) pid: libc::pid_t,
        pub(crate) uid: libc::uid_t,
    }

    pub(crate) fn peer_creds(fd: RawFd) -> std::io::Result<Creds> {
        let mut cred = libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `cred`.
        let done = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&raw mut cred).cast(),
                &mut len,
            )
        };
        if done != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if cred.pid <= 0 {
            return Err(std::io::Error::other("the kernel gave no process id"));
        }
        Ok(Creds {
            pid: cred.pid,
            uid: cred.uid,
        })
    }

    /// Whether the peer process `pid` of socket `fd` is in this process's user namespace;
    /// an error when it cannot be told for sure.
    pub(crate) fn same_user_namespace(fd: RawFd, pid: libc::pid_t) -> Result<bool, Undecided> {
        let ours = std::fs::read_link("/proc/self/ns/user").map_err(Undecided::OwnNamespace)?;
        let theirs = match peer_pidfd(fd) {
            Some(pidfd) => {
                let pid = pid_of(&pidfd).ok_or(Undecided::Ended)?;
                let ns = namespace_of(pid)?;
                // Still the same process after the read: its id was not reused meanwhile.
                if pid_of(&pidfd) != Some(pid) {
                    return Err(Undecided::EndedWhileLooked);
                }
                ns
            }
            None => {
                let before = start_time(pid).ok_or(Undecided::Ended)?;
                let ns = namespace_of(pid)?;
                if start_time(pid) != Some(before) {
                    return Err(Undecided::EndedWhileLooked);
                }
                ns
            }
        };
        Ok(theirs == ours)
    }

    /// Why it cannot be told whether a peer shares the daemon's user namespace (so it is
    /// refused).
    #[derive(Debug, thiserror::Error)]
    pub(crate) enum Undecided {
        /// The daemon's own namespace cannot be read.
        #[error("cannot read this daemon's user namespace: {0}")]
        OwnNamespace(std::io::Error),
        /// The peer's namespace cannot be read.
        #[error("cannot read its user namespace: {0}")]
        TheirNamespace(std::io::Error),
        /// The peer process is gone.
        #[error("the process has ended")]
        Ended,
        /// The peer process ended (its id may be reused) while it was looked at.
        #[error("the process ended while it was looked at")]
        EndedWhileLooked,
    }

    fn namespace_of(pid: libc::pid_t) -> Result<std::path::PathBuf, Undecided> {
        std::fs::read_link(format!("/proc/{pid}/ns/user")).map_err(Undecided::TheirNamespace)
    }

    fn peer_pidfd(fd: RawFd) -> Option<OwnedFd> {
        let mut pidfd: libc::c_int = -1;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `pidfd`.
        let done = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                SO_PEERPIDFD,
                (&raw mut pidfd).cast(),
                &mut len,
            )
        };
        // SAFETY: on success the kernel gave us a new descriptor of our own.
        (done == 0 && pidfd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(pidfd) })
    }

    /// The process id a pidfd refers to, while that process runs (`Pid: -1` once it ended).
    fn pid_of(pidfd: &OwnedFd) -> Option<libc::pid_t> {
        use std::os::fd::AsRawFd;
        let info =
            std::fs::read_to_string(format!("/proc/self/fdinfo/{}", pidfd.as_raw_fd())).ok()?;
        let pid: libc::pid_t = info
            .lines()
            .find_map(|l| l.strip_prefix("Pid:"))?
            .trim()
            .parse()
            .ok()?;
        (pid > 0).then_some(pid)
    }

    /// The start time of process `pid` (in clock ticks since boot), field 22 of its `stat`.
    fn start_time(pid: libc::pid_t) -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name may hold spaces and parentheses: count from the last `)`.
        let (_, rest) = stat.rsplit_once(") ")?;
        rest.split_whitespace().nth(19)?.parse().ok()
    }
}
