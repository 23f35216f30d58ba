//! Reaching the daemon: connect to its socket, starting it first when none is running; or,
//! with `--host`, reach the daemon of another machine over ssh ([`crate::ssh_link`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use agentctl::client::connection::open_trusted;
use agentctl::client::frames::FrameError;
use agentctl::client::paths::Paths;
use agentctl::client::{Client, ClientError, Reconnect, Unreachable};
use interprocess::local_socket::tokio::Stream;
use protocol::ErrorCode;

use crate::hosts::Remote;
use crate::ssh_link::{self, LinkError, Outage};

/// The machine whose daemon every command of this process talks to, when not this one
/// (`--host`): set once, at start.
static HOST: OnceLock<Remote> = OnceLock::new();

/// Whether this shell's provider keys go to the other machine's runs (`--forward-keys`).
static FORWARD_KEYS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every connection of this process go to the daemon on `remote`, over ssh; this
/// shell's provider keys go with its runs only when `forward_keys` (or the host's entry says
/// so).
pub fn set_host(remote: Remote, forward_keys: bool) {
    FORWARD_KEYS.store(
        forward_keys || remote.forward_keys,
        std::sync::atomic::Ordering::Relaxed,
    );
    let _ = HOST.set(remote);
}

/// What of this shell's environment goes to the daemon with a run: all of it to this
/// machine's; to another machine's nothing (its own environment and keys apply), or only the
/// provider keys and base URLs with `--forward-keys`.
pub fn environment_to_send() -> Option<fn(&str) -> bool> {
    if remote_host().is_none() {
        return Some(|_| true);
    }
    FORWARD_KEYS
        .load(std::sync::atomic::Ordering::Relaxed)
        .then_some(is_provider_var as fn(&str) -> bool)
}

/// Whether `name` is a provider's key or base URL (`*_API_KEY`, `*_BASE_URL`).
pub fn is_provider_var(name: &str) -> bool {
    name.ends_with("_API_KEY") || name.ends_with("_BASE_URL")
}

/// The other machine this process talks to, if any.
pub fn remote_host() -> Option<&'static Remote> {
    HOST.get()
}

/// How long a freshly started daemon may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the daemon could not be reached.
#[derive(Debug)]
pub enum ConnectError {
    /// No daemon runs, and none was to be started.
    NotRunning(PathBuf),
    /// Starting the daemon failed.
    Start(String),
    /// The daemon speaks another protocol version: its message.
    VersionMismatch(String),
    /// The daemon answered but refused, or the connection failed.
    Client(ClientError),
    /// The ssh link to another machine's daemon could not be made.
    Link(LinkError),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::NotRunning(socket) => {
                write!(f, "agentd is not running (socket {})", socket.display())
            }
            ConnectError::Start(message) => f.write_str(message),
            ConnectError::VersionMismatch(message) => write!(
                f,
                "{message}\nRun `agentctl daemon restart --force` to replace the running daemon with this version."
            ),
            ConnectError::Client(err) => write!(f, "{err}"),
            ConnectError::Link(err) => write!(f, "{err}"),
        }
    }
}

/// The name this client gives the daemon.
pub fn client_name(command: &str) -> String {
    format!("agentctl {} ({command})", env!("CARGO_PKG_VERSION"))
}

/// Connects to a running daemon; `NotRunning` when nobody listens. A daemon of another
/// version is named on stderr, with the fix.
pub async fn connect_running(paths: &Paths, command: &str) -> Result<Client, ConnectError> {
    connect_running_to(remote_host(), paths, command).await
}

/// Connects to the running daemon of `target` (this machine's when `None`).
async fn connect_running_to(
    target: Option<&Remote>,
    paths: &Paths,
    command: &str,
) -> Result<Client, ConnectError> {
    let connected = match target {
        Some(remote) => match ssh_link::connect(remote, &client_name(command)).await {
            Err(LinkError::Client(err)) => Err(err),
            Err(err) => return Err(ConnectError::Link(err)),
            Ok(client) => Ok(client),
        },
        None => Client::connect(&paths.socket, &client_name(command)).await,
    };
    match connected {
        Ok(client) => {
            if !command.starts_with("daemon") {
                warn_on_version_skew(&client.welcome().daemon_version);
            }
            Ok(client)
        }
        Err(ClientError::Connect { source, .. }) if nobody_listens(&source) => {
            Err(ConnectError::NotRunning(paths.socket.clone()))
        }
        Err(ClientError::Daemon(info)) if info.code == ErrorCode::VersionMismatch => {
            Err(ConnectError::VersionMismatch(info.message))
        }
        Err(err) => Err(ConnectError::Client(err)),
    }
}

