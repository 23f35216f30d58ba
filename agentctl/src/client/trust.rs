//! A client trusts only its own daemon: before connecting, the socket's directory must belong
//! to the user and be writable by nobody else (so nobody else can have put the socket there);
//! after connecting, the process at the other end must run as the user. Otherwise not a byte
//! is sent: requests carry API keys.

use std::path::Path;

/// Why the socket or the process behind it is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refusing to talk to {what}: {problem}; {fix}")]
pub struct Untrusted {
    /// The directory or socket.
    pub what: String,
    /// What is wrong.
    pub problem: String,
    /// What to do about it.
    pub fix: String,
}

const FIX: &str = "another user may be impersonating agentd. Remove it, or set XDG_RUNTIME_DIR \
                   or AGENTD_SOCKET to a directory only you can write";

/// Checks the directory that holds `socket`. A directory that does not exist is fine: nobody
/// listens there, and the daemon creates it private.
#[cfg(unix)]
pub fn check_socket_dir(socket: &Path) -> Result<(), Untrusted> {
    use std::os::unix::fs::MetadataExt;
    let Some(dir) = socket.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    let me = current_uid();
    let what = || format!("the socket directory {}", dir.display());
    // The entry itself (a symlink put there by someone else counts) and what it leads to.
    for meta in [std::fs::symlink_metadata(dir), std::fs::metadata(dir)] {
        let Ok(meta) = meta else { return Ok(()) };
        if meta.uid() != me {
            return Err(Untrusted {
                what: what(),
                problem: format!("it is owned by uid {}, not by you (uid {me})", meta.uid()),
                fix: FIX.to_string(),
            });
        }
        if !meta.file_type().is_symlink() && meta.mode() & 0o022 != 0 {
            return Err(Untrusted {
                what: what(),
                problem: format!("it is writable by others (mode {:o})", meta.mode() & 0o7777),
                fix: format!("run `chmod 700 {}`, or {FIX}", dir.display()),
            });
        }
    }
    Ok(())
}

/// Windows pipes have no directory to check.
#[cfg(not(unix))]
pub fn check_socket_dir(_socket: &Path) -> Result<(), Untrusted> {
    Ok(())
}

/// Checks that the process at the other end of `stream` runs as this user.
#[cfg(unix)]
pub fn check_peer(
    socket: &Path,
    stream: &interprocess::local_socket::tokio::Stream,
) -> Result<(), Untrusted> {
    use interprocess::local_socket::traits::StreamCommon;
    let what = || format!("the process listening on {}", socket.display());
    let me = current_uid();
    match stream.peer_creds().ok().and_then(|creds| creds.euid()) {
        Some(uid) if uid == me => Ok(()),
        Some(uid) => Err(Untrusted {
            what: what(),
            problem: format!("it runs as uid {uid}, not as you (uid {me})"),
            fix: FIX.to_string(),
        }),
        None => Err(Untrusted {
            what: what(),
            problem: "its user cannot be told".to_string(),
            fix: FIX.to_string(),
        }),
    }
}

/// Windows pipes are checked by the OS's access rules.
#[cfg(not(unix))]
pub fn check_peer(
    _socket: &Path,
    _stream: &interprocess::local_socket::tokio::Stream,
) -> Result<(), Untrusted> {
    Ok(())
}

/// The user this process runs as (its effective uid).
#[cfg(unix)]
pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_directory_others_can_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("agentd.sock");
        assert_eq!(check_socket_dir(&socket), Ok(()));
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = check_socket_dir(&socket).unwrap_err();
        assert!(
            err.problem.contains("writable by others (mode 777)"),
            "{err}"
        );
        assert_eq!(
            check_socket_dir(Path::new("/no/such/dir/agentd.sock")),
            Ok(())
        );
    }
}
