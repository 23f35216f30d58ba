//! `agentctl run`: one prompt, one run, streamed to the terminal; the exit code tells how the
//! run ended (SPEC §1).

use std::io::{IsTerminal, Read};

use agentctl::client::paths::Paths;
use agentctl::client::{Client, Feed, FeedItem, View};
use protocol::{
    CreateSession, Decision, Delivery, Event, Mode, PermissionClass, Reply, Request, RunOptions,
    SessionId,
};
use tokio::signal::unix::SignalKind;

use super::run_keys::{AskKeys, Signal, next_key};
use super::{request, unexpected};
use crate::Failure;
use crate::connect;
use crate::json::JsonLines;
use crate::view::{HumanView, Style};

/// What `run` was asked to do.
pub struct RunArgs {
    /// The prompt, `-` or absent for stdin.
    pub prompt: Option<String>,
    /// An existing session to run in.
    pub session: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// The provider profile.
    pub provider: Option<String>,
    /// The mode of a new session.
    pub mode: Option<Mode>,
    /// The turn limit (0 for none).
    pub max_turns: Option<u32>,
    /// Permission classes allowed without asking.
    pub allow: Vec<PermissionClass>,
    /// Print JSON lines instead of the human view.
    pub json: bool,
    /// Return once the run has started.
    pub detach: bool,
    /// Use the latest session of this directory.
    pub continue_latest: bool,
    /// Give a new session its own git worktree.
    pub worktree: bool,
    /// Do not resume the session's runs after the daemon stopped during one.
    pub no_resume: bool,
    /// Run with the defaults when the daemon has no usable configuration.
    pub ignore_config: bool,
}

/// Runs the prompt and returns the exit code of the run's stop reason.
pub async fn run(paths: &Paths, args: RunArgs) -> Result<u8, Failure> {
    let prompt = read_prompt(args.prompt.as_deref())?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::new(format!("cannot read the current directory: {e}")))?;
    let client = connect::connect(paths, "run").await?;
    let session = match &args.session {
        Some(id) => SessionId(id.clone()),
        None if args.continue_latest => latest_here(&client, &cwd).await?,
        None => new_session(&client, &args, &cwd, &prompt).await?,
    };

    // On a terminal the user answers permission questions here; otherwise asks are denied
    // unless --allow granted them.
    let ask_here = !args.detach
        && std::io::stdin().is_terminal()
        && args.prompt.as_deref().is_some_and(|p| p != "-");
    let options = RunOptions {
        max_turns: args.max_turns,
        grants: args.allow.clone(),
        deny_unanswered: !ask_here && !args.detach,
        model: args.model.clone(),
        provider: args.provider.clone(),
        env: provider_env(),
        ignore_config: args.ignore_config,
    };
    if args.no_resume {
        let off = Request::SetResume {
            session: session.clone(),
            resume: false,
        };
        request(&client, off).await?;
    }
    let mut feed =
        Feed::new(client).ok_or_else(|| Failure::new("the connection's events were taken"))?;
    let follower = feed.follower().clone();
    // Subscribed and sent in one exchange; a message to a busy session joins its running run:
    // follow that run to its end.
    let (info, mut ours) = follower
        .send_following(&session, prompt, Delivery::FollowUp, options)
        .await
        .map_err(Failure::new)?;
    let session = info.id;
    if args.detach {
        outln!("{session}");
        return Ok(0);
    }
    let client = follower.client();
    let mut answers = if ask_here {
        Some(AskKeys::start())
    } else {
        None
    };
    let mut view: Box<dyn View> = if args.json {
        Box::new(JsonLines)
    } else {
        let mut human = HumanView::new(Style::detect());
        human.echo_user = false;
        Box::new(human)
    };
    let mut cancels = 0;
    // SIGTERM (`timeout`, a service stopping) cancels the run as Ctrl+C does; SIGHUP (the
    // terminal closed) leaves it going in the daemon.
    let mut terminate = Signal::new(SignalKind::terminate());
    let mut hangup = Signal::new(SignalKind::hangup());
    // A running tool's line is redrawn ten times a second (on a terminal; see `tick`).
    let mut ticks = tokio::time::interval(std::time::Duration::from_millis(100));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let next = tokio::select! {
            next = feed.next() => next,
            _ = ticks.tick() => {
                view.tick();
                continue;
            }
            Some(key) = next_key(&mut answers) => {
                let decision = match key.to_ascii_lowercase() {
                    'y' => Decision::Allow,
                    'a' => Decision::AllowAlways,
                    'n' => Decision::Deny,
                    // Ctrl+C while the terminal reads single keys.
                    '\u{3}' => {
                        if let Some(code) = interrupt(client, &session, &mut cancels).await? {
                            return Ok(code);
                        }
                        continue;
                    }
                    _ => {
                        eprint!("\r\npress y (allow), n (deny) or a (always allow): ");
                        continue;
                    }
                };
                if let Some(ask) = follower.pending(&session).first() {
                    eprint!("{key}\r\n");
                    let answer = Request::Answer { session: ask.asker(&session), request: ask.request, decision };
                    if let Err(failure) = request(client, answer).await {
                        eprintln!("agentctl: {}", failure.message);
                    }
                }
                continue;
            }
            _ = tokio::signal::ctrl_c() => {
                if let Some(code) = interrupt(client, &session, &mut cancels).await? {
                    return Ok(code);
                }
                continue;
            }
            () = terminate.recv() => {
                if cancels == 0 {
                    cancels = 1;
                    request(client, Request::Cancel { session: session.clone() }).await?;
                }
                continue;
            }
            () = hangup.recv() => {
                eprintln!("agentctl: the terminal closed; the run goes on in session {session}");
                return Ok(129);
            }
        };
        let (event, replay) = match next {
            FeedItem::Event { event, replay } => (event, replay),
            FeedItem::ReplayDone { .. } => continue,
            FeedItem::Closed(reason) => return Err(lost_daemon(reason)),
        };
        if let Event::RunStarted { run, .. } = &event.event
            && ours.is_none()
        {
            ours = Some(*run);
        }
        view.event(&event, replay);
        if let Some(keys) = &answers {
            keys.want(!follower.pending(&session).is_empty());
        }
        if let Event::RunFinished {
            run, stop_reason, ..
        } = &event.event
            && ours.is_none_or(|r| r == *run)
        {
            return Ok(stop_reason.exit_code() as u8);
        }
    }
}

