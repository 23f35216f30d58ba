//! `agentctl chat` and `agentctl attach ID`: the interactive view. It replays the session so
//! far, then follows it live while the user types: Enter sends (a follow-up while a run is
//! going), `/steer TEXT` or Alt+Enter steers, Esc cancels the run and puts returned messages back
//! into the input line, y/n/a or `/allow` `/deny` `/always` answer permission requests, Ctrl+D
//! or Ctrl+C twice detaches while the session and its run go on.
//!
//! On a terminal the input line is a reedline editor running on its own thread; events are
//! printed above it and its prompt is the status line. Without a terminal, lines come from stdin
//! and events go to stdout.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use agentctl::client::paths::Paths;
use agentctl::client::{Feed, FeedItem, Follower};
use protocol::{
    CreateSession, Decision, Delivery, Mode, PermissionRequestId, Reply, Request, RunOptions,
    SessionId, SessionState,
};
use tokio::sync::mpsc;

mod args;
mod changes;
mod complete;
mod events;
mod input;
mod status;

use super::run::provider_env;
use super::{request, unexpected};
use crate::view::{HumanView, Output, Style};
use crate::{Failure, connect};
pub use args::ChatArgs;
use input::{Input, InputLine, StdinLine, TerminalLine};
use status::Status;

/// The slash commands, for Tab completion.
pub(super) const SLASH_COMMANDS: &[&str] = &[
    "/help",
    "/steer",
    "/queue",
    "/cancel",
    "/allow",
    "/deny",
    "/always",
    "/mode",
    "/resume",
    "/compact",
    "/diff",
    "/rewind",
    "/sessions",
    "/detach",
    "/quit",
    "/exit",
];

const HELP: &str = "Enter sends a message (queued as a follow-up while a run is going).
/steer TEXT (or Alt+Enter)  steer the running run at its next turn
\\ at the end of a line      go on on the next line (so does Shift+Enter where the terminal tells it)
Tab                         complete a slash command
/queue TEXT                 queue a follow-up
Esc or /cancel              cancel the run; queued messages come back into the input
y / n / a                   allow, deny or always allow the pending permission request (one key)
/allow /deny /always [N]    the same, for request N
/mode [MODE]                show or set the mode: default, accept-edits, auto, plan, bypass
/resume on|off              whether a run the daemon stops during goes on in the next daemon
/diff [N] [--stat]          what the last run (or run N) changed in the directory
/rewind [N] [yes]           show, then with `yes` do, the undo of the last run (or run N on)
/sessions                   list sessions
/detach, Ctrl+D, Ctrl+C ×2  leave; the session and its run go on";

/// Runs the interactive view; returns the exit code.
pub async fn chat(paths: &Paths, args: ChatArgs) -> Result<u8, Failure> {
    let name = if args.attach { "attach" } else { "chat" };
    let client = connect::connect(paths, name).await?;
    let session = match &args.session {
        Some(id) => SessionId(id.clone()),
        None => {
            let cwd = std::env::current_dir()
                .map_err(|e| Failure::new(format!("cannot read the current directory: {e}")))?;
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
            match request(&client, Request::CreateSession(create)).await? {
                Reply::SessionCreated(info) => info.id,
                other => return Err(unexpected(other)),
            }
        }
    };
    let mut feed =
        Feed::new(client).ok_or_else(|| Failure::new("the connection's events were taken"))?;
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
        ..Status::default()
    }));
    let (input_tx, input_rx) = mpsc::unbounded_channel();
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    // The project's and the user's slash commands: sent to the daemon, which expands them.
    let commands = complete::project_commands(follower.client(), &info.cwd).await;
    let command_names: Vec<String> = commands.iter().map(|c| format!("/{}", c.name)).collect();
    let style = Style::detect();
    let (view, line): (HumanView, Box<dyn InputLine>) = if terminal {
        let partial: Arc<Mutex<String>> = Arc::default();
        // They complete with Tab too.
        let (editor, printer) =
            TerminalLine::start(status.clone(), partial.clone(), input_tx, commands)?;
        let output = Output::Lines { printer, partial };
        (HumanView::with_output(style, output), Box::new(editor))
    } else {
        (HumanView::new(style), Box::new(StdinLine::start(input_tx)))
    };
    let mut chat = Chat {
        follower,
        session: info.id.clone(),
        view,
        status,
        line,
        options,
        ctrl_c: 0,
        restore_after_cancel: None,
        draining: false,
        farewell: None,
        commands: command_names,
    };
    chat.say(&format!(
        "session {} in {} — /help for keys; Ctrl+D detaches",
        info.id, info.cwd
    ));
    let code = chat.run(&mut feed, input_rx).await;
    chat.line.stop();
    if let Some(farewell) = chat.farewell.take() {
        outln!("{farewell}");
    }
    code
}

