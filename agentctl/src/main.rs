//! `agentctl`: the thin client of the agentd daemon. Every command talks to the daemon over its
//! local socket and starts it first when none is running.

#[macro_use]
mod stdout;
mod acp;
mod cli;
mod colored_diff;
mod commands;
mod connect;
mod format;
mod host;
mod images;
mod json;
mod markdown;
mod mentions;
mod reply_text;
mod screen;
mod ssh_link;
mod style;
mod tool_progress;
mod view;

use std::process::ExitCode;

use clap::Parser;
use cli::{AllowKind, Cli, Command, ConfigAction, DaemonAction, ListAction, McpAction};
use commands::extensions::Which;
use protocol::{Decision, Delivery, PermissionClass};

/// A failure to report on stderr, with the exit code to leave with.
pub struct Failure {
    /// What went wrong.
    pub message: String,
    /// The exit code.
    pub code: u8,
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
    // An editor closing the ACP pipes, or ssh closing the bridge's, is how they end, not an
    // error.
    if !matches!(cli.command, Some(Command::Acp | Command::Bridge)) {
        stdout::end_when_closed();
    }
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
    let paths = agentctl::client::paths::Paths::from_env()?;
    view::set_color_choice(cli.color);
    // The bridge is the far end of `--host`: it only ever reaches this machine's daemon.
    if let Some(host) = cli.host
        && !matches!(cli.command, Some(Command::Bridge))
    {
        refuse_where_only_local(cli.command.as_ref(), &host)?;
        connect::set_host(host, cli.forward_keys);
    }
    let Some(command) = cli.command else {
        return without_command(&paths).await;
    };
    match command {
        Command::Daemon { action } => match action {
            DaemonAction::Start => commands::daemon::start(&paths).await,
            DaemonAction::Stop { now } => commands::daemon::stop(&paths, now).await,
            DaemonAction::Restart { force, now } => {
                commands::daemon::restart(&paths, force, now).await
            }
            DaemonAction::Status => commands::daemon::status(&paths).await,
            DaemonAction::Install => commands::service::install(&paths),
            DaemonAction::Uninstall => commands::service::uninstall(),
        },
        Command::Run {
            prompt,
            images,
            flags,
            allow,
            yes,
            json,
            detach,
            no_resume,
        } => {
            let mut grants: Vec<PermissionClass> = allow
                .iter()
                .map(|a| match a {
                    AllowKind::Write => PermissionClass::Write,
                    AllowKind::Bash => PermissionClass::Command,
                    AllowKind::Mcp => PermissionClass::Mcp,
                    AllowKind::Network => PermissionClass::Network,
                })
                .collect();
            if yes {
                grants = vec![
                    PermissionClass::Write,
                    PermissionClass::Command,
                    PermissionClass::Mcp,
                    PermissionClass::Network,
                ];
            }
            let args = commands::run::RunArgs {
                prompt,
                images,
                session: flags.session,
                model: flags.model,
                provider: flags.provider,
                mode: flags.mode,
                max_turns: flags.max_turns,
                allow: grants,
                json,
                detach,
                continue_latest: flags.continue_latest,
                worktree: flags.worktree,
                no_resume,
                ignore_config: flags.ignore_config,
            };
            commands::run::run(&paths, args).await
        }
        Command::Chat { flags } => {
            let session = match flags.session {
                Some(id) => Some(commands::here::id_named(&paths, &id).await?),
                None if flags.continue_latest => {
                    Some(commands::here::id_named(&paths, commands::here::LATEST).await?)
                }
                None => None,
            };
            let args = commands::chat::ChatArgs {
                session,
                model: flags.model,
                provider: flags.provider,
                mode: flags.mode,
                max_turns: flags.max_turns,
                attach: false,
                worktree: flags.worktree,
                ignore_config: flags.ignore_config,
            };
            commands::chat::chat(&paths, args).await
        }
        Command::Attach { session } => {
            let id = commands::here::chosen(&paths, &session).await?;
            commands::chat::chat(&paths, commands::chat::ChatArgs::attach(id)).await
        }
        Command::Resume { all } => commands::resume::resume(&paths, all).await,
        Command::Steer {
            session,
            text,
            ignore_config,
        } => {
            let id = commands::here::chosen(&paths, &session).await?;
            commands::oneshot::send(&paths, id, text, Delivery::Steer, ignore_config).await
        }
        Command::Queue {
            session,
            text,
            ignore_config,
        } => {
            let id = commands::here::chosen(&paths, &session).await?;
            commands::oneshot::send(&paths, id, text, Delivery::FollowUp, ignore_config).await
        }
        Command::Cancel { session } => {
            let id = commands::here::chosen(&paths, &session).await?;
            commands::oneshot::cancel(&paths, id).await
        }
        Command::Compact { session } => {
            let id = commands::here::chosen(&paths, &session).await?;
            commands::oneshot::compact(&paths, id).await
        }
        Command::Approve {
            session,
            request,
            always,
        } => {
            let decision = if always {
                Decision::AllowAlways
            } else {
                Decision::Allow
            };
            let id = commands::here::chosen(&paths, &session).await?;
            commands::oneshot::answer(&paths, id, request, decision).await
        }
        Command::Deny { session, request } => {
            let id = commands::here::chosen(&paths, &session).await?;
            commands::oneshot::answer(&paths, id, request, Decision::Deny).await
        }
        Command::Config { action } => match action {
            ConfigAction::Path => {
                outln!("{}", paths.config_file().display());
                Ok(0)
            }
            ConfigAction::Show => connect::daemon_config(&["--print-config"]),
            ConfigAction::Check => connect::daemon_config(&["--check-config"]),
        },
        Command::Show {
            session,
            json,
            images,
        } => {
            let id = commands::here::chosen(&paths, &session).await?;
            match images {
                Some(dir) => commands::show_images::export(&paths, id, &dir).await,
                None => commands::show::show(&paths, id, json).await,
            }
        }
        Command::Sessions {
            json,
            all: _,
            watch: true,
        } => commands::watch::watch(&paths, json).await,
        Command::Sessions {
            json,
            all,
            watch: false,
        } => commands::sessions::list(&paths, json, all).await,
        Command::Board { quiet } => commands::board::board(&paths, quiet).await,
        Command::New {
            mode,
            model,
            title,
            worktree,
        } => commands::sessions::new(&paths, mode, model, title, worktree).await,
        Command::Diff { session, run, stat } => {
            let id = commands::here::chosen(&paths, &session).await?;
            commands::changes::diff(&paths, id, run, stat).await
        }
        Command::Rewind {
            session,
            run,
            yes,
            force,
        } => {
            let id = commands::here::chosen(&paths, &session).await?;
            commands::changes::rewind(&paths, id, run, force, yes).await
        }
        Command::Fork { session, turn } => {
            let id = commands::here::chosen(&paths, &session).await?;
            commands::changes::fork(&paths, id, turn).await
        }
        Command::Rm { session, force } => {
            let id = commands::here::chosen(&paths, &session).await?;
            commands::sessions::remove(&paths, id, force).await
        }
        Command::Shells {
            session,
            kill,
            json,
        } => {
            let id = commands::here::chosen(&paths, &session).await?;
            commands::shells::shells(&paths, id, kill, json).await
        }
        Command::Cost { session, json } => {
            let id = commands::here::chosen(&paths, &session).await?;
            commands::usage::cost(&paths, id, json).await
        }
        Command::Model {
            name,
            session,
            json,
        } => commands::models::model(&paths, session, name, json).await,
        Command::Mcp {
            action: McpAction::List { json },
        } => commands::mcp::list(&paths, json).await,
        Command::Acp => acp::serve(&paths).await,
        Command::Bridge => commands::bridge::bridge(&paths).await,
        Command::Hooks {
            action: ListAction::List { json },
        } => commands::extensions::list(&paths, Which::Hooks, json).await,
        Command::Skills {
            action: ListAction::List { json },
        } => commands::extensions::list(&paths, Which::Skills, json).await,
        Command::Commands {
            action: ListAction::List { json },
        } => commands::extensions::list(&paths, Which::Commands, json).await,
        Command::Completions { shell } => {
            let mut cli = <Cli as clap::CommandFactory>::command();
            // Written whole, then sent: a closed pipe (`| head`) ends it quietly.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cli, "agentctl", &mut script);
            stdout::write(&String::from_utf8_lossy(&script));
            Ok(0)
        }
    }
}

