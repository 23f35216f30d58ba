//! One event's hooks run as a chain (docs/architecture.md#hooks): in configuration order, one after
//! another, each told what the one before changed (`updatedInput`); each run is a `HookRan` event;
//! the first hook that blocks decides.

use std::path::Path;
use std::time::Duration;

use protocol::{Event, Mode};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::output::{Permission, Verdict, verdict};
use super::{Hook, HookEvent, process};

/// What the hooks of one event said, together.
#[derive(Debug, Default)]
pub(crate) struct HookOutcome {
    /// The first block, with its reason.
    pub(crate) block: Option<String>,
    /// The strictest answer to the permission question (deny, then ask, then allow).
    pub(crate) permission: Option<(Permission, String)>,
    /// The tool's arguments as the last hook left them, if a hook changed them.
    pub(crate) updated_input: Option<Value>,
    /// What they add to what the model sees.
    pub(crate) context: Vec<String>,
}

impl HookOutcome {
    /// The added context as one text, if there is any.
    pub(crate) fn context_text(&self) -> Option<String> {
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

/// What a chain of hooks runs with.
pub(crate) struct Chain<'a> {
    /// The hooks, in order.
    pub(crate) hooks: Vec<Hook>,
    /// Their event.
    pub(crate) event: HookEvent,
    /// The session's id.
    pub(crate) session: &'a str,
    /// Its transcript, when one was written.
    pub(crate) transcript: Option<&'a Path>,
    /// Its mode.
    pub(crate) mode: Option<Mode>,
    /// Its directory: where the hooks run.
    pub(crate) cwd: &'a Path,
    /// Their environment.
    pub(crate) env: &'a [(String, String)],
    /// Kills a hook under way.
    pub(crate) cancel: &'a CancellationToken,
}

/// Runs `chain` with `fields` added to the common input; `on_event` hears each `HookRan`
/// (and what the hooks say to the user) as it happens.
pub(crate) async fn run_chain(
    chain: Chain<'_>,
    mut fields: Map<String, Value>,
    mut on_event: impl FnMut(Event),
) -> HookOutcome {
    let mut outcome = HookOutcome::default();
    let event = chain.event;
    for hook in &chain.hooks {
        let mut input = json!({
            "session_id": chain.session,
            "transcript_path": chain.transcript.map(|p| p.display().to_string()),
            "cwd": chain.cwd.display().to_string(),
            "permission_mode": chain.mode.map(|m| m.as_str()),
            "hook_event_name": event.as_str(),
        });
        if let Some(object) = input.as_object_mut() {
            object.extend(fields.clone());
        }
        let bytes = serde_json::to_vec(&input).unwrap_or_default();
        let ran = process::run(
            &hook.command,
            &bytes,
            chain.cwd,
            chain.env,
            Duration::from_secs(hook.timeout_secs.max(1)),
            chain.cancel,
        )
        .await;
        let said: Verdict = verdict(&ran, hook.on_error);
        on_event(Event::HookRan {
            event: event.as_str().to_string(),
            command: hook.command.clone(),
            exit: ran.exit,
            duration_ms: ran.duration.as_millis() as u64,
            decision: said.label(),
        });
        if let Some(message) = &said.message {
            on_event(Event::Notice {
                text: format!("hook {event}: {message}"),
            });
        }
        if let Some(failed) = &said.failed {
            on_event(Event::Error {
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
