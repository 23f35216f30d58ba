//! `agentctl`: the thin client of the agentd daemon. Every command talks to the daemon over its
//! local socket and starts it first when none is running.

#[macro_use]
mod stdout;
mod acp;
mod cli;
mod colored_diff;
mod commands;
mod connect;
mod diagnostics_piece;
mod format;
mod host;
mod hosts;
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
use cli::{AllowKind, Cli, Command, ConfigAction, DaemonAction, ListAction, LspAction, McpAction};
use commands::extensions::Which;
use protocol::{Decision, Delivery, PermissionClass};

/// A failure to report on stderr, with the exit code to leave with.
#[derive(Debug)]
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

    /// A mistake in how the command was called: exit code 2.
    pub fn usage(message: impl std::fmt::Display) -> Self {
        Failure {
            message: message.to_string(),
            code: 2,
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
    let bridge = matches!(cli.command, Some(Command::Bridge));
    let targets = match bridge {
        true => vec![None],
        false => hosts::targets(&paths, &cli.host, all_hosts(cli.command.as_ref()))?,
    };
    let remote = match targets.as_slice() {
        [Some(remote)] => Some(remote.clone()),
        _ => None,
    };
    if targets.len() > 1 && !takes_several_hosts(cli.command.as_ref()) {
        return Err(commands::usage(
            "only `agentctl board` and `agentctl sessions --watch` take several hosts; give one --host",
        ));
    }
    if let Some(remote) = &remote {
        refuse_where_only_local(cli.command.as_ref(), remote)?;
        connect::set_host(remote.clone(), cli.forward_keys);
    }
    if !bridge {
        commands::here::set_dir(cli.cwd.as_deref(), remote.as_ref())?;
    }
    let Some(command) = cli.command else {
        return without_command(&paths).await;
    };
    match command {
        // Over --host the daemon's own pid file and socket are not here: the bridge is used.
        Command::Daemon { action } => match (action, connect::remote_host()) {
            (DaemonAction::Start, Some(remote)) => {
                commands::daemon_remote::start(&paths, remote).await
            }
            (DaemonAction::Stop { now }, Some(remote)) => {
                commands::daemon_remote::stop(&paths, remote, now).await
            }
            (DaemonAction::Restart { now, .. }, Some(remote)) => {
                commands::daemon_remote::restart(&paths, remote, now).await
            }
            (DaemonAction::Start, None) => commands::daemon::start(&paths).await,
            (DaemonAction::Stop { now }, None) => commands::daemon::stop(&paths, now).await,
            (DaemonAction::Restart { force, now }, None) => {
                commands::daemon::restart(&paths, force, now).await
            }
            (DaemonAction::Status, _) => commands::daemon::status(&paths).await,
            (DaemonAction::Install, _) => commands::service::install(&paths),
            (DaemonAction::Uninstall, _) => commands::service::uninstall(),
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
            json, watch: true, ..
        } => commands::watch::watch(&paths, json, targets).await,
        Command::Sessions {
            json,
            all,
            watch: false,
            ..
        } => commands::sessions::list(&paths, json, all).await,
        Command::Board { quiet, .. } => {
            commands::board::board(&paths, quiet, targets, cli.forward_keys).await
        }
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
        Command::Lsp {
            action: LspAction::List { json },
        } => commands::lsp::list(&paths, json).await,
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

/// Whether `command` asked for every named host (`--all-hosts`).
fn all_hosts(command: Option<&Command>) -> bool {
    matches!(
        command,
        Some(Command::Board {
            all_hosts: true,
            ..
        }) | Some(Command::Sessions {
            all_hosts: true,
            ..
        })
    )
}

/// Whether `command` shows several daemons at once: the board and `sessions --watch`.
fn takes_several_hosts(command: Option<&Command>) -> bool {
    matches!(
        command,
        Some(Command::Board { .. }) | Some(Command::Sessions { watch: true, .. })
    )
}

/// Refuses, before anything runs, a command that acts on this machine's files (its service
/// unit, its config) rather than through the connection, when `--host` names another machine:
/// it would act on the wrong one.
fn refuse_where_only_local(
    command: Option<&Command>,
    remote: &hosts::Remote,
) -> Result<(), Failure> {
    let what = match command {
        Some(Command::Daemon {
            action: DaemonAction::Install | DaemonAction::Uninstall,
        }) => "daemon install|uninstall",
        Some(Command::Config { .. }) => "config",
        _ => return Ok(()),
    };
    Err(commands::usage(format!(
        "`agentctl {what}` acts on this machine's files and cannot go through --host; \
         run it there: `ssh {} agentctl {what} …`",
        remote.host
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
