//! `agentctl run`: one prompt, one run, streamed to the terminal; the exit code tells how the
//! run ended (SPEC §1).

use std::io::{IsTerminal, Read};

use protocol::client::{Client, Incoming};
use protocol::paths::Paths;
use protocol::{
    CreateSession, Decision, Delivery, Event, Mode, PermissionClass, PermissionRequestId, Reply,
    Request, RunId, RunOptions, SessionId, SessionInfo,
};

use super::{request, unexpected};
use crate::Failure;
use crate::connect;
use crate::json::event_json;
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
}

/// Runs the prompt and returns the exit code of the run's stop reason.
pub async fn run(paths: &Paths, args: RunArgs) -> Result<u8, Failure> {
    let prompt = read_prompt(args.prompt.as_deref())?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::new(format!("cannot read the current directory: {e}")))?;
    let mut client = connect::connect(paths, "run").await?;
    let mut incoming = client
        .take_incoming()
        .expect("incoming events are taken once");

    let session = match &args.session {
        Some(id) => SessionId(id.clone()),
        None if args.continue_latest => latest_here(&client, &cwd).await?,
        None => {
            let reply = request(
                &client,
                Request::CreateSession(CreateSession {
                    cwd: cwd.to_string_lossy().into_owned(),
                    model: args.model.clone(),
                    provider: args.provider.clone(),
                    mode: args.mode,
                    max_turns: None,
                    title: Some(title_of(&prompt)),
                    env: super::client_env(),
                    worktree: args.worktree,
                }),
            )
            .await?;
            match reply {
                Reply::SessionCreated(info) => {
                    if let (Some(branch), false) = (&info.branch, args.json) {
                        eprintln!("agentctl: working in {} on branch {branch}", info.cwd);
                    }
                    info.id
                }
                other => return Err(unexpected(other)),
            }
        }
    };
    let info = subscribe(&client, &session, None).await?;
    let session = info.id.clone();
    let mut last_seq = info.last_seq;

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
    };
    let sent = request(
        &client,
        Request::Send {
            session: session.clone(),
            text: prompt,
            delivery: Delivery::FollowUp,
            options,
        },
    )
    .await?;
    // A message to a busy session joins its running run: follow that run to its end.
    let mut ours: Option<RunId> = match sent {
        Reply::Sent { started } => started,
        other => return Err(unexpected(other)),
    };
    if args.detach {
        println!("{session}");
        return Ok(0);
    }
    let mut answers = if ask_here {
        Some(AskKeys::start())
    } else {
        None
    };
    let mut asks: Vec<PermissionRequestId> = Vec::new();

    let mut view = HumanView::new(Style::detect());
    view.echo_user = false;
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
            next = incoming.recv() => next,
            _ = ticks.tick(), if !args.json => {
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
                        if let Some(code) = interrupt(&client, &session, &mut cancels).await? {
                            return Ok(code);
                        }
                        continue;
                    }
                    _ => {
                        eprint!("\r\npress y (allow), n (deny) or a (always allow): ");
                        continue;
                    }
                };
                if let Some(request_id) = asks.first().copied() {
                    eprint!("{key}\r\n");
                    if let Err(failure) = request(&client, Request::Answer { session: session.clone(), request: request_id, decision }).await {
                        eprintln!("agentctl: {}", failure.message);
                    }
                }
                continue;
            }
            _ = tokio::signal::ctrl_c() => {
                if let Some(code) = interrupt(&client, &session, &mut cancels).await? {
                    return Ok(code);
                }
                continue;
            }
            () = terminate.recv() => {
                if cancels == 0 {
                    cancels = 1;
                    request(&client, Request::Cancel { session: session.clone() }).await?;
                }
                continue;
            }
            () = hangup.recv() => {
                eprintln!("agentctl: the terminal closed; the run goes on in session {session}");
                return Ok(129);
            }
        };
        match next {
            Some(Incoming::Event(event)) => {
                if event.seq <= last_seq {
                    continue;
                }
                last_seq = event.seq;
                if let Event::RunStarted { run, .. } = &event.event
                    && ours.is_none()
                {
                    ours = Some(*run);
                }
                if args.json {
                    println!("{}", event_json(&event));
                } else {
                    view.show(&event);
                }
                match &event.event {
                    Event::PermissionRequested { request, .. } => {
                        asks.push(*request);
                    }
                    Event::PermissionResolved { request, .. } => asks.retain(|r| r != request),
                    _ => {}
                }
                if let Some(keys) = &answers {
                    keys.want(!asks.is_empty());
                }
                if let Event::RunFinished {
                    run, stop_reason, ..
                } = &event.event
                    && ours.is_none_or(|r| r == *run)
                {
                    return Ok(stop_reason.exit_code() as u8);
                }
            }
            Some(Incoming::Lagged { .. }) => {
                subscribe(&client, &session, Some(last_seq)).await?;
            }
            Some(Incoming::Closed(reason)) => return Err(lost_daemon(reason)),
            None => return Err(lost_daemon(None)),
        }
    }
}

