//! `agentctl daemon start|stop|status`.

use std::time::{Duration, Instant};

use protocol::paths::Paths;
use protocol::{Reply, Request};

use super::{request, unexpected};
use crate::connect::{self, ConnectError};
use crate::{Failure, format};

/// Starts the daemon unless one runs already.
pub async fn start(paths: &Paths) -> Result<u8, Failure> {
    match connect::connect_running(paths, "daemon start").await {
        Ok(client) => {
            println!(
                "agentd is already running (pid {}) on {}",
                client.welcome().pid,
                paths.socket.display()
            );
            Ok(0)
        }
        Err(ConnectError::NotRunning(_)) => {
            let pid = connect::start(paths).await?;
            println!("agentd started (pid {pid}) on {}", paths.socket.display());
            Ok(0)
        }
        Err(err) => Err(Failure::new(err)),
    }
}

/// Asks the daemon to shut down and waits until its socket is gone.
pub async fn stop(paths: &Paths) -> Result<u8, Failure> {
    let client = match connect::connect_running(paths, "daemon stop").await {
        Ok(client) => client,
        Err(ConnectError::NotRunning(_)) => {
            println!("agentd is not running");
            return Ok(0);
        }
        Err(err) => return Err(Failure::new(err)),
    };
    let pid = client.welcome().pid;
    request(&client, Request::Shutdown).await?;
    drop(client);
    let deadline = Instant::now() + Duration::from_secs(10);
    while paths.socket.exists() || paths.pid_file().exists() {
        if Instant::now() >= deadline {
            return Err(Failure::new(format!(
                "agentd (pid {pid}) did not stop within 10 s"
            )));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("agentd stopped (pid {pid})");
    Ok(0)
}

/// Prints the daemon's status; exit code 1 when it is not running.
pub async fn status(paths: &Paths) -> Result<u8, Failure> {
    let client = match connect::connect_running(paths, "daemon status").await {
        Ok(client) => client,
        Err(ConnectError::NotRunning(socket)) => {
            println!("agentd is not running (socket {})", socket.display());
            return Ok(1);
        }
        Err(err) => return Err(Failure::new(err)),
    };
    let status = match request(&client, Request::Status).await? {
        Reply::Status(status) => status,
        other => return Err(unexpected(other)),
    };
    println!(
        "agentd {} (protocol {})",
        status.daemon_version, status.protocol_version
    );
    println!("pid       {}", status.pid);
    println!("uptime    {}", format::duration(status.uptime_ms));
    println!("socket    {}", status.socket);
    println!("data      {}", status.data_dir);
    println!("sessions  {} ({} running)", status.sessions, status.running);
    println!("clients   {}", status.clients);
    match status.rss_bytes {
        Some(rss) => println!("memory    {} resident", format::bytes(rss)),
        None => println!("memory    unknown"),
    }
    if let Some(error) = status.config_error {
        println!("config    ERROR, previous configuration kept: {error}");
    }
    Ok(0)
}
