//! What the user typed, acted on: a permission answer, a slash command, or a message (with
//! the files its `@path` mentions attached).

use protocol::{
    CreateSession, Decision, Delivery, Mode, PermissionRequestId, Reply, Request, SessionState,
};

use super::input::Input;
use super::status::Status;
use super::{Chat, request, unexpected};
use crate::Failure;
use crate::view::far;

/// What `/init` asks of the agent.
const INIT_PROMPT: &str = "Look at this project (its layout, how it is built, tested and \
linted, its conventions) and write AGENTS.md at its root: a short guide for coding agents \
working here, with the exact commands to build, test and lint, where things live, and the \
conventions to follow. If AGENTS.md exists, update it instead: keep what is still true, fix \
what is not, add what is missing.";

impl Chat {
    /// Handles one input; false to leave.
    pub(super) async fn on_input(&mut self, input: Input) -> Result<bool, Failure> {
        let line = match input {
            Input::CtrlC => {
                self.ctrl_c += 1;
                if self.ctrl_c >= 2 {
                    return Ok(false);
                }
                self.say("(Ctrl+C again to detach; Esc cancels the run)");
                return Ok(true);
            }
            Input::CtrlD | Input::Gone => return Ok(false),
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
        let pending = self.lock_status().ask().cloned();
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
            "/help" => {
                let lines = self.completer.help();
                self.say(&lines.join("\n"));
            }
            "/detach" | "/quit" | "/exit" => return Ok(false),
            "/cancel" => return self.cancel(String::new()).await,
            "/steer" if !rest.is_empty() => self.message(rest, Delivery::Steer).await?,
            "/queue" if !rest.is_empty() => self.message(rest, Delivery::FollowUp).await?,
            "/steer" | "/queue" => self.say(&format!("{command} needs a message")),
            "/allow" | "/deny" | "/always" => {
                let decision = match command {
                    "/allow" => Decision::Allow,
                    "/deny" => Decision::Deny,
                    _ => Decision::AllowAlways,
                };
                // A number names a pending request (a subagent's, if it is one of theirs).
                let asks = self.lock_status().asks.clone();
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
                let mode = self.lock_status().mode;
                self.say(&format!(
                    "mode: {mode} (set with /mode default|accept-edits|auto|plan|bypass)"
                ));
            }
            "/mode" => {
                let mode: Mode = rest.parse().map_err(Failure::new)?;
                let set = Request::SetMode {
                    session: self.session.clone(),
                    mode,
                };
                request(&self.follower.client(), set).await?;
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
                request(&self.follower.client(), set).await?;
                self.say(&format!("interrupted runs resume: {rest}"));
            }
            "/compact" => {
                let compact = Request::Compact {
                    session: self.session.clone(),
                };
                request(&self.follower.client(), compact).await?;
            }
            "/clear" => self.clear().await?,
            "/model" => self.model(rest).await?,
            "/cost" => {
                let client = self.follower.client();
                let report = crate::commands::usage::usage(&client, &self.session).await?;
                let lines = crate::commands::usage::lines(&report);
                self.say(&lines.join("\n"));
            }
            "/init" => self.send(INIT_PROMPT, Delivery::FollowUp).await?,
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
                    let turns = crate::format::count(s.turns, "turn");
                    let title = s.title.as_deref().unwrap_or_default();
                    let title = crate::style::one_line(title);
                    self.say(&format!(
                        "{}  {:<17}  {turns:>9}  {title}  {}",
                        far::id(&s.id),
                        s.state.as_str(),
                        far::path(&s.cwd)
                    ));
                }
            }
            // A command file's command goes to the daemon, which expands it.
            _ if self.completer.is_file_command(command) => {
                self.send(trimmed, Delivery::FollowUp).await?
            }
            // A path such as /usr/bin/x is a message; a lone /word is a command.
            _ if command.len() > 1 && command.starts_with('/') && !command[1..].contains('/') => {
                self.say(&format!("unknown command {command}; /help lists them"));
            }
            _ => self.message(trimmed, Delivery::FollowUp).await?,
        }
        Ok(true)
    }

    pub(super) fn lock_status(&self) -> std::sync::MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A message the user typed: the files it mentions (`@path`) go along with it.
    async fn message(&mut self, text: &str, delivery: Delivery) -> Result<(), Failure> {
        let cwd = std::path::PathBuf::from(&self.cwd);
        let attached = crate::mentions::attach(text, &cwd).map_err(Failure::new)?;
        crate::images::check(&attached.images).map_err(Failure::new)?;
        let image_bytes = crate::images::total_bytes(&attached.images);
        crate::commands::check_message_size(&attached.text, image_bytes)?;
        for file in &attached.notes {
            self.say(&format!("attached {file}"));
        }
        self.send_with(&attached.text, attached.images, delivery)
            .await
    }

    /// `/clear`: a fresh session in the same directory with the same settings; the old one
    /// stays as it is.
    async fn clear(&mut self) -> Result<(), Failure> {
        let mode = self.lock_status().mode;
        let create = CreateSession {
            cwd: self.cwd.clone(),
            model: self.settings.model.clone(),
            provider: self.settings.provider.clone(),
            mode: Some(mode),
            max_turns: None,
            title: None,
            env: crate::commands::client_env(),
            worktree: self.settings.worktree,
        };
        let fresh = match request(&self.follower.client(), Request::CreateSession(create)).await? {
            Reply::SessionCreated(info) => info.id,
            other => return Err(unexpected(other)),
        };
        let old = std::mem::replace(&mut self.session, fresh.clone());
        self.follower.forget(&old);
        let info = self
            .follower
            .follow(&fresh, 0)
            .await
            .map_err(Failure::new)?;
        {
            let mut status = self.lock_status();
            let model = status.model.take();
            *status = Status {
                state: Some(info.state),
                mode: info.mode,
                model,
                ..Status::default()
            };
        }
        self.say(&format!(
            "a fresh session: {} (the last one stays: agentctl attach {})",
            far::id(&fresh),
            far::id(&old)
        ));
        self.line.refresh();
        Ok(())
    }

    /// `/model`: the models the provider serves (and the one in use); `/model NAME` uses NAME
    /// from the session's next run.
    async fn model(&mut self, name: &str) -> Result<(), Failure> {
        let client = self.follower.client();
        if !name.is_empty() {
            crate::commands::models::set_model(&client, &self.session, name).await?;
            self.settings.model = Some(name.to_string());
            self.say(&format!("model: {name} (from the next run)"));
            return Ok(());
        }
        let found = crate::commands::models::list_models(&client, &self.session).await?;
        *self
            .completer
            .models
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = found.models.clone();
        let current = found
            .current
            .as_deref()
            .map_or_else(|| "chosen by the server".to_string(), far::line);
        let provider = far::line(&found.provider);
        let mut lines = vec![format!("model: {current} ({provider})")];
        if found.models.is_empty() {
            lines.push("the provider lists no models".to_string());
        } else {
            lines.push(format!("{provider} serves:"));
            lines.extend(found.models.iter().map(|m| {
                let mark = if Some(m.as_str()) == found.current.as_deref() {
                    "*"
                } else {
                    " "
                };
                format!(" {mark} {}", crate::style::one_line(m))
            }));
            lines.push("/model NAME uses one from the next run (Tab completes)".to_string());
        }
        self.say(&lines.join("\n"));
        Ok(())
    }

    /// Sends `text` as it is.
    pub(super) async fn send(&mut self, text: &str, delivery: Delivery) -> Result<(), Failure> {
        self.send_with(text, Vec::new(), delivery).await
    }

    /// Sends `text` as it is, with `images`.
    async fn send_with(
        &mut self,
        text: &str,
        images: Vec<protocol::ImageUpload>,
        delivery: Delivery,
    ) -> Result<(), Failure> {
        let reply = request(
            &self.follower.client(),
            Request::Send {
                session: self.session.clone(),
                text: text.to_string(),
                images,
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
            let shown = crate::mentions::collapse(text).0;
            self.say(&format!("({what}: {shown})"));
        }
        Ok(())
    }

    /// Whether nothing runs or waits in the session.
    pub(super) fn idle(&self) -> bool {
        let status = self.lock_status();
        status.state != Some(SessionState::Running)
            && status.state != Some(SessionState::AwaitingApproval)
            && status.steer + status.follow_up == 0
    }
}
