//! `agentctl --host H daemon start|stop|restart`: the daemon of another machine, through the
//! bridge (docs/architecture.md#another-machine-over-ssh). Its pid file and socket are not
//! here to watch, so a stop is seen as the link closing, and the bridge starts the new daemon
//! when the next connection arrives.

use std::time::Duration;

use agentctl::client::Client;
use agentctl::client::paths::Paths;

use crate::hosts::Remote;
use crate::{Failure, connect};

/// Reaches the daemon on `remote` (its bridge starts it when none runs) and says which runs.
pub async fn start(paths: &Paths, remote: &Remote) -> Result<u8, Failure> {
    let client = connect::connect(paths, "daemon start").await?;
    outln!(
        "agentd {} is running on {} (pid {})",
        client.welcome().daemon_version,
        remote.label,
        client.welcome().pid
    );
    Ok(0)
}

/// Stops the daemon on `remote` and waits until its side of the link closes.
pub async fn stop(paths: &Paths, remote: &Remote, now: bool) -> Result<u8, Failure> {
    let client = connect::connect(paths, "daemon stop").await?;
    let pid = shut_down(client, remote, now).await?;
    outln!("agentd on {} stopped (pid {pid})", remote.label);
    Ok(0)
}

/// Stops the daemon on `remote` and starts it again there, through a new link.
pub async fn restart(paths: &Paths, remote: &Remote, now: bool) -> Result<u8, Failure> {
    let client = connect::connect(paths, "daemon restart").await?;
    super::daemon::say_runs_go_on(&client).await?;
    let old = shut_down(client, remote, now).await?;
    let client = connect::connect(paths, "daemon restart").await?;
    outln!(
        "agentd on {} restarted (pid {old} → {}, agentd {})",
        remote.label,
        client.welcome().pid,
        client.welcome().daemon_version
    );
    Ok(0)
}

/// Asks the daemon behind `client` to shut down and waits until the link closes (the daemon
/// gone, and the bridge with it); returns its pid.
async fn shut_down(mut client: Client, remote: &Remote, now: bool) -> Result<u32, Failure> {
    let pid = client.welcome().pid;
    let grace = super::daemon::ask_to_stop(&client, now).await?;
    let limit = grace + Duration::from_secs(10);
    let Some(mut incoming) = client.take_incoming() else {
        return Ok(pid);
    };
    let closed = async { while incoming.recv().await.is_some() {} };
    tokio::time::timeout(limit, closed).await.map_err(|_| {
        Failure::new(format!(
            "agentd on {} (pid {pid}) did not stop within {} s; `ssh {} kill {pid}` stops it",
            remote.label,
            limit.as_secs(),
            remote.host
        ))
    })?;
    Ok(pid)
}