/// Says once, on stderr, that the daemon runs another version than this client.
fn warn_on_version_skew(daemon_version: &str) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let mine = env!("CARGO_PKG_VERSION");
    if daemon_version != mine && !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "agentctl: the running daemon is agentd {daemon_version}, this is agentctl {mine}; \
             run `agentctl daemon restart` to switch the daemon to this version"
        );
    }
}

/// Connects to the daemon, starting it first when none is running. A daemon that is dying
/// (just killed) or starting may accept a connection and drop it during the handshake: that is
/// retried for a while, with a new daemon started when the old one is gone.
pub async fn connect(paths: &Paths, command: &str) -> Result<Client, ConnectError> {
    connect_to(remote_host(), paths, command).await
}

/// [`connect`] to the daemon of `target` (this machine's when `None`).
pub async fn connect_to(
    target: Option<&Remote>,
    paths: &Paths,
    command: &str,
) -> Result<Client, ConnectError> {
    // The bridge on the other machine starts its daemon itself.
    if target.is_some() {
        return connect_running_to(target, paths, command).await;
    }
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        match connect_running_to(None, paths, command).await {
            Err(ConnectError::NotRunning(_)) => {
                start(paths).await?;
            }
            Err(ConnectError::Client(err)) if dropped_in_handshake(&err) => {
                if Instant::now() >= deadline {
                    return Err(ConnectError::Client(err));
                }
                tokio::time::sleep(RETRY_WAIT).await;
            }
            other => return other,
        }
    }
}

/// How a front end reaches the daemon again after it went away (see
/// [`agentctl::client::reconnect`]): the running daemon, or, when the library says it may
/// start one, the daemon as [`connect`] starts it.
pub fn reconnect(paths: &Paths, command: &str) -> Reconnect {
    reconnect_to(remote_host().cloned(), paths, command)
}

/// [`reconnect`] to the daemon of `target` (this machine's when `None`).
pub fn reconnect_to(target: Option<Remote>, paths: &Paths, command: &str) -> Reconnect {
    let (paths, command) = (paths.clone(), command.to_string());
    // Over ssh it is the link that went down, not the daemon: say so, and pace ssh.
    let outage = Arc::new(Outage::default());
    Reconnect::new(move |start| {
        let (paths, command, outage) = (paths.clone(), command.clone(), outage.clone());
        let target = target.clone();
        async move {
            if let Some(remote) = &target {
                outage.before_attempt(&remote.label).await;
            }
            let connected = if start {
                connect_to(target.as_ref(), &paths, &command).await
            } else {
                connect_running_to(target.as_ref(), &paths, &command).await
            };
            if let (Some(remote), Ok(_)) = (&target, &connected) {
                outage.back(&remote.label);
            }
            connected.map_err(|err| match err {
                // An upgrade brought a daemon this client cannot speak to: the new agentctl can.
                ConnectError::VersionMismatch(message) => Unreachable::Refused(format!(
                    "the daemon came back as another version, which this agentctl cannot follow ({message}); use the agentctl of that version"
                )),
                ConnectError::Client(ClientError::Untrusted(_))
                | ConnectError::Link(LinkError::Spawn { .. } | LinkError::Banner { .. }) => {
                    Unreachable::Refused(err.to_string())
                }
                err => Unreachable::Away(err.to_string()),
            })
        }
    })
}

/// A connection to this machine's daemon's socket with nothing sent on it yet (for the
/// bridge, whose far end shakes hands), starting the daemon first when none runs. The socket's
/// directory and the process behind it must be this user's, as for every command.
pub async fn open_local(paths: &Paths) -> Result<Stream, ConnectError> {
    match open_trusted(&paths.socket).await {
        Err(ClientError::Connect { source, .. }) if nobody_listens(&source) => {
            start(paths).await?;
            open_trusted(&paths.socket)
                .await
                .map_err(ConnectError::Client)
        }
        opened => opened.map_err(ConnectError::Client),
    }
}

/// How long to wait before trying again a connection that was dropped.
const RETRY_WAIT: Duration = Duration::from_millis(20);

fn nobody_listens(err: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        err.kind(),
        ErrorKind::NotFound | ErrorKind::ConnectionRefused | ErrorKind::AddrNotAvailable
    )
}

/// Whether the connection was dropped before the handshake finished, as a dying or starting
/// daemon does: reset, broken pipe or end of stream.
fn dropped_in_handshake(err: &ClientError) -> bool {
    use std::io::ErrorKind;
    match err {
        ClientError::Closed(None) => true,
        ClientError::Frame(FrameError::Io(io)) | ClientError::Connect { source: io, .. } => {
            matches!(
                io.kind(),
                ErrorKind::ConnectionReset
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
                    | ErrorKind::ConnectionAborted
            )
        }
        ClientError::Frame(FrameError::Truncated { .. }) => true,
        _ => false,
    }
}

