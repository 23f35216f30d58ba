//! `agentctl chat` and `agentctl attach ID`: the interactive view. It replays the session so
//! far, then follows it live while the user types: Enter sends (a follow-up while a run is
//! going), `/steer TEXT` or Alt+Enter steers, Esc cancels the run and puts returned messages back
//! into the input line, y/n/a or `/allow` `/deny` `/always` answer permission requests, Ctrl+D
//! or Ctrl+C twice detaches while the session and its run go on.
//!
//! On a terminal, finished lines scroll up and the bottom of the screen holds the unfinished
//! line, what is under way, the status line and the input line (see `crate::screen`); keys are
//! read on their own thread. Without a terminal, lines come from stdin and events go to stdout.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use agentctl::client::paths::Paths;
use agentctl::client::{Feed, FeedItem, Follower};
use protocol::{CreateSession, Decision, Reply, Request, RunOptions, SessionId, SessionState};
use tokio::sync::mpsc;

mod args;
mod changes;
mod complete;
mod editor;
mod events;
mod input;
mod slash;
mod status;
mod terminal;

use super::run::provider_env;
use super::run_keys::Signal;
use super::{request, unexpected};
use crate::screen::Live;
use crate::view::{HumanView, Output, Style, far};
use crate::{Failure, connect};
pub use args::ChatArgs;
use complete::Completer;
use input::{Input, InputLine, StdinLine};
use status::Status;
use terminal::TerminalLine;
use tokio::signal::unix::SignalKind;

/// Runs the interactive view; returns the exit code.
pub async fn chat(paths: &Paths, args: ChatArgs) -> Result<u8, Failure> {
    let name = if args.attach { "attach" } else { "chat" };
    let client = connect::connect(paths, name).await?;
    let session = match &args.session {
        Some(id) => SessionId(id.clone()),
        None => {
            let cwd = crate::commands::here::current_dir()?;
            let create = CreateSession {
                cwd: cwd.to_string_lossy().into_owned(),
                model: args.model.clone(),
                provider: args.provider.clone(),
                mode: args.mode,
                max_turns: None,
                title: None,
                env: super::client_env(),
                worktree: args.worktree,
            };
            match request(&client, Request::CreateSession(create))
                .await
                .map_err(crate::commands::here::on_missing_dir)?
            {
                Reply::SessionCreated(info) => info.id,
                other => return Err(unexpected(other)),
            }
        }
    };
    let feed =
        Feed::new(client).ok_or_else(|| Failure::new("the connection's events were taken"))?;
    // A daemon that restarts (or crashes and comes back) is followed again.
    let mut feed = feed.reconnecting(connect::reconnect(paths, name));
    let follower = feed.follower().clone();
    let info = follower.follow(&session, 0).await.map_err(Failure::new)?;
    let options = RunOptions {
        // Interactive sessions run without a turn limit unless asked for one.
        max_turns: Some(args.max_turns.unwrap_or(0)),
        env: provider_env(),
        ignore_config: args.ignore_config,
        ..RunOptions::default()
    };
    let status = Arc::new(Mutex::new(Status {
        state: Some(info.state),
        mode: info.mode,
        steer: info.steer_queued as usize,
        follow_up: info.follow_up_queued as usize,
        model: info.model.clone(),
        ..Status::default()
    }));
    let (input_tx, input_rx) = mpsc::unbounded_channel();
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    // The project's and the user's slash commands: sent to the daemon, which expands them.
    let commands = complete::project_commands(&follower.client(), &info.cwd).await;
    let completer = Arc::new(Completer::new(&commands, std::path::Path::new(&info.cwd)));
    let style = Style::detect();
    // SIGTERM or a closed terminal leaves as Ctrl+D does, from the moment the view shows (not
    // before: until then they end the program at once): the terminal is given back cooked,
    // and the session goes on.
    let signals = Signals {
        terminate: Signal::new(SignalKind::terminate()),
        hangup: Signal::new(SignalKind::hangup()),
    };
    let (view, line): (HumanView, Box<dyn InputLine>) = if terminal {
        let live = Live::shared();
        let editor =
            TerminalLine::start(live.clone(), status.clone(), completer.clone(), input_tx)?;
        let view = HumanView::with_output(style, Output::Screen(live));
        (view, Box::new(editor))
    } else {
        (HumanView::new(style), Box::new(StdinLine::start(input_tx)))
    };
    let mut chat = Chat {
        follower,
        session: info.id.clone(),
        cwd: info.cwd.clone(),
        view,
        status,
        line,
        options,
        ctrl_c: 0,
        restore_after_cancel: None,
        draining: false,
        farewell: None,
        completer,
        // The session's own model and provider (or those of its runs) go to `/clear`'s.
        settings: Settings {
            model: args.model.clone().or_else(|| info.model.clone()),
            provider: args.provider.clone().or_else(|| info.provider.clone()),
            worktree: args.worktree,
        },
    };
    chat.say(&format!(
        "session {} in {} — /help for keys; Ctrl+D detaches",
        far::id(&info.id),
        far::path(&info.cwd)
    ));
    let code = chat.run(&mut feed, input_rx, signals).await;
    chat.line.stop();
    chat.view.close();
    if let Some(farewell) = chat.farewell.take() {
        outln!("{farewell}");
    }
    code
}

/// The signals that end the view.
struct Signals {
    terminate: Signal,
    hangup: Signal,
}

