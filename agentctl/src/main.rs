//! `agentctl`: the thin client of the agentd daemon. Every command talks to the daemon over its
//! local socket and starts it first when none is running.

mod commands;
mod connect;
mod format;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use protocol::Mode;

/// Drive the agentd coding agent from any terminal.
#[derive(Parser)]
#[command(version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Manage the daemon (it also starts on demand).
    Daemon {
        #[command(subcommand)]
        action: DaemonAction,
    },
    /// List sessions, newest first.
    Sessions {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Create a session in the current directory and print its id.
    New {
        /// Permission mode: default, accept-edits, plan, bypass.
        #[arg(long, default_value = "default")]
        mode: Mode,
        /// Model to use instead of the configured default.
        #[arg(long)]
        model: Option<String>,
        /// A short title.
        #[arg(long)]
        title: Option<String>,
    },
    /// Delete a session and its history.
    Rm {
        /// The session id (or an unambiguous prefix).
        id: String,
        /// Cancel a running run first instead of refusing.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Subcommand)]
enum DaemonAction {
    /// Start the daemon if it is not running.
    Start,
    /// Stop the daemon.
    Stop,
    /// Show version, pid, uptime, socket, sessions and memory.
    Status,
}

/// A failure to report on stderr, with the exit code to leave with.
pub struct Failure {
    message: String,
    code: u8,
}

impl Failure {
    /// A failure with exit code 1.
    pub fn new(message: impl std::fmt::Display) -> Self {
        Failure {
            message: message.to_string(),
            code: 1,
        }
    }
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(err: E) -> Self {
        Failure::new(err)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("agentctl: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("agentctl: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

async fn run(cli: Cli) -> Result<u8, Failure> {
    let paths = protocol::paths::Paths::from_env()?;
    match cli.command {
        Command::Daemon { action } => match action {
            DaemonAction::Start => commands::daemon::start(&paths).await,
            DaemonAction::Stop => commands::daemon::stop(&paths).await,
            DaemonAction::Status => commands::daemon::status(&paths).await,
        },
        Command::Sessions { json } => commands::sessions::list(&paths, json).await,
        Command::New { mode, model, title } => {
            commands::sessions::new(&paths, mode, model, title).await
        }
        Command::Rm { id, force } => commands::sessions::remove(&paths, id, force).await,
    }
}
