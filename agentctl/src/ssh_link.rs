//! The link to a daemon on another machine: the user's own `ssh` (its config, agent, jump hosts
//! and ControlMaster all apply) running `agentctl bridge` there, with the client speaking the
//! usual protocol over its stdin and stdout. ssh authenticates the machine and the user; the
//! bridge checks the socket on the other side, so no local trust check applies here.

use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use agentctl::client::{Client, ClientError};
use tokio::io::AsyncWrite;
use tokio::process::{Child, ChildStdin, Command};

use crate::host::SSH_VAR;
use crate::hosts::Remote;

/// Why the link could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The ssh program could not be started.
    #[error(
        "cannot start `{program}` to reach {host}: {source}; install OpenSSH's client or set {SSH_VAR}"
    )]
    Spawn {
        /// The program tried.
        program: String,
        /// The host.
        host: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// ssh ran, but no daemon answered through it.
    #[error(
        "no agentd answered through ssh on {host} ({reason}); see ssh's message above, and check that `agentctl` and `agentd` are installed there (on the PATH of a non-interactive shell)"
    )]
    NoBridge {
        /// The host.
        host: String,
        /// How the handshake ended.
        reason: String,
    },
    /// The remote shell printed text on stdout where the bridge's frames should be.
    #[error(
        "the remote shell on {host} printed text before the bridge started: `{text}`; make its startup files print nothing for non-interactive shells (e.g. `[ -z \"$PS1\" ] && return` at the top of ~/.bashrc)"
    )]
    Banner {
        /// The host.
        host: String,
        /// What it printed (made printable and short).
        text: String,
    },
    /// The daemon at the other end answered but refused the handshake.
    #[error(transparent)]
    Client(ClientError),
}

/// Starts ssh to `remote` and shakes hands with the daemon behind its bridge, naming this
/// client `client_name`. ssh's stderr is this program's: its prompts and errors reach the user.
pub async fn connect(remote: &Remote, client_name: &str) -> Result<Client, LinkError> {
    let program = std::env::var(SSH_VAR)
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "ssh".to_string());
    let host = remote.label.clone();
    let mut child = Command::new(&program)
        .args(remote.ssh_args())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| LinkError::Spawn {
            program: program.clone(),
            host: host.clone(),
            source,
        })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(LinkError::NoBridge {
            host: host.clone(),
            reason: "its pipes could not be opened".to_string(),
        });
    };
    let writer = SshStdin { stdin, _ssh: child };
    match Client::over(stdout, writer, client_name, &format!("ssh {}", remote.host)).await {
        Ok(client) => Ok(client),
        // A pipe broken or closed here means ssh (or the remote shell) ended: its own message,
        // on stderr, says why.
        Err(err) if err.connection_lost() => Err(LinkError::NoBridge {
            host: host.clone(),
            reason: "ssh ended before a daemon answered".to_string(),
        }),
        // Text where the handshake should be: the remote shell's startup files print on
        // stdout, before (or instead of) the bridge.
        Err(ClientError::NotAFrame { text, .. }) => Err(LinkError::Banner { host, text }),
        Err(err) => Err(LinkError::Client(err)),
    }
}

/// ssh's stdin, which holds the ssh process too: the process lives as long as the connection
/// writes to it, and is killed when the connection is dropped.
struct SshStdin {
    /// Where frames to the daemon go.
    stdin: ChildStdin,
    /// The ssh process (killed on drop).
    _ssh: Child,
}

impl AsyncWrite for SshStdin {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stdin).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stdin).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stdin).poll_shutdown(cx)
    }
}

/// The longest pause between two ssh attempts while the link is down.
const MAX_PAUSE: Duration = Duration::from_secs(5);

/// A dropped link while it is made again: said once when it goes down and once when it is
/// back, and ssh started with growing pauses (each start may print ssh's error, or ask for a
/// passphrase), not as often as a local socket is tried.
#[derive(Debug, Default)]
pub struct Outage {
    /// Attempts since the link went down; 0 while it is up.
    attempts: AtomicU32,
}

impl Outage {
    /// Before an attempt to reach `host`: says the link is down at the first, and waits the
    /// pause due after a failed one.
    pub async fn before_attempt(&self, host: &str) {
        match self.attempts.fetch_add(1, Ordering::Relaxed) {
            0 => eprintln!("agentctl: the link to {host} is down; reconnecting"),
            failed => tokio::time::sleep(pause_after(failed)).await,
        }
    }

    /// After an attempt to reach `host` that made the link again.
    pub fn back(&self, host: &str) {
        self.attempts.store(0, Ordering::Relaxed);
        eprintln!("agentctl: the link to {host} is back");
    }
}

/// The pause before the next attempt after `failed` failed ones: a quarter second, doubling,
/// at most [`MAX_PAUSE`].
fn pause_after(failed: u32) -> Duration {
    let quarters = 1u32 << failed.saturating_sub(1).min(5);
    (Duration::from_millis(250) * quarters).min(MAX_PAUSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_is_retried_with_growing_pauses() {
        let pauses: Vec<u64> = (1..=7).map(|n| pause_after(n).as_millis() as u64).collect();
        assert_eq!(pauses, [250, 500, 1000, 2000, 4000, 5000, 5000]);
    }
}
