//! Every user message is screened by the UserPromptSubmit hooks before it is stored
//! (docs/architecture.md#hooks): the first prompt of a run, a follow-up queued while one goes, a
//! steer, a subagent's prompt. A refused message never enters the history; what the hooks add is
//! kept with it. The hooks run off the actor, one message at a time in the order they came.

use std::path::PathBuf;
use std::sync::Arc;

use kameo::prelude::*;
use protocol::{Delivery, ErrorCode, ErrorInfo, Event, Mode, RunId, RunOptions, SessionId};
use tokio_util::sync::CancellationToken;

use super::SessionActor;
use crate::hooks::chain::{Chain, HookOutcome, run_chain};
use crate::hooks::{Hook, HookEvent, hooks_for};
use crate::session::queue::Prompt;

/// What screening one message needs, taken from the actor.
pub(super) struct Screen {
    hooks: Vec<Hook>,
    session: SessionId,
    transcript: PathBuf,
    mode: Mode,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    order: Arc<tokio::sync::Mutex<()>>,
}

impl Screen {
    /// Runs the hooks on `text`: what they said, and the events to show. Messages are screened
    /// one at a time: the guard is held until the message is stored.
    pub(super) async fn run(
        self,
        text: &str,
    ) -> (HookOutcome, Vec<Event>, tokio::sync::OwnedMutexGuard<()>) {
        let guard = self.order.clone().lock_owned().await;
        let mut events = Vec::new();
        let chain = Chain {
            hooks: self.hooks,
            event: HookEvent::UserPromptSubmit,
            session: &self.session.0,
            transcript: Some(&self.transcript),
            mode: Some(self.mode),
            cwd: &self.cwd,
            env: &self.env,
            cancel: &CancellationToken::new(),
        };
        let mut fields = serde_json::Map::new();
        fields.insert("prompt".to_string(), serde_json::json!(text));
        let outcome = run_chain(chain, fields, |e| events.push(e)).await;
        (outcome, events, guard)
    }
}

impl SessionActor {
    /// The screening of a message, when UserPromptSubmit hooks are configured.
    pub(super) fn screen(&mut self) -> Option<Screen> {
        let config = self.env.config();
        let hooks: Vec<Hook> = hooks_for(&config.hooks, HookEvent::UserPromptSubmit, None)
            .cloned()
            .collect();
        if hooks.is_empty() {
            return None;
        }
        let mut env = self.workspace.command_env(&config);
        env.push(("AGENTD_SESSION_ID".to_string(), self.shown.id().0.clone()));
        Some(Screen {
            hooks,
            session: self.shown.id().clone(),
            transcript: self.write_transcript(),
            mode: self.shown.mode(),
            cwd: self.cwd().to_path_buf(),
            env,
            order: self.screening.clone(),
        })
    }

    /// Stores a message that may be stored: it steers or follows the running run, or starts a
    /// run (refused while the configuration file is broken and the daemon has no good one).
    pub(super) fn accept(
        &mut self,
        prompt: Prompt,
        delivery: Delivery,
        options: RunOptions,
        me: ActorRef<Self>,
    ) -> Result<Option<RunId>, ErrorInfo> {
        self.fits_window(&prompt.text, &options)?;
        if self.runs.is_running() {
            self.queues.push(prompt, delivery);
            self.emit_queues();
            return Ok(None);
        }
        self.start_run(prompt, delivery, options, me).map(Some)
    }
}

/// A message the hooks screened.
pub(super) struct Screened {
    pub(super) prompt: Prompt,
    pub(super) delivery: Delivery,
    pub(super) options: RunOptions,
    pub(super) outcome: HookOutcome,
    pub(super) events: Vec<Event>,
}

impl Message<Screened> for SessionActor {
    type Reply = Result<Option<RunId>, ErrorInfo>;

    async fn handle(&mut self, msg: Screened, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        for event in msg.events {
            self.emit(event);
        }
        if let Some(reason) = msg.outcome.block {
            let message = format!("a UserPromptSubmit hook refused the message: {reason}");
            self.emit(Event::Error {
                message: message.clone(),
            });
            return Err(ErrorInfo::new(ErrorCode::InvalidRequest, message));
        }
        let mut prompt = msg.prompt;
        if let Some(context) = msg.outcome.context_text() {
            prompt
                .text
                .push_str(&format!("\n\n<hook-context>\n{context}\n</hook-context>"));
        }
        let me = ctx.actor_ref().clone();
        self.accept(prompt, msg.delivery, msg.options, me)
    }
}
