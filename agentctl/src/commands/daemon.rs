//! `agentctl daemon start|stop|restart|status`.

use std::time::{Duration, Instant};

use agentctl::client::paths::Paths;
use protocol::{Reply, Request};

use super::{request, unexpected};
use crate::connect::{self, ConnectError};
use crate::{Failure, format};

/// Starts the daemon unless one runs already.
pub async fn start(paths: &Paths) -> Result<u8, Failure> {
    match connect::connect_running(paths, "daemon start").await {
        Ok(client) => {
            outln!(
                "agentd is already running (pid {}) on {}",
                client.welcome().pid,
                paths.socket.display()
            );
            Ok(0)
        }
        Err(ConnectError::NotRunning(_)) => {
            let pid = connect::start(paths).await?;
            outln!("agentd started (pid {pid}) on {}", paths.socket.display());
            Ok(0)
        }
        Err(err) => Err(Failure::new(err)),
    }
}

/// Asks the daemon to shut down and waits until it is gone; tool calls already running finish
/// first, unless `now`.
pub async fn stop(paths: &Paths, now: bool) -> Result<u8, Failure> {
    let client = match connect::connect_running(paths, "daemon stop").await {
        Ok(client) => client,
        Err(ConnectError::NotRunning(_)) => {
            outln!("agentd is not running");
            return Ok(0);
        }
        Err(err) => return Err(Failure::new(err)),
    };
    let pid = shut_down(paths, client, now).await?;
    outln!("agentd stopped (pid {pid})");
    Ok(0)
}

/// Stops the daemon and starts it again (a new version, after an upgrade). Sessions are kept,
/// tool calls already running finish first (unless `now`), and runs in progress go on in the
/// new daemon (unless resuming is off).
pub async fn restart(paths: &Paths, force: bool, now: bool) -> Result<u8, Failure> {
    let old = match connect::connect_running(paths, "daemon restart").await {
        Ok(client) => {
            say_runs_go_on(&client).await?;
            Some(shut_down(paths, client, now).await?)
        }
        Err(ConnectError::NotRunning(_)) => None,
        // A daemon of another protocol version cannot be asked; its pid file names it.
        Err(ConnectError::VersionMismatch(_)) if force => Some(terminate(paths).await?),
        Err(err @ ConnectError::VersionMismatch(_)) => {
            return Err(Failure::new(format!(
                "{err}\nA daemon of another version cannot be asked to stop: restart with --force (it is sent SIGTERM)"
            )));
        }
        Err(err) => return Err(Failure::new(err)),
    };
    let pid = connect::start(paths).await?;
    match old {
        Some(old) => outln!(
            "agentd restarted (pid {old} → {pid}, agentd {})",
            env!("CARGO_PKG_VERSION")
        ),
        None => outln!("agentd was not running; started (pid {pid})"),
    }
    Ok(0)
}

/// Asks the daemon behind `client` to shut down (at once with `now`, else once its running tool
/// calls finished) and waits until it is gone; returns its pid.
async fn shut_down(
    paths: &Paths,
    client: agentctl::client::Client,
    now: bool,
) -> Result<u32, Failure> {
    let pid = client.welcome().pid;
    let grace = ask_to_stop(&client, now).await?;
    drop(client);
    wait_gone(paths, pid, grace).await?;
    Ok(pid)
}

/// Before a restart: says how many runs are going on the daemon behind `client` (they go on
/// in the new one).
pub(super) async fn say_runs_go_on(client: &agentctl::client::Client) -> Result<(), Failure> {
    let status = match request(client, Request::Status).await? {
        Reply::Status(status) => status,
        other => return Err(unexpected(other)),
    };
    if status.running > 0 {
        outln!(
            "{} run(s) going: they go on in the new daemon",
            status.running
        );
    }
    Ok(())
}

