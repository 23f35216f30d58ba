//! A user message arriving: checked (not empty, a command file's `/NAME` expanded, not larger
//! than the model's window), screened by the hooks that see prompts, then queued behind the
//! running run or starting one.

use kameo::prelude::*;
use protocol::{Delivery, ErrorCode, ErrorInfo, RunId, RunOptions};

use super::{FAULT_ENV, FAULT_MESSAGE, SessionActor, screening};
use crate::session::queue::Prompt;

/// A user message: it steers or follows the running run, or starts a run.
pub(crate) struct SendMessage {
    /// The message.
    pub(crate) text: String,
    /// Its images, stored already.
    pub(crate) images: Vec<protocol::ImageRef>,
    /// Where it goes while a run is going.
    pub(crate) delivery: Delivery,
    /// Options for the run it may start.
    pub(crate) options: RunOptions,
}

impl Message<SendMessage> for SessionActor {
    /// The run it started, if it started one.
    type Reply = DelegatedReply<Result<Option<RunId>, ErrorInfo>>;

    async fn handle(
        &mut self,
        msg: SendMessage,
        ctx: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        if msg.text == FAULT_MESSAGE && std::env::var_os(FAULT_ENV).is_some() {
            panic!("fault injected by a test");
        }
        let text = match self.expanded(msg.text) {
            Ok(text) => text,
            Err(err) => return ctx.reply(Err(err)),
        };
        let me = ctx.actor_ref().clone();
        // UserPromptSubmit hooks see the message before it is stored.
        if let Some(screen) = self.screen() {
            let (delivery, options) = (msg.delivery, msg.options);
            return ctx.spawn(async move {
                let (outcome, events, _in_order) = screen.run(&text).await;
                let screened = screening::Screened {
                    prompt: Prompt {
                        text,
                        images: msg.images,
                    },
                    delivery,
                    options,
                    outcome,
                    events,
                };
                match me.ask(screened).await {
                    Ok(started) => Ok(started),
                    Err(SendError::HandlerError(err)) => Err(err),
                    Err(err) => Err(ErrorInfo::new(ErrorCode::Internal, err.to_string())),
                }
            });
        }
        let prompt = Prompt {
            text,
            images: msg.images,
        };
        let started = self.accept(prompt, msg.delivery, msg.options, me);
        ctx.reply(started)
    }
}

impl SessionActor {
    /// A message as it is stored: not empty, and `/NAME ARGS` of a command file expanded (for
    /// every client alike).
    fn expanded(&self, text: String) -> Result<String, ErrorInfo> {
        if text.trim().is_empty() {
            return Err(ErrorInfo::new(
                ErrorCode::InvalidRequest,
                "the message is empty",
            ));
        }
        if !text.starts_with('/') {
            return Ok(text);
        }
        let dirs = crate::commands::directories(self.cwd(), &self.env.paths.config_dir);
        match crate::commands::expand(&text, &dirs) {
            Some(Ok(expanded)) => Ok(expanded),
            Some(Err(too_big)) => Err(ErrorInfo::new(ErrorCode::InvalidRequest, too_big)),
            None => Ok(text),
        }
    }
}