/// What a session was made with, for `/clear`'s fresh one.
struct Settings {
    model: Option<String>,
    provider: Option<String>,
    worktree: bool,
}

struct Chat {
    /// What Tab completes and `/help` lists.
    completer: Arc<Completer>,
    follower: Follower,
    session: SessionId,
    /// The session's directory.
    cwd: String,
    /// What `/clear` gives the fresh session.
    settings: Settings,
    view: HumanView,
    status: Arc<Mutex<Status>>,
    line: Box<dyn InputLine>,
    options: RunOptions,
    ctrl_c: u32,
    /// Text typed when Esc was pressed, restored with the returned messages.
    restore_after_cancel: Option<String>,
    /// Stdin ended: leave once the session is idle.
    draining: bool,
    /// The last words, printed after the input line is gone.
    farewell: Option<String>,
}

impl Chat {
    async fn run(
        &mut self,
        feed: &mut Feed,
        mut input: mpsc::UnboundedReceiver<Input>,
        signals: Signals,
    ) -> Result<u8, Failure> {
        // The running tool's time and output in the status line, ten times a second.
        let mut ticks = tokio::time::interval(std::time::Duration::from_millis(100));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let Signals {
            mut terminate,
            mut hangup,
        } = signals;
        loop {
            tokio::select! {
                () = terminate.recv() => return Ok(0),
                () = hangup.recv() => return Ok(129),
                _ = ticks.tick() => {
                    // A terminal that went away ends the chat as a hangup does, whatever the
                    // key thread makes of it.
                    if self.line.gone() {
                        return Ok(129);
                    }
                    self.view.tick();
                    let waiting = {
                        let status = self.status.lock().unwrap_or_else(|e| e.into_inner());
                        status.ask().is_some() && !status.keys_answer()
                    };
                    if waiting {
                        self.line.refresh();
                    }
                }
                item = feed.next() => match item {
                    FeedItem::Event { event, replay } => {
                        self.on_event(&event, replay);
                        if self.draining && self.idle() {
                            return Ok(0);
                        }
                    }
                    FeedItem::ReplayDone { .. } => {}
                    FeedItem::Reconnecting { planned, .. } => {
                        let why = if planned { "the daemon is restarting" } else { "lost the daemon" };
                        self.say(&format!("{why}; reaching it again…"));
                    }
                    FeedItem::Reconnected { gone, .. } => {
                        if gone.contains(&self.session) {
                            self.farewell = Some(format!("session {} was deleted while the daemon was away", far::id(&self.session)));
                            return Ok(1);
                        }
                        self.say("the daemon is back; following the session again");
                    }
                    FeedItem::Closed(reason) => {
                        self.farewell = Some(format!(
                            "the daemon closed the connection{}; the session stays: agentctl attach {}",
                            reason_text(reason),
                            far::id(&self.session)
                        ));
                        return Ok(1);
                    }
                },
                Some(input) = input.recv() => {
                    // A terminal gone is a hangup: nobody reads a farewell.
                    if let Input::Gone = input {
                        return Ok(129);
                    }
                    match self.on_input(input).await {
                        Ok(true) => {}
                        Ok(false) => {
                            self.farewell = Some(format!("detached; the session goes on: agentctl attach {}", far::id(&self.session)));
                            return Ok(0);
                        }
                        Err(failure) => self.say(&format!("error: {}", failure.message)),
                    }
                }
            }
        }
    }

    /// Prints a line of the client's own.
    fn say(&mut self, text: &str) {
        self.view.note(text);
    }

    /// A key pressed while a permission request was shown: y, n or a answers the oldest one,
    /// any other key is ignored with a hint.
    async fn on_key(&mut self, key: char) -> Result<bool, Failure> {
        self.ctrl_c = 0;
        let pending = self
            .status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ask()
            .map(|(key, _)| key.clone());
        let Some(request) = pending else {
            return Ok(true);
        };
        let decision = match key.to_ascii_lowercase() {
            'y' => Decision::Allow,
            'n' => Decision::Deny,
            'a' => Decision::AllowAlways,
            _ => {
                self.say("press y (allow), n (deny) or a (always allow); Esc cancels the run");
                return Ok(true);
            }
        };
        self.answer(request, decision).await?;
        Ok(true)
    }

    async fn cancel(&mut self, typed: String) -> Result<bool, Failure> {
        let state = self.status.lock().unwrap_or_else(|e| e.into_inner()).state;
        if matches!(state, None | Some(SessionState::Idle)) {
            if !typed.is_empty() {
                self.line.restore(typed);
            }
            return Ok(true);
        }
        self.restore_after_cancel = Some(typed);
        request(
            &self.follower.client(),
            Request::Cancel {
                session: self.session.clone(),
            },
        )
        .await?;
        Ok(true)
    }

    /// Answers request `key` (in the subagent that asked, if one did).
    async fn answer(&mut self, key: status::AskKey, decision: Decision) -> Result<(), Failure> {
        let (asker, request_id) = key;
        request(
            &self.follower.client(),
            Request::Answer {
                session: asker.unwrap_or_else(|| self.session.clone()),
                request: request_id,
                decision,
            },
        )
        .await?;
        Ok(())
    }
}

/// `: REASON` of a closed connection, shown on one line, or nothing.
fn reason_text(reason: Option<String>) -> String {
    reason
        .map(|r| format!(": {}", far::line(&r)))
        .unwrap_or_default()
}