/// A signal to wait for, or none where the platform has no such signal.
struct Signal(Option<tokio::signal::unix::Signal>);

use tokio::signal::unix::SignalKind;

impl Signal {
    fn new(kind: SignalKind) -> Signal {
        Signal(tokio::signal::unix::signal(kind).ok())
    }

    /// Waits for the signal; never returns when it cannot be received.
    async fn recv(&mut self) {
        match &mut self.0 {
            Some(signal) => {
                signal.recv().await;
            }
            None => std::future::pending().await,
        }
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

/// Single keys from the terminal while a permission request waits: the terminal is in raw mode
/// only then, so Enter is not needed, and typing at other times is left alone.
struct AskKeys {
    keys: tokio::sync::mpsc::UnboundedReceiver<char>,
    asking: std::sync::Arc<std::sync::atomic::AtomicBool>,
    wake: std::sync::mpsc::Sender<()>,
}

impl AskKeys {
    fn start() -> AskKeys {
        use std::sync::atomic::Ordering;
        let (tx, keys) = tokio::sync::mpsc::unbounded_channel();
        let (wake, woken) = std::sync::mpsc::channel::<()>();
        let asking = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = asking.clone();
        std::thread::spawn(move || {
            use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
            while woken.recv().is_ok() {
                if !flag.load(Ordering::Relaxed) || crossterm::terminal::enable_raw_mode().is_err()
                {
                    continue;
                }
                // Keys typed before the question are not its answer.
                while event::poll(std::time::Duration::ZERO).unwrap_or(false) {
                    let _ = event::read();
                }
                eprint!("allow? [y]es / [n]o / [a]lways: ");
                while flag.load(Ordering::Relaxed) {
                    if !event::poll(std::time::Duration::from_millis(50)).unwrap_or(false) {
                        continue;
                    }
                    let Ok(Event::Key(key)) = event::read() else {
                        continue;
                    };
                    if key.kind == KeyEventKind::Release {
                        continue;
                    }
                    let c = match key.code {
                        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                            '\u{3}'
                        }
                        KeyCode::Char(c) => c,
                        _ => continue,
                    };
                    let answered = matches!(c.to_ascii_lowercase(), 'y' | 'n' | 'a');
                    if tx.send(c).is_err() {
                        break;
                    }
                    if answered {
                        // The next request (if any) wakes this thread again.
                        flag.store(false, Ordering::Relaxed);
                    }
                }
                let _ = crossterm::terminal::disable_raw_mode();
            }
        });
        AskKeys { keys, asking, wake }
    }

    /// Whether a request waits for a key.
    fn want(&self, asking: bool) {
        use std::sync::atomic::Ordering;
        if asking && !self.asking.swap(true, Ordering::Relaxed) {
            let _ = self.wake.send(());
        } else if !asking {
            self.asking.store(false, Ordering::Relaxed);
        }
    }
}

impl Drop for AskKeys {
    fn drop(&mut self) {
        self.asking
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

async fn next_key(keys: &mut Option<AskKeys>) -> Option<char> {
    match keys {
        Some(keys) => keys.keys.recv().await,
        None => std::future::pending().await,
    }
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

/// Subscribes from `from_seq`, or from the session's newest event.
async fn subscribe(
    client: &Client,
    session: &SessionId,
    from_seq: Option<u64>,
) -> Result<SessionInfo, Failure> {
    let from = match from_seq {
        Some(seq) => seq,
        // A page after the newest event holds no events: only the listing is asked for.
        None => match request(
            client,
            Request::GetHistory {
                session: session.clone(),
                from_seq: u64::MAX,
            },
        )
        .await?
        {
            Reply::History { session, .. } => session.last_seq,
            other => return Err(unexpected(other)),
        },
    };
    match request(
        client,
        Request::Subscribe {
            session: session.clone(),
            from_seq: from,
        },
    )
    .await?
    {
        Reply::Subscribed(mut info) => {
            info.last_seq = from;
            Ok(info)
        }
        other => Err(unexpected(other)),
    }
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
