//! The daemon process: claims the socket, accepts connections, and shuts down cleanly.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use interprocess::local_socket::ListenerOptions;
use interprocess::local_socket::traits::tokio::Listener as _;
use kameo::prelude::*;
use protocol::local::paths::{Paths, socket_name};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::ConnectionId;
use crate::config::ConfigState;
use crate::connection::{self, Shared};
use crate::stop::PlannedStop;
use crate::supervisor::{StopAll, Supervisor, SupervisorArgs};

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Another daemon owns the socket.
    #[error("agentd is already running{} on {}", pid.map(|p| format!(" (pid {p})")).unwrap_or_default(), socket.display())]
    AlreadyRunning {
        /// The running daemon's pid, if its pid file says.
        pid: Option<u32>,
        /// The socket it owns.
        socket: PathBuf,
    },
    /// A directory or file could not be prepared.
    #[error("cannot prepare {}: {source}", path.display())]
    Prepare {
        /// The path.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The socket's directory is not private to this user.
    #[error("{} is owned by another user; refusing to put the socket there (set AGENTD_SOCKET)", path.display())]
    UnsafeDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// The directory is writable by other users.
    #[error("{} is writable by other users (mode {mode:o}); refusing to use it (run `chmod 700` on it, or set AGENTD_SOCKET)", path.display())]
    SharedDirectory {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The socket could not be bound.
    #[error("cannot listen on {}: {source}", path.display())]
    Listen {
        /// The socket.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// Runs the daemon until `Shutdown`, SIGTERM or SIGINT, then stops as planned: tool calls
/// already running finish first (see the `stop` module).
pub async fn run(paths: Paths) -> Result<(), StartError> {
    let stop = PlannedStop::new();
    watch_signals(stop.clone());
    // Cancelled once the planned stop is ready: connections close.
    let shutdown = CancellationToken::new();
    let pid_file = PidFile::claim(&paths)?;
    // No other daemon runs now: commands a crashed one left behind are ours to stop.
    let reaped = crate::tools::processes::ProcessRecords::in_dir(paths.commands_dir()).reap();
    if reaped > 0 {
        tracing::warn!(
            processes = reaped,
            "killed commands left running by the previous daemon"
        );
    }
    let listener = listen(&paths.socket)?;
    pid_file.write_pid()?;
    private_dir(&paths.data_dir)?;
    tracing::info!(pid = std::process::id(), socket = %paths.socket.display(), "agentd started");
    // One line on stdout says the socket accepts connections (whoever started us may wait for it).
    // Write errors are ignored: nobody may be reading.
    let mut stdout = std::io::stdout();
    let _ = writeln!(
        stdout,
        "agentd ready pid={} socket={}",
        std::process::id(),
        paths.socket.display()
    )
    .and_then(|()| stdout.flush());

    // What auto mode's sandbox can do here: found once, by confining `true`.
    if let Ok(helper) = std::env::current_exe() {
        let found = tokio::task::spawn_blocking(move || crate::sandbox::detect(&helper)).await;
        match found {
            Ok(crate::sandbox::Support::Available(how)) => tracing::info!("sandbox: {how}"),
            Ok(crate::sandbox::Support::Unavailable(why)) => {
                tracing::warn!("no sandbox: {why}; auto mode asks before commands")
            }
            Err(err) => tracing::warn!("sandbox check failed: {err}"),
        }
    }
    let connections_table = connection::table::Connections::new(connection::table::FRAME_BUDGET);
    // A broken file is logged as it is read: runs are refused until it is fixed.
    let config = ConfigState::load(&paths.config_file());
    let (config_tx, config_rx) = tokio::sync::watch::channel(config);
    let config_for_connections = config_rx.clone();
    let _config_watcher = crate::config::watch(paths.config_file(), config_tx);
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| StartError::Prepare {
            path: paths.config_file(),
            source: std::io::Error::other(e),
        })?;
    let mcp = crate::mcp::McpHub::new(
        http.clone(),
        crate::tools::processes::ProcessRecords::in_dir(paths.commands_dir()),
        config_rx.clone(),
    );
    let lsp = {
        let config = config_rx.clone();
        crate::lsp::LspHub::new(
            crate::tools::processes::ProcessRecords::in_dir(paths.commands_dir()),
            Arc::new(move || config.borrow().config.lsp.clone()),
            crate::lsp::confine::ServerSandbox::new(&paths, {
                let config = config_rx.clone();
                Arc::new(move || config.borrow().config.sandbox.clone())
            }),
        )
    };
    let supervisor = Supervisor::spawn_with_mailbox(
        SupervisorArgs {
            paths: paths.clone(),
            config: config_rx,
            http,
            mcp: mcp.clone(),
            lsp: lsp.clone(),
            stop: stop.clone(),
        },
        kameo::mailbox::unbounded(),
    );
    let shared = Arc::new(Shared {
        supervisor: supervisor.clone(),
        shutdown: shutdown.clone(),
        stop: stop.clone(),
        connections: connections_table,
        socket: paths.socket.to_string_lossy().into_owned(),
        config: config_for_connections,
        mcp: mcp.clone(),
        lsp: lsp.clone(),
        config_dir: paths.config_dir.clone(),
    });

    let mut connections = JoinSet::new();
    let mut next_conn = 0u64;
    // Connections are served until the stop is asked for and while running calls finish.
    let ready_to_stop = drain(&stop, &shared.config);
    tokio::pin!(ready_to_stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(stream) => {
                    next_conn += 1;
                    let id = ConnectionId(next_conn);
                    let limit = shared.config.borrow().config.max_connections;
                    match shared.connections.open(id, limit) {
                        Some(slot) => {
                            connections.spawn(connection::serve(stream, id, slot, shared.clone()));
                        }
                        None => {
                            tracing::warn!(limit, "refused a connection: too many clients");
                            connections.spawn(connection::refuse(stream, limit));
                        }
                    }
                }
                Err(err) => {
                    // Usually out of file descriptors: back off instead of spinning.
                    tracing::warn!("accept failed: {err}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = &mut ready_to_stop => break,
        }
    }

    tracing::info!("shutting down");
    shutdown.cancel();
    drop(listener);
    if let Ok((sessions, tools)) = supervisor.ask(StopAll).await {
        for session in &sessions {
            let _ = session.stop_gracefully().await;
        }
        for session in &sessions {
            session.wait_for_shutdown().await;
        }
        tools.stop().await;
    }
    let _ = supervisor.stop_gracefully().await;
    supervisor.wait_for_shutdown().await;
    // No MCP server outlives the daemon.
    mcp.shutdown().await;
    lsp.shutdown().await;
    let drained = tokio::time::timeout(Duration::from_secs(2), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.abort_all();
    }
    drop(pid_file);
    tracing::info!("agentd stopped");
    Ok(())
}

/// Waits until a stop is asked for, then until the tool calls running have finished (at most
/// the configured grace, none when the stop is to happen now).
async fn drain(stop: &PlannedStop, config: &tokio::sync::watch::Receiver<ConfigState>) {
    stop.asked().await;
    let grace = config.borrow().config.daemon.stop_grace();
    let calls = stop.calls();
    if calls > 0 {
        tracing::info!(
            calls,
            grace_secs = grace.as_secs(),
            "stopping: waiting for running tool calls to finish"
        );
    }
    let left = stop.drained(grace).await;
    if left > 0 {
        tracing::warn!(
            calls = left,
            "stopping: tool calls still running are interrupted"
        );
    }
}

/// Asks for a planned stop on SIGTERM or SIGINT, and for a stop now on a second one. The
/// handlers are installed before this returns, so a signal sent right after the ready line is
/// never missed.
fn watch_signals(stop: PlannedStop) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::spawn(async move {
                    loop {
                        tokio::select! {
                            _ = term.recv() => tracing::info!("SIGTERM received"),
                            _ = int.recv() => tracing::info!("SIGINT received"),
                        }
                        // A second signal does not wait for running tool calls.
                        stop.ask(stop.is_asked());
                    }
                });
            }
            _ => tracing::error!("cannot watch signals"),
        }
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            stop.ask(stop.is_asked());
        }
    });
}

