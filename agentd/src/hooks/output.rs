//! What a hook's run means (docs/architecture.md#hooks): exit 0 goes on (stdout read as JSON when
//! it is JSON), exit 2 blocks with stderr as the reason, anything else is an error that `on_error`
//! decides. The JSON fields are Claude Code's: `continue`, `stopReason`, `systemMessage`,
//! `decision: "block"` with `reason`, and `hookSpecificOutput` with `permissionDecision`,
//! `permissionDecisionReason`, `updatedInput` and `additionalContext`.

use serde_json::Value;

use super::OnError;
use super::process::HookRun;

/// A hook's answer to a permission question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Permission {
    /// Run it without asking (a deny rule still wins).
    Allow,
    /// Refuse it.
    Deny,
    /// Ask the user even if the mode would allow it.
    Ask,
}

/// What one hook run says.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Verdict {
    /// Refuse (the call, the prompt) or, for a Stop hook, go on; with the reason the model reads.
    pub(crate) block: Option<String>,
    /// An answer to the permission question, with its reason.
    pub(crate) permission: Option<(Permission, String)>,
    /// New arguments for the tool call.
    pub(crate) updated_input: Option<Value>,
    /// Text added to what the model sees.
    pub(crate) context: Option<String>,
    /// A message for the user.
    pub(crate) message: Option<String>,
    /// The hook failed (and `on_error` is `ignore`): why, for the views.
    pub(crate) failed: Option<String>,
}

impl Verdict {
    /// The one word the views show for it.
    pub(crate) fn label(&self) -> Option<String> {
        if self.block.is_some() {
            return Some("block".to_string());
        }
        if let Some((permission, _)) = &self.permission {
            return Some(
                match permission {
                    Permission::Allow => "allow",
                    Permission::Deny => "deny",
                    Permission::Ask => "ask",
                }
                .to_string(),
            );
        }
        if self.failed.is_some() {
            return Some("error".to_string());
        }
        self.updated_input
            .as_ref()
            .map(|_| "updated input".to_string())
    }
}

/// Reads `run` of a hook whose failures mean `on_error`.
pub(crate) fn verdict(run: &HookRun, on_error: OnError) -> Verdict {
    let failure = match (&run.failure, run.exit) {
        (Some(failure), _) => Some(failure.clone()),
        (None, Some(0 | 2)) => None,
        (None, Some(code)) => Some(format!(
            "exited with {code}{}",
            first_line(&run.stderr)
                .map(|l| format!(": {l}"))
                .unwrap_or_default()
        )),
        (None, None) => Some("was killed by a signal".to_string()),
    };
    if let Some(failure) = failure {
        return match on_error {
            OnError::Block => Verdict {
                block: Some(format!(
                    "a hook failed ({failure}), and its on_error is block"
                )),
                ..Verdict::default()
            },
            OnError::Ignore => Verdict {
                failed: Some(failure),
                ..Verdict::default()
            },
        };
    }
    if run.exit == Some(2) {
        let reason = run.stderr.trim();
        return Verdict {
            block: Some(if reason.is_empty() {
                "refused by a hook".to_string()
            } else {
                reason.to_string()
            }),
            ..Verdict::default()
        };
    }
    let Ok(json) = serde_json::from_str::<Value>(run.stdout.trim()) else {
        return Verdict::default();
    };
    from_json(&json)
}

/// The verdict a hook's JSON output gives.
fn from_json(json: &Value) -> Verdict {
    let text = |v: &Value| v.as_str().map(str::to_string);
    let specific = &json["hookSpecificOutput"];
    let mut verdict = Verdict {
        message: text(&json["systemMessage"]),
        updated_input: Some(specific["updatedInput"].clone()).filter(Value::is_object),
        context: text(&specific["additionalContext"]).filter(|c| !c.trim().is_empty()),
        ..Verdict::default()
    };
    let reason = text(&json["reason"])
        .or_else(|| text(&specific["permissionDecisionReason"]))
        .unwrap_or_default();
    if json["decision"] == "block" || json["continue"] == false {
        let why = text(&json["stopReason"]).unwrap_or_else(|| reason.clone());
        verdict.block = Some(if why.is_empty() {
            "refused by a hook".to_string()
        } else {
            why
        });
    }
    // Claude Code's older spelling (`decision: approve`) is read too.
    let decision = specific["permissionDecision"]
        .as_str()
        .or(specific["decision"]["behavior"].as_str())
        .or(match json["decision"].as_str() {
            Some("approve") => Some("allow"),
            _ => None,
        });
    verdict.permission = match decision {
        Some("allow") => Some((Permission::Allow, reason)),
        Some("deny") => Some((Permission::Deny, reason)),
        Some("ask") => Some((Permission::Ask, reason)),
        _ => None,
    };
    verdict
}

fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(exit: i32, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            exit: Some(exit),
            stdout: stdout.into(),
            stderr: stderr.into(),
            ..HookRun::default()
        }
    }

    #[test]
    fn exit_codes_and_json_mean_what_claude_codes_hooks_mean() {
        assert_eq!(
            verdict(&ran(0, "not json", ""), OnError::Ignore),
            Verdict::default()
        );
        let blocked = verdict(&ran(2, "", "no rm here\n"), OnError::Ignore);
        assert_eq!(blocked.block.as_deref(), Some("no rm here"));
        let failed = verdict(&ran(1, "", "boom"), OnError::Ignore);
        assert_eq!(failed.failed.as_deref(), Some("exited with 1: boom"));
        assert!(verdict(&ran(1, "", "boom"), OnError::Block).block.is_some());
        let allow = verdict(
            &ran(
                0,
                r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"safe","updatedInput":{"command":"ls"},"additionalContext":"note"}}"#,
                "",
            ),
            OnError::Ignore,
        );
        assert_eq!(
            allow.permission,
            Some((Permission::Allow, "safe".to_string()))
        );
        assert_eq!(allow.updated_input.unwrap()["command"], "ls");
        assert_eq!(allow.context.as_deref(), Some("note"));
        let stop = verdict(
            &ran(0, r#"{"decision":"block","reason":"tests fail"}"#, ""),
            OnError::Ignore,
        );
        assert_eq!(stop.block.as_deref(), Some("tests fail"));
    }
}
