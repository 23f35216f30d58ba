//! Running a session's hooks from the loop (SPEC §15): every hook of an event in configuration
//! order, one after another, each told what the one before changed (`updatedInput`); each run
//! is a `HookRan` event; the first hook that blocks decides.

use std::time::Duration;

use protocol::Event;
use serde_json::{Map, Value, json};

use super::Run;
use crate::hooks::output::{Permission, Verdict, verdict};
use crate::hooks::{HookEvent, hooks_for, process};
use crate::session::actor::HookContext;

/// What the hooks of one event said, together.
#[derive(Debug, Default)]
pub(super) struct HookOutcome {
    /// The first block, with its reason.
    pub(super) block: Option<String>,
    /// The strictest answer to the permission question (deny, then ask, then allow).
    pub(super) permission: Option<(Permission, String)>,
    /// The tool's arguments as the last hook left them, if a hook changed them.
    pub(super) updated_input: Option<Value>,
    /// What they add to what the model sees.
    pub(super) context: Vec<String>,
}

impl HookOutcome {
    /// The added context as one text, if there is any.
    pub(super) fn context_text(&self) -> Option<String> {
        (!self.context.is_empty()).then(|| self.context.join("\n"))
    }
}

/// How strict a permission answer is.
fn strictness(permission: Permission) -> u8 {
    match permission {
        Permission::Allow => 0,
        Permission::Ask => 1,
        Permission::Deny => 2,
    }
}

impl Run {
    /// Whether `event` has hooks for `tool`.
    pub(super) fn has_hooks(&self, event: HookEvent, tool: Option<&str>) -> bool {
        hooks_for(&self.setup.config.hooks, event, tool)
            .next()
            .is_some()
    }

    /// Runs the hooks of `event` (for `tool`) with `fields` added to the common input.
    pub(super) async fn run_hooks(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        mut fields: Map<String, Value>,
    ) -> HookOutcome {
        let mut outcome = HookOutcome::default();
        let hooks: Vec<_> = hooks_for(&self.setup.config.hooks, event, tool)
            .cloned()
            .collect();
        if hooks.is_empty() {
            return outcome;
        }
        let context = self.setup.session.ask(HookContext).await.ok();
        let mut env = self.setup.env.as_ref().clone();
        env.push(("AGENTD_SESSION_ID".to_string(), self.setup.id.0.clone()));
        for hook in hooks {
            let mut input = json!({
                "session_id": self.setup.id.0,
                "transcript_path": context.as_ref().map(|c| c.transcript.display().to_string()),
                "cwd": self.setup.cwd.display().to_string(),
                "permission_mode": context.as_ref().map(|c| c.mode.as_str()),
                "hook_event_name": event.as_str(),
            });
            if let Some(object) = input.as_object_mut() {
                object.extend(fields.clone());
            }
            let bytes = serde_json::to_vec(&input).unwrap_or_default();
            let ran = process::run(
                &hook.command,
                &bytes,
                &self.setup.cwd,
                &env,
                Duration::from_secs(hook.timeout_secs.max(1)),
                self.cancel(),
            )
            .await;
            let said: Verdict = verdict(&ran, hook.on_error);
            self.emit(Event::HookRan {
                event: event.as_str().to_string(),
                command: hook.command.clone(),
                exit: ran.exit,
                duration_ms: ran.duration.as_millis() as u64,
                decision: said.label(),
            });
            if let Some(message) = &said.message {
                self.emit(Event::Notice {
                    text: format!("hook {event}: {message}"),
                });
            }
            if let Some(failed) = &said.failed {
                self.emit(Event::Error {
                    message: format!(
                        "hook {event} `{}` {failed}; going on without it",
                        hook.command
                    ),
                });
            }
            outcome.context.extend(said.context.clone());
            if let Some(updated) = said.updated_input {
                fields.insert("tool_input".to_string(), updated.clone());
                outcome.updated_input = Some(updated);
            }
            if let Some((permission, reason)) = said.permission {
                let stricter = outcome
                    .permission
                    .as_ref()
                    .is_none_or(|(p, _)| strictness(permission) > strictness(*p));
                if stricter {
                    outcome.permission = Some((permission, reason));
                }
            }
            if said.block.is_some() {
                outcome.block = said.block;
                break;
            }
        }
        outcome
    }
}

/// The input fields of a tool event.
pub(super) fn tool_fields(name: &str, id: &str, args: &Value) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("tool_name".to_string(), json!(name));
    fields.insert("tool_input".to_string(), args.clone());
    fields.insert("tool_use_id".to_string(), json!(id));
    fields
}

/// What a call's PreToolUse hooks left for the rest of it.
#[derive(Debug, Default)]
pub(super) struct Hooked {
    /// The arguments the call ran with, once they were read.
    pub(super) args: Option<Value>,
    /// The hooks' answer to the permission question (a deny rule still wins over `allow`).
    pub(super) permission: Option<Permission>,
    /// What they add to the call's result.
    pub(super) context: Option<String>,
}

impl Run {
    /// Runs the PreToolUse hooks of `call`: its arguments as they leave them, or the refusal.
    pub(super) async fn before_tool(
        &self,
        call: &crate::conversation::ToolCall,
        args: Value,
        hooked: &mut Hooked,
    ) -> Result<Value, crate::tools::ToolOutput> {
        hooked.args = Some(args.clone());
        if !self.has_hooks(HookEvent::PreToolUse, Some(&call.name)) {
            return Ok(args);
        }
        let fields = tool_fields(&call.name, &call.id, &args);
        let outcome = self
            .run_hooks(HookEvent::PreToolUse, Some(&call.name), fields)
            .await;
        hooked.context = outcome.context_text();
        if let Some(reason) = outcome.block {
            return Err(crate::tools::ToolOutput::error(format!(
                "refused by a PreToolUse hook: {reason}"
            )));
        }
        if let Some((Permission::Deny, reason)) = &outcome.permission {
            return Err(crate::tools::ToolOutput::error(format!(
                "denied by a PreToolUse hook{}",
                if reason.is_empty() {
                    String::new()
                } else {
                    format!(": {reason}")
                }
            )));
        }
        hooked.permission = outcome.permission.map(|(p, _)| p);
        let args = outcome.updated_input.unwrap_or(args);
        hooked.args = Some(args.clone());
        Ok(args)
    }

    /// Runs the PostToolUse (or PostToolUseFailure) hooks of `call`, whose result is `output`:
    /// what they say is added to the result the model reads.
    pub(super) async fn after_tool(
        &self,
        call: &crate::conversation::ToolCall,
        hooked: Hooked,
        mut output: crate::tools::ToolOutput,
    ) -> crate::tools::ToolOutput {
        let mut notes: Vec<String> = hooked.context.into_iter().collect();
        let event = if output.is_error {
            HookEvent::PostToolUseFailure
        } else {
            HookEvent::PostToolUse
        };
        if let Some(args) = hooked.args
            && self.has_hooks(event, Some(&call.name))
        {
            let mut fields = tool_fields(&call.name, &call.id, &args);
            fields.insert("tool_response".to_string(), json!(output.output));
            if output.is_error {
                fields.insert("error".to_string(), json!(output.output));
            }
            let outcome = self.run_hooks(event, Some(&call.name), fields).await;
            if let Some(reason) = outcome.block {
                notes.push(format!("{event} hook: {reason}"));
            }
            notes.extend(outcome.context);
        }
        for note in notes {
            output.output.push_str(&format!("\n\n[hook] {note}"));
        }
        output
    }
}
