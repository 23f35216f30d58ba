//! The hooks of a run's own moments (docs/architecture.md#hooks): `SessionStart` before a
//! session's first model call (UserPromptSubmit hooks screen each message before it is stored,
//! in the session), `Stop` (`SubagentStop` in a subagent) when the run would complete,
//! `PreCompact` before a summary, and `PermissionRequest` and `Notification` when a call must
//! ask.

use protocol::{Decision, Delivery, Event, PermissionRequestId};
use serde_json::{Map, Value, json};

use super::hooks::tool_fields;
use super::{Answer, Gone, Run};
use crate::conversation::{Message, ToolCall};
use crate::hooks::HookEvent;
use crate::hooks::output::Permission;

/// Stop hooks that block this many times in a row end the run anyway.
pub(crate) const MAX_STOP_BLOCKS: u32 = 3;

fn fields(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

impl Run {
    /// Runs the SessionStart hooks before a session's first run (not a resumed one).
    pub(super) async fn start_hooks(&self) -> Result<(), Gone> {
        if self.setup.start.prompt.is_none() {
            return Ok(());
        }
        if self.setup.run.0 == 1 && self.has_hooks(HookEvent::SessionStart, None) {
            let input = fields(&[("source", json!("startup"))]);
            let outcome = self.run_hooks(HookEvent::SessionStart, None, input).await;
            if let Some(context) = outcome.context_text() {
                self.add_context(context).await?;
            }
        }
        Ok(())
    }

    /// Text from hooks that the model sees from now on.
    async fn add_context(&self, text: String) -> Result<(), Gone> {
        let message = Message::Notice {
            text: format!("<hook-context>\n{text}\n</hook-context>"),
        };
        self.push(message, None).await
    }

    /// Runs the Stop (or SubagentStop) hooks of a run that would complete: `true` when one
    /// blocked and the run goes on with its reason.
    pub(super) async fn stop_hooks(&mut self) -> Result<bool, Gone> {
        let event = if self.setup.nesting.subagent {
            HookEvent::SubagentStop
        } else {
            HookEvent::Stop
        };
        if !self.has_hooks(event, None) {
            return Ok(false);
        }
        let input = fields(&[("stop_hook_active", json!(self.guards.stop_blocks > 0))]);
        let outcome = self.run_hooks(event, None, input).await;
        let Some(reason) = outcome.block else {
            return Ok(false);
        };
        self.guards.stop_blocks += 1;
        if self.guards.stop_blocks >= MAX_STOP_BLOCKS {
            self.emit(Event::Notice {
                text: format!(
                    "the {event} hook blocked {MAX_STOP_BLOCKS} times in a row; the run ends anyway"
                ),
            });
            return Ok(false);
        }
        let text = format!("{event} hook: {reason}");
        let event = Event::UserMessage {
            text: text.clone(),
            delivery: Delivery::FollowUp,
            images: Vec::new(),
        };
        let message = Message::User {
            text,
            delivery: Delivery::FollowUp,
            images: Vec::new(),
        };
        self.push(message, Some(event)).await?;
        Ok(true)
    }

    /// Runs the PreCompact hooks (`trigger` is `auto` or `manual`).
    pub(super) async fn pre_compact_hooks(&self, trigger: &str) {
        if self.has_hooks(HookEvent::PreCompact, None) {
            let input = fields(&[
                ("trigger", json!(trigger)),
                ("custom_instructions", json!("")),
            ]);
            self.run_hooks(HookEvent::PreCompact, None, input).await;
        }
    }

    /// A call must ask (request `request`; `plain` when only the mode asks): the Notification
    /// hooks hear of it, and the PermissionRequest hooks may answer it.
    pub(super) async fn asking_hooks(
        &self,
        call: &ToolCall,
        args: &Value,
        request: PermissionRequestId,
        plain: bool,
    ) -> Result<(), Gone> {
        if self.has_hooks(HookEvent::Notification, None) {
            let message = format!("agentd needs your permission to use {}", call.name);
            let input = fields(&[("message", json!(message))]);
            self.run_hooks(HookEvent::Notification, None, input).await;
        }
        if !self.has_hooks(HookEvent::PermissionRequest, Some(&call.name)) {
            return Ok(());
        }
        let input = tool_fields(&call.name, &call.id, args);
        let outcome = self
            .run_hooks(HookEvent::PermissionRequest, Some(&call.name), input)
            .await;
        // A hook may refuse any request, but allow only the mode's question: what a rule or a
        // protected path asks is for a person to answer.
        let decision = match (outcome.block, outcome.permission) {
            (Some(_), _) | (None, Some((Permission::Deny, _))) => Decision::Deny,
            (None, Some((Permission::Allow, _))) if plain => Decision::Allow,
            _ => return Ok(()),
        };
        let answer = Answer {
            request,
            decision,
            by_client: "a PermissionRequest hook".to_string(),
        };
        // Someone may have answered first: then the hook's answer is not needed.
        let _ = self.setup.session.answer(answer).await;
        Ok(())
    }
}