/// Creates the session the run goes to, in `cwd`, titled after the prompt.
async fn new_session(
    client: &Client,
    args: &RunArgs,
    cwd: &std::path::Path,
    prompt: &str,
) -> Result<SessionId, Failure> {
    let create = Request::CreateSession(CreateSession {
        cwd: cwd.to_string_lossy().into_owned(),
        model: args.model.clone(),
        provider: args.provider.clone(),
        mode: args.mode,
        max_turns: None,
        title: Some(title_of(prompt)),
        env: super::client_env(),
        worktree: args.worktree,
    });
    match request(client, create).await? {
        Reply::SessionCreated(info) => {
            if let (Some(branch), false) = (&info.branch, args.json) {
                eprintln!("agentctl: working in {} on branch {branch}", info.cwd);
            }
            Ok(info.id)
        }
        other => Err(unexpected(other)),
    }
}

/// Ctrl+C: the first cancels the run, the second leaves at once with exit code 130.
async fn interrupt(
    client: &Client,
    session: &SessionId,
    cancels: &mut u32,
) -> Result<Option<u8>, Failure> {
    *cancels += 1;
    if *cancels > 1 {
        return Ok(Some(130));
    }
    eprintln!("\ncancelling… (Ctrl+C again to leave now)");
    request(
        client,
        Request::Cancel {
            session: session.clone(),
        },
    )
    .await?;
    Ok(None)
}

fn lost_daemon(reason: Option<String>) -> Failure {
    let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
    Failure::new(format!("lost the daemon before the run ended{reason}"))
}

/// The session of this directory with the latest activity.
async fn latest_here(client: &Client, cwd: &std::path::Path) -> Result<SessionId, Failure> {
    let here = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let listing = client.list_sessions().await.map_err(Failure::new)?;
    listing
        .sessions
        .into_iter()
        .filter(|s| std::path::Path::new(&s.cwd) == here)
        .max_by_key(|s| (s.last_activity_ms, s.created_ms))
        .map(|s| s.id)
        .ok_or_else(|| {
            Failure::new(format!(
                "no session in {}; run without --continue to start one",
                here.display()
            ))
        })
}

/// The prompt from the argument, or from stdin when it is `-` or absent and stdin is a pipe.
fn read_prompt(arg: Option<&str>) -> Result<String, Failure> {
    let usage = |message: &str| Failure {
        message: message.to_string(),
        code: 2,
    };
    let text = match arg {
        Some(text) if text != "-" => text.to_string(),
        _ => {
            if std::io::stdin().is_terminal() {
                return Err(usage(
                    "give a prompt: agentctl run \"PROMPT\" (or pipe it on stdin)",
                ));
            }
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Failure::new(format!("cannot read the prompt from stdin: {e}")))?;
            text
        }
    };
    if text.trim().is_empty() {
        return Err(usage("the prompt is empty"));
    }
    Ok(text)
}

/// A session title from the prompt's first line.
fn title_of(prompt: &str) -> String {
    let first = prompt
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim();
    if first.chars().count() > 60 {
        first.chars().take(59).collect::<String>() + "…"
    } else {
        first.to_string()
    }
}

/// Provider keys and addresses from this shell (`*_API_KEY`, `*_BASE_URL`): the daemon may have
/// been started from another one.
pub fn provider_env() -> Vec<(String, String)> {
    super::client_env()
        .into_iter()
        .filter(|(key, _)| key.ends_with("_API_KEY") || key.ends_with("_BASE_URL"))
        .collect()
}