struct Chat {
    /// The command files' commands (`/greet`), which the daemon expands.
    commands: Vec<String>,
    follower: Follower,
    session: SessionId,
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
    ) -> Result<u8, Failure> {
        // The running tool's time and output in the status line, ten times a second.
        let mut ticks = tokio::time::interval(std::time::Duration::from_millis(100));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = ticks.tick() => {
                    let redraw = {
                        let status = self.status.lock().unwrap_or_else(|e| e.into_inner());
                        status.tool.is_some() || (status.ask().is_some() && !status.keys_answer())
                    };
                    if redraw {
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
                    FeedItem::Closed(reason) => {
                        self.farewell = Some(format!("the daemon closed the connection{}", reason_text(reason)));
                        return Ok(1);
                    }
                },
                Some(input) = input.recv() => match self.on_input(input).await {
                    Ok(true) => {}
                    Ok(false) => {
                        self.farewell = Some(format!("detached; the session goes on: agentctl attach {}", self.session));
                        return Ok(0);
                    }
                    Err(failure) => self.say(&format!("error: {}", failure.message)),
                },
            }
        }
    }

    fn idle(&self) -> bool {
        let status = self.status.lock().unwrap_or_else(|e| e.into_inner());
        status.state != Some(SessionState::Running)
            && status.state != Some(SessionState::AwaitingApproval)
            && status.steer + status.follow_up == 0
    }

    /// Prints a line of the client's own.
    fn say(&mut self, text: &str) {
        self.view.note(text);
    }

    /// Handles one input; false to leave.
    async fn on_input(&mut self, input: Input) -> Result<bool, Failure> {
        let line = match input {
            Input::CtrlC => {
                self.ctrl_c += 1;
                if self.ctrl_c >= 2 {
                    return Ok(false);
                }
                self.say("(Ctrl+C again to detach; Esc cancels the run)");
                return Ok(true);
            }
            Input::CtrlD => return Ok(false),
            Input::Eof => {
                if self.idle() {
                    return Ok(false);
                }
                self.draining = true;
                return Ok(true);
            }
            Input::Failed(message) => {
                return Err(Failure::new(format!("the input line failed: {message}")));
            }
            Input::Key(key) => return self.on_key(key).await,
            Input::Line(line) => line,
        };
        self.ctrl_c = 0;
        if let Some(typed) = line.strip_prefix('\u{1b}') {
            return self.cancel(typed.to_string()).await;
        }
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Ok(true);
        }
        let pending = self
            .status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ask()
            .cloned();
        if let Some((key, _)) = pending.clone() {
            let decision = match trimmed.to_ascii_lowercase().as_str() {
                "y" | "yes" => Some(Decision::Allow),
                "n" | "no" => Some(Decision::Deny),
                "a" | "always" => Some(Decision::AllowAlways),
                _ => None,
            };
            if let Some(decision) = decision {
                self.answer(key, decision).await?;
                return Ok(true);
            }
        }
        let (command, rest) = match trimmed.split_once(char::is_whitespace) {
            Some((command, rest)) => (command, rest.trim()),
            None => (trimmed, ""),
        };
        match command {
            "/help" => self.say(HELP),
            "/detach" | "/quit" | "/exit" => return Ok(false),
            "/cancel" => return self.cancel(String::new()).await,
            "/steer" if !rest.is_empty() => self.send(rest, Delivery::Steer).await?,
            "/queue" if !rest.is_empty() => self.send(rest, Delivery::FollowUp).await?,
            "/steer" | "/queue" => self.say(&format!("{command} needs a message")),
            "/allow" | "/deny" | "/always" => {
                let decision = match command {
                    "/allow" => Decision::Allow,
                    "/deny" => Decision::Deny,
                    _ => Decision::AllowAlways,
                };
                // A number names a pending request (a subagent's, if it is one of theirs).
                let asks = self
                    .status
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .asks
                    .clone();
                let request = match rest.parse::<u64>() {
                    Ok(n) => Some(
                        asks.iter()
                            .map(|(key, _)| key.clone())
                            .find(|(_, r)| r.0 == n)
                            .unwrap_or((None, PermissionRequestId(n))),
                    ),
                    Err(_) => pending.map(|(key, _)| key),
                };
                match request {
                    Some(request) => self.answer(request, decision).await?,
                    None => self.say("no permission request is pending"),
                }
            }
            "/mode" if rest.is_empty() => {
                let mode = self.status.lock().unwrap_or_else(|e| e.into_inner()).mode;
                self.say(&format!(
                    "mode: {mode} (set with /mode default|accept-edits|plan|bypass)"
                ));
            }
            "/mode" => {
                let mode: Mode = rest.parse().map_err(Failure::new)?;
                request(
                    self.follower.client(),
                    Request::SetMode {
                        session: self.session.clone(),
                        mode,
                    },
                )
                .await?;
            }
            "/resume" => {
                let resume = match rest {
                    "on" => true,
                    "off" => false,
                    _ => {
                        self.say("use /resume on or /resume off");
                        return Ok(true);
                    }
                };
                let set = Request::SetResume {
                    session: self.session.clone(),
                    resume,
                };
                request(self.follower.client(), set).await?;
                self.say(&format!("interrupted runs resume: {rest}"));
            }
            "/compact" => {
                request(
                    self.follower.client(),
                    Request::Compact {
                        session: self.session.clone(),
                    },
                )
                .await?;
            }
            "/diff" => self.diff(rest).await?,
            "/rewind" => self.rewind(rest).await?,
            "/sessions" => {
                let list = self
                    .follower
                    .client()
                    .list_sessions()
                    .await
                    .map_err(Failure::new)?;
                for s in list.sessions {
                    self.say(&format!(
                        "{}  {:<17}  {:>3} turns  {}",
                        s.id,
                        s.state.as_str(),
                        s.turns,
                        s.cwd
                    ));
                }
            }
            // A command file's command goes to the daemon, which expands it.
            _ if self.commands.iter().any(|c| c == command) => {
                self.send(trimmed, Delivery::FollowUp).await?
            }
            // A path such as /usr/bin/x is a message; a lone /word is a command.
            _ if command.len() > 1 && command.starts_with('/') && !command[1..].contains('/') => {
                self.say(&format!("unknown command {command}; /help lists them"));
            }
            _ => self.send(trimmed, Delivery::FollowUp).await?,
        }
        Ok(true)
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

    async fn send(&mut self, text: &str, delivery: Delivery) -> Result<(), Failure> {
        let reply = request(
            self.follower.client(),
            Request::Send {
                session: self.session.clone(),
                text: text.to_string(),
                delivery,
                options: self.options.clone(),
            },
        )
        .await?;
        if let Reply::Sent { started: None } = reply {
            let what = match delivery {
                Delivery::Steer => "queued to steer at the next turn",
                Delivery::FollowUp => "queued as a follow-up",
            };
            self.say(&format!("({what}: {text})"));
        }
        Ok(())
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
            self.follower.client(),
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
            self.follower.client(),
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

fn reason_text(reason: Option<String>) -> String {
    reason.map(|r| format!(": {r}")).unwrap_or_default()
}
