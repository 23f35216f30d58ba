//! One model call: the request with retries, text and reasoning streamed to the views, text
//! that may be tool calls written as text held back until the reply is whole, a reply that
//! loops cut, and the reply to keep settled.

use std::sync::Arc;

use protocol::{Event, ModelStopReason, TokenUsage};

use super::{Run, TurnInput, repetition, text_calls};
use crate::conversation::AssistantReply;
use crate::provider::retry::{self, Retry};
use crate::provider::{ModelRequest, Provider, ProviderError, StreamDelta};

impl Run {
    /// The reply to keep: tool calls written as text become calls (said once per session);
    /// held text that was not calls is shown; a loop is reported.
    pub(super) fn settle(&mut self, turn: ModelTurn) -> AssistantReply {
        let ModelTurn {
            reply,
            held,
            looped,
        } = turn;
        if looped {
            self.guards.looped = true;
            self.emit(Event::Health {
                kind: protocol::HealthKind::RepeatedText,
                detail: "the reply repeated the same text over and over; the stream was cut and the text kept once".to_string(),
            });
            return reply;
        }
        let recovered = self
            .setup
            .choice
            .text_tool_calls
            .then(|| text_calls::recover(&reply, &self.harness.specs))
            .flatten();
        match recovered {
            Some(recovered) => {
                self.emit(Event::Notice {
                    text: "the model wrote its tool calls as text; they were read as tool calls (text_tool_calls = \"off\" in the provider's config turns this off)".to_string(),
                });
                recovered
            }
            None => {
                if let Some(text) = held {
                    self.emit(Event::TextDelta { text });
                }
                reply
            }
        }
    }

    /// One model call with retries; text and reasoning stream to the clients, each retry is
    /// announced. Text that may be tool calls written as text is held back until the reply is
    /// whole; a reply that loops is cut.
    pub(super) async fn call_model(
        &self,
        provider: &Provider,
        model: &str,
        input: &TurnInput,
    ) -> Result<ModelTurn, ProviderError> {
        let system = match self.harness.toolset.prompt() {
            Some(servers) => format!("{}\n\n{servers}", input.system),
            None => input.system.clone(),
        };
        let images = match &self.setup.place.images {
            Ok(_) if self.guards.images_refused => crate::images::ImageData::none(),
            Ok(store) => {
                let wanted = crate::images::images_of(&input.messages);
                store
                    .load(crate::images::newest_within_budget(wanted))
                    .await
            }
            Err(_) => crate::images::ImageData::none(),
        };
        let request = ModelRequest {
            model,
            system: &system,
            messages: &input.messages,
            images: &images,
            tools: &self.harness.specs,
            max_tokens: self.setup.choice.max_tokens,
            one_call: self.harness.small,
        };
        let gate = Arc::new(std::sync::Mutex::new(
            if self.setup.choice.text_tool_calls {
                text_calls::TextGate::default()
            } else {
                text_calls::TextGate::open()
            },
        ));
        let guard = Arc::new(std::sync::Mutex::new(repetition::RepetitionGuard::default()));
        let stream_cancel = self.cancel().child_token();
        let (session, run) = (self.setup.session.clone(), self.setup.run);
        let (on_gate, on_guard, on_cut) = (gate.clone(), guard.clone(), stream_cancel.clone());
        let mut on_delta = move |delta: StreamDelta| {
            let event = match delta {
                StreamDelta::Text(text) => {
                    if lock(&on_guard).push(&text) {
                        on_cut.cancel();
                        return;
                    }
                    match lock(&on_gate).pass(text) {
                        Some(text) => Event::TextDelta { text },
                        None => return,
                    }
                }
                StreamDelta::Thinking(text) => Event::ThinkingDelta { text },
            };
            session.emit(run, event);
        };
        let (session, run) = (self.setup.session.clone(), self.setup.run);
        let (retry_gate, retry_guard) = (gate.clone(), guard.clone());
        let fresh_gate = self.setup.choice.text_tool_calls;
        let mut on_retry = move |retry: &Retry| {
            // A new attempt streams its text from the start.
            *lock(&retry_gate) = if fresh_gate {
                text_calls::TextGate::default()
            } else {
                text_calls::TextGate::open()
            };
            *lock(&retry_guard) = repetition::RepetitionGuard::default();
            let event = Event::Retrying {
                attempt: retry.attempt,
                wait_ms: retry.wait.as_millis() as u64,
                reason: retry.reason.clone(),
            };
            session.emit(run, event);
        };
        let streamed = retry::stream(
            provider,
            request,
            &mut on_delta,
            &stream_cancel,
            self.setup.config.retry_policy(),
            &mut on_retry,
        )
        .await;
        let looped = lock(&guard).tripped();
        let held = lock(&gate).rest();
        match streamed {
            Ok(reply) => Ok(ModelTurn {
                reply,
                held,
                looped: false,
            }),
            // Cut because it looped: what came before is kept once.
            Err(ProviderError::Cancelled) if looped && !self.cancel().is_cancelled() => {
                Ok(ModelTurn {
                    reply: AssistantReply {
                        content: vec![crate::conversation::Block::Text {
                            text: lock(&guard).kept(),
                        }],
                        stop_reason: ModelStopReason::EndTurn,
                        usage: TokenUsage::default(),
                    },
                    held: None,
                    looped: true,
                })
            }
            Err(err) => Err(err),
        }
    }
}

/// A model reply, with the text held back from the views while it might have been calls, and
/// whether the reply was cut for looping.
pub(super) struct ModelTurn {
    pub(super) reply: AssistantReply,
    pub(super) held: Option<String>,
    pub(super) looped: bool,
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