/// Asks the daemon behind `client` to shut down (at once with `now`, else once its running tool
/// calls finished), saying when it waits for them; returns the longest it waits.
pub(super) async fn ask_to_stop(
    client: &agentctl::client::Client,
    now: bool,
) -> Result<Duration, Failure> {
    match request(client, Request::Shutdown { now }).await? {
        Reply::Stopping { calls, grace_ms } => {
            if calls > 0 && grace_ms > 0 {
                outln!(
                    "waiting for {} to finish (at most {}; --now interrupts them)",
                    format::count(calls, "running tool call"),
                    format::duration(grace_ms)
                );
            }
            Ok(Duration::from_millis(grace_ms))
        }
        other => Err(unexpected(other)),
    }
}

/// Sends SIGTERM to the daemon its pid file names and waits until it is gone.
async fn terminate(paths: &Paths) -> Result<u32, Failure> {
    let file = paths.pid_file();
    let pid: u32 = std::fs::read_to_string(&file)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .ok_or_else(|| {
            Failure::new(format!(
                "cannot read the daemon's pid from {}",
                file.display()
            ))
        })?;
    #[cfg(unix)]
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(pid as i32, libc::SIGTERM) } != 0 {
        return Err(Failure::new(format!(
            "cannot stop agentd (pid {pid}): {}",
            std::io::Error::last_os_error()
        )));
    }
    // Its running tool calls may take the default grace to finish.
    wait_gone(paths, pid, Duration::from_secs(30)).await?;
    Ok(pid)
}

/// Waits until the daemon's socket and pid file are gone: within 10 s after `grace`, the
/// longest it waits for running tool calls.
async fn wait_gone(paths: &Paths, pid: u32, grace: Duration) -> Result<(), Failure> {
    let limit = grace + Duration::from_secs(10);
    let deadline = Instant::now() + limit;
    while paths.socket.exists() || paths.pid_file().exists() {
        if Instant::now() >= deadline {
            return Err(Failure::new(format!(
                "agentd (pid {pid}) did not stop within {} s; `kill {pid}` stops it",
                limit.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// What the daemon (maybe another machine's) says, as it is shown: never obeyed.
fn shown(text: &str) -> String {
    agentctl::client::printable(text, agentctl::client::far_text::MESSAGE_CHARS)
}

/// Prints the daemon's status; exit code 1 when it is not running.
pub async fn status(paths: &Paths) -> Result<u8, Failure> {
    let client = match connect::connect_running(paths, "daemon status").await {
        Ok(client) => client,
        Err(ConnectError::NotRunning(socket)) => {
            outln!("agentd is not running (socket {})", socket.display());
            return Ok(1);
        }
        Err(err) => return Err(Failure::new(err)),
    };
    let status = match request(&client, Request::Status).await? {
        Reply::Status(status) => status,
        other => return Err(unexpected(other)),
    };
    outln!(
        "agentd {} (protocol {})",
        shown(&status.daemon_version),
        status.protocol_version
    );
    if let Some(remote) = connect::remote_host() {
        outln!("host      {}", remote.label);
    }
    outln!("pid       {}", status.pid);
    outln!("uptime    {}", format::duration(status.uptime_ms));
    outln!("socket    {}", shown(&status.socket));
    outln!("data      {}", shown(&status.data_dir));
    outln!("sessions  {} ({} running)", status.sessions, status.running);
    outln!("clients   {}", status.clients);
    match status.rss_bytes {
        Some(rss) => outln!("memory    {} resident", format::bytes(rss)),
        None => outln!("memory    unknown"),
    }
    // Which of the two a broken file means: runs refused, or the last good one in force.
    match status.config_error.as_deref().map(shown) {
        Some(error) if status.config_fail_closed => outln!(
            "config    {error} — runs are refused until it is fixed (or run with --ignore-config)"
        ),
        Some(error) => outln!("config    {error} — the last good configuration is in force"),
        None => {}
    }
    outln!("sandbox   {}", shown(&status.sandbox));
    outln!("lsp       {} running", status.lsp_servers);
    if status.mcp_servers.is_empty() {
        outln!("mcp       no servers configured");
    } else {
        outln!("mcp servers:");
        for line in super::mcp::table(&status.mcp_servers).lines() {
            outln!("  {line}");
        }
    }
    Ok(0)
}