/// Binds the socket with owner-only permissions; the socket file is removed when the listener
/// is dropped.
fn listen(socket: &Path) -> Result<interprocess::local_socket::tokio::Listener, StartError> {
    let listen_error = |source| StartError::Listen {
        path: socket.to_path_buf(),
        source,
    };
    let name = socket_name(socket).map_err(listen_error)?;
    let options = ListenerOptions::new().name(name).reclaim_name(true);
    #[cfg(unix)]
    let options = {
        use interprocess::os::unix::local_socket::ListenerOptionsExt;
        options.mode(0o600)
    };
    options.create_tokio().map_err(listen_error)
}

/// The pid file, locked for as long as the daemon runs: the lock is what makes a second
/// daemon on the same socket refuse to start. Removed on drop.
struct PidFile {
    path: PathBuf,
    file: File,
}

impl PidFile {
    /// Prepares the socket's directory, takes the lock, and clears a stale socket file.
    fn claim(paths: &Paths) -> Result<PidFile, StartError> {
        if let Some(dir) = paths.socket.parent() {
            private_dir(dir)?;
        }
        let path = paths.pid_file();
        let prepare = |source| StartError::Prepare {
            path: path.clone(),
            source,
        };
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(prepare)?;
        // A daemon killed while starting a tool process leaves the lock with that process for
        // the instant before it runs its program; when the pid in the file is dead, wait for
        // the lock a little instead of refusing.
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut text = String::new();
                    let _ = file.read_to_string(&mut text);
                    let pid: Option<u32> = text.trim().parse().ok();
                    if pid.is_some_and(process_alive) || std::time::Instant::now() >= deadline {
                        return Err(StartError::AlreadyRunning {
                            pid,
                            socket: paths.socket.clone(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(std::fs::TryLockError::Error(err)) => return Err(prepare(err)),
            }
        }
        clear_stale_socket(&paths.socket)?;
        Ok(PidFile { path, file })
    }

    fn write_pid(&self) -> Result<(), StartError> {
        let mut file = &self.file;
        file.set_len(0)
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .map_err(|source| StartError::Prepare {
                path: self.path.clone(),
                source,
            })
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        // Removed while still locked, so a new daemon never sees a half-removed file.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether process `pid` exists.
fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        // SAFETY: kill with signal 0 only checks that the process exists.
        let rc = unsafe { libc::kill(pid as i32, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// A socket file nobody accepts on is left over from a daemon that died: remove it. One that
/// accepts belongs to a live daemon that does not use our pid file: refuse.
fn clear_stale_socket(socket: &Path) -> Result<(), StartError> {
    #[cfg(unix)]
    {
        if std::fs::symlink_metadata(socket).is_err() {
            return Ok(());
        }
        if std::os::unix::net::UnixStream::connect(socket).is_ok() {
            return Err(StartError::AlreadyRunning {
                pid: None,
                socket: socket.to_path_buf(),
            });
        }
        tracing::info!(socket = %socket.display(), "removing stale socket");
        std::fs::remove_file(socket).map_err(|source| StartError::Prepare {
            path: socket.to_path_buf(),
            source,
        })?;
    }
    #[cfg(not(unix))]
    let _ = socket;
    Ok(())
}

/// Creates `dir` (mode 0700 for what is created) and checks that it belongs to this user.
pub fn private_dir(dir: &Path) -> Result<(), StartError> {
    let prepare = |source| StartError::Prepare {
        path: dir.to_path_buf(),
        source,
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(prepare)?;
        let meta = std::fs::metadata(dir).map_err(prepare)?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        if meta.uid() != unsafe { libc::geteuid() } {
            return Err(StartError::UnsafeDirectory {
                path: dir.to_path_buf(),
            });
        }
        // Others could put a socket of their own in it: clients would refuse it too.
        if meta.mode() & 0o022 != 0 {
            return Err(StartError::SharedDirectory {
                path: dir.to_path_buf(),
                mode: meta.mode() & 0o7777,
            });
        }
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir).map_err(prepare)?;
    Ok(())
}
