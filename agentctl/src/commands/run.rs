//! `agentctl run`: one prompt, one run, streamed to the terminal; the exit code tells how the
//! run ended.

use std::io::{IsTerminal, Read};

use agentctl::client::paths::Paths;
use agentctl::client::{Client, Feed, View};
use protocol::{
    CreateSession, Delivery, Mode, PermissionClass, Reply, Request, RunOptions, SessionId,
};

use super::run_follow::{Ended, Following};
use super::run_keys::AskKeys;
use super::{request, unexpected};
use crate::Failure;
use crate::connect;
use crate::json::JsonLines;
use crate::view::{HumanView, Output, Style};

/// What `run` was asked to do.
pub struct RunArgs {
    /// The prompt, `-` or absent for stdin.
    pub prompt: Option<String>,
    /// Image files to send with it (`-i`), as given.
    pub images: Vec<String>,
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

/// Runs the prompt and returns the exit code of the run's stop reason. Once the run is under
/// way, its end (however it came) is followed on stderr by the session and how to attach to it.
pub async fn run(paths: &Paths, args: RunArgs) -> Result<u8, Failure> {
    // The images are read before the prompt from stdin: a wrong path fails at once.
    let images = super::read_images(&args.images)?;
    let (prompt, images) = super::with_mentions(read_prompt(args.prompt.as_deref())?, images)?;
    let cwd = super::here::current_dir()?;
    let client = connect::connect(paths, "run").await?;
    let session = match &args.session {
        Some(id) => super::here::session_named(&client, id).await?,
        None if args.continue_latest => {
            let here = super::here::current_dir()?;
            let hint = "run without --continue to start one";
            super::here::latest_in(&client, &here, hint).await?
        }
        None => new_session(&client, &args, &cwd, &prompt).await?,
    };
    let created = args.session.is_none() && !args.continue_latest;

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
    let mut feed = Feed::new(client)
        .ok_or_else(|| Failure::new("the connection's events were taken"))?
        .reconnecting(connect::reconnect(paths, "run"));
    // Subscribed and sent in one exchange; a message to a busy session joins its running run:
    // follow that run to its end.
    let sent = feed
        .follower()
        .send_following(&session, prompt, images, Delivery::FollowUp, options)
        .await;
    if let (Err(err), true) = (&sent, created) {
        // Refused (too large, say): the session made for it goes too, unless the daemon went.
        if !err.connection_lost() {
            let delete = Request::DeleteSession {
                session: session.clone(),
                force: true,
            };
            let _ = feed.client().request(delete).await;
        }
    }
    let (info, ours) = sent.map_err(|err| match err.connection_lost() {
            // Whether the prompt arrived is not known: it is not sent twice.
            true => Failure::new(format!(
                "lost the daemon while sending the prompt ({err}); it may have started a run: see `agentctl attach {session}` once the daemon is back"
            )),
            false => Failure::new(err),
        })?;
    let session = info.id;
    if args.detach {
        outln!("{session}");
        return Ok(0);
    }
    let view: Box<dyn View> = if args.json {
        Box::new(JsonLines)
    } else {
        // Standard output that is not a terminal gets only the answer; the rest goes to
        // standard error.
        let mut human = if std::io::stdout().is_terminal() {
            HumanView::new(Style::detect())
        } else {
            HumanView::with_output(Style::detect(), Output::Stderr)
        };
        human.echo_user = false;
        human.ask_here = ask_here;
        Box::new(human)
    };
    // On a terminal the view draws the permission question; elsewhere it is written here.
    let prompt_written = args.json || !std::io::stdout().is_terminal();
    let mut run = Following {
        prompt_written,
        follower: feed.follower().clone(),
        session,
        ours,
        // On a terminal the view draws the question under what is under way.
        keys: ask_here.then(|| AskKeys::start(prompt_written)),
        view,
        cancels: 0,
        away: None,
        created,
        asked_model: false,
        discarded: false,
    };
    let ended = run.follow(&mut feed).await;
    let session = run.session.clone();
    let discarded = run.discarded;
    // The terminal is given back (cooked, its cursor shown) before the last words.
    drop(run);
    match ended {
        Ended::Lost(failure) => Err(failure),
        // A session whose only run failed before the model was asked is not kept: no
        // pointer to it.
        Ended::Exit(code) => {
            if !discarded {
                farewell(&session);
            }
            Ok(code)
        }
        Ended::Failed(failure) => {
            if !discarded {
                farewell(&session);
            }
            Err(failure)
        }
    }
}

/// The last line on stderr, dimmed on a terminal: the session and how to attach to it.
fn farewell(session: &SessionId) {
    let line = format!("session {session} · agentctl attach {session}");
    let style = if std::io::stderr().is_terminal() {
        Style::detect()
    } else {
        Style::plain()
    };
    eprintln!("{}", style.dim(&line));
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
        title: Some(protocol::title_of(prompt)),
        env: super::client_env(),
        worktree: args.worktree,
    });
    match request(client, create)
        .await
        .map_err(super::here::on_missing_dir)?
    {
        Reply::SessionCreated(info) => {
            if let (Some(branch), false) = (&info.branch, args.json) {
                let shown = |text: &str| agentctl::client::one_line(text, 4096);
                let (cwd, branch) = (shown(&info.cwd), shown(branch));
                eprintln!("agentctl: working in {cwd} on branch {branch}");
            }
            Ok(info.id)
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
    super::check_message_size(&text, 0)?;
    Ok(text)
}

/// Provider keys and addresses from this shell (`*_API_KEY`, `*_BASE_URL`): the daemon may have
/// been started from another one.
pub fn provider_env() -> Vec<(String, String)> {
    super::client_env()
        .into_iter()
        .filter(|(key, _)| crate::connect::is_provider_var(key))
        .collect()
}
