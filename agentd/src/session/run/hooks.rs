//! Running a session's hooks from the loop (docs/architecture.md#hooks): the tool events around
//! each call, with what they change of its arguments, its permission question and its result.

use serde_json::{Map, Value, json};

use super::Run;
pub(super) use crate::hooks::chain::HookOutcome;
use crate::hooks::chain::{Chain, run_chain};
use crate::hooks::output::Permission;
use crate::hooks::{HookEvent, hooks_for};

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
        fields: Map<String, Value>,
    ) -> HookOutcome {
        let hooks: Vec<_> = hooks_for(&self.setup.config.hooks, event, tool)
            .cloned()
            .collect();
        if hooks.is_empty() {
            return HookOutcome::default();
        }
        let context = self.setup.session.hook_context().await.ok();
        let mut env = self.setup.place.env().as_ref().clone();
        env.push((
            "AGENTD_SESSION_ID".to_string(),
            self.setup.place.id().0.clone(),
        ));
        let chain = Chain {
            hooks,
            event,
            session: &self.setup.place.id().0,
            transcript: context.as_ref().map(|c| c.transcript.as_path()),
            mode: context.as_ref().map(|c| c.mode),
            cwd: self.setup.place.cwd(),
            env: &env,
            cancel: self.cancel(),
        };
        run_chain(chain, fields, |event| self.emit(event)).await
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