/// Starts the daemon detached (own session, output to its log) and waits until it accepts.
/// Returns its pid.
pub async fn start(paths: &Paths) -> Result<u32, ConnectError> {
    let binary = daemon_binary();
    let logs = paths.logs_dir();
    private_dirs(&logs)
        .map_err(|e| ConnectError::Start(format!("cannot create {}: {e}", logs.display())))?;
    let log_path = paths.log_file();
    let log = std::fs::File::options()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| ConnectError::Start(format!("cannot open {}: {e}", log_path.display())))?;
    let log_len = log.metadata().map_or(0, |m| m.len());
    let stderr = log
        .try_clone()
        .map_err(|e| ConnectError::Start(format!("cannot open {}: {e}", log_path.display())))?;
    let mut command = Command::new(&binary);
    command.stdin(Stdio::null()).stdout(log).stderr(stderr);
    detach(&mut command);
    let mut child = command.spawn().map_err(|e| {
        ConnectError::Start(format!(
            "cannot start the daemon `{}`: {e}; set AGENTD_BIN to the agentd binary",
            binary.display()
        ))
    })?;
    wait_until_accepting(paths, &mut child, &log_path, log_len).await
}

async fn wait_until_accepting(
    paths: &Paths,
    child: &mut Child,
    log_path: &Path,
    log_len: u64,
) -> Result<u32, ConnectError> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        match Client::connect(&paths.socket, &client_name("start")).await {
            Ok(client) => return Ok(client.welcome().pid),
            Err(ClientError::Connect { .. }) => {}
            Err(err) if dropped_in_handshake(&err) => {}
            Err(err) => return Err(ConnectError::Client(err)),
        }
        // Another client (or a `daemon restart`) may have started a daemon at the same moment:
        // ours then exits, and the one holding the pid file's lock is used once it accepts.
        if let Ok(Some(status)) = child.try_wait()
            && !another_daemon_holds_the_lock(paths)
        {
            if let Ok(client) = Client::connect(&paths.socket, &client_name("start")).await {
                return Ok(client.welcome().pid);
            }
            return Err(ConnectError::Start(format!(
                "the daemon exited ({status}) before accepting connections:\n{}",
                log_since(log_path, log_len)
            )));
        }
        if Instant::now() >= deadline {
            return Err(ConnectError::Start(format!(
                "the daemon did not accept connections within {} s; see {}",
                START_TIMEOUT.as_secs(),
                log_path.display()
            )));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether a daemon holds the pid file's lock: one runs, or is starting.
fn another_daemon_holds_the_lock(paths: &Paths) -> bool {
    std::fs::File::open(paths.pid_file())
        .is_ok_and(|file| matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock)))
}

/// What the daemon wrote to its log since `offset`, for an error message.
fn log_since(path: &Path, offset: u64) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let start = (offset as usize).min(text.len());
    let tail = String::from_utf8_lossy(&text[start..]).trim().to_string();
    if tail.is_empty() {
        format!("(nothing in {})", path.display())
    } else {
        tail
    }
}

/// Runs the daemon binary's own configuration command (it owns the configuration format) and
/// passes on its output and exit code.
pub fn daemon_config(args: &[&str]) -> Result<u8, crate::Failure> {
    let binary = daemon_binary();
    let status = Command::new(&binary)
        .args(args)
        .status()
        .map_err(|e| crate::Failure::new(format!("cannot run `{}`: {e}", binary.display())))?;
    Ok(status.code().map_or(1, |c| c as u8))
}

/// The daemon binary: `AGENTD_BIN`, else `agentd` beside this executable, else from `PATH`.
pub fn daemon_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("AGENTD_BIN").filter(|b| !b.is_empty()) {
        return PathBuf::from(bin);
    }
    let name = format!("agentd{}", std::env::consts::EXE_SUFFIX);
    if let Ok(me) = std::env::current_exe()
        && let Some(sibling) = me.parent().map(|dir| dir.join(&name))
        && sibling.is_file()
    {
        return sibling;
    }
    PathBuf::from(name)
}

/// Creates `dir` and its missing parents readable by this user only.
fn private_dirs(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(unix)]
fn detach(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and touches only the child.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn detach(command: &mut Command) {
    use std::os::windows::process::CommandExt;
    const DETACHED_PROCESS: u32 = 0x0000_0008;
    const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
    command.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
}