/// Refuses, before anything runs, a command that acts on this machine's daemon files (its pid
/// file, its service unit, its config) rather than through the connection, when `--host` names
/// another machine: it would act on the wrong one.
fn refuse_where_only_local(command: Option<&Command>, host: &host::Host) -> Result<(), Failure> {
    let what = match command {
        Some(Command::Daemon {
            action: DaemonAction::Status,
        }) => return Ok(()),
        Some(Command::Daemon { .. }) => "daemon",
        Some(Command::Config { .. }) => "config",
        _ => return Ok(()),
    };
    Err(commands::usage(format!(
        "`agentctl {what} …` acts on this machine's daemon and cannot go through --host yet; \
         run it there: `ssh {host} agentctl {what} …`"
    )))
}

/// `agentctl` alone: chat on a terminal, the help otherwise.
async fn without_command(paths: &agentctl::client::paths::Paths) -> Result<u8, Failure> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        let args = commands::chat::ChatArgs {
            session: None,
            model: None,
            provider: None,
            mode: None,
            max_turns: None,
            attach: false,
            worktree: false,
            ignore_config: false,
        };
        return commands::chat::chat(paths, args).await;
    }
    let mut cli = <Cli as clap::CommandFactory>::command();
    let _ = cli.print_help();
    Ok(2)
}
