//! `[[hooks.EVENT]]` in `config.toml` (docs/architecture.md#hooks): the events, and each hook's
//! matcher, command, timeout and what a failure means. Unknown events and bad matchers are refused
//! when the file is read, with the line they are on.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// When hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum HookEvent {
    /// A session's first run starts.
    SessionStart,
    /// A user's message is about to reach the model.
    UserPromptSubmit,
    /// A tool call is about to be checked and run.
    PreToolUse,
    /// A permission request is about to be asked.
    PermissionRequest,
    /// A tool call succeeded.
    PostToolUse,
    /// A tool call failed.
    PostToolUseFailure,
    /// A run would complete.
    Stop,
    /// A subagent's run would complete.
    SubagentStop,
    /// A compaction is about to summarise the history.
    PreCompact,
    /// A session is deleted.
    SessionEnd,
    /// The user is asked something (a permission request).
    Notification,
}

impl HookEvent {
    /// Every event.
    pub(crate) const ALL: [HookEvent; 11] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::Stop,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::SessionEnd,
        HookEvent::Notification,
    ];

    /// Its name, as in the configuration and in `hook_event_name`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::Notification => "Notification",
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for HookEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        HookEvent::ALL
            .into_iter()
            .find(|e| e.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
                serde::de::Error::custom(format!(
                    "unknown hook event `{name}`; the events are {}",
                    names.join(", ")
                ))
            })
    }
}

impl Serialize for HookEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A regular expression on the tool name; compiled when the file is read.
#[derive(Debug, Clone)]
pub(crate) struct Matcher(pub regex::Regex);

impl Matcher {
    /// The pattern as written.
    pub(crate) fn pattern(&self) -> &str {
        let text = self.0.as_str();
        text.strip_prefix("^(?:")
            .and_then(|t| t.strip_suffix(")$"))
            .unwrap_or(text)
    }

    /// Whether it matches the whole of `name` (`*` and an empty matcher match every tool).
    pub(crate) fn matches(&self, name: &str) -> bool {
        self.0.is_match(name)
    }
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl<'de> Deserialize<'de> for Matcher {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let pattern = match text.trim() {
            "" | "*" => ".*".to_string(),
            other => other.to_string(),
        };
        // Claude Code's matchers name whole tools (`Edit|Write`): anchored, so `Edit` does not
        // match `NotebookEdit`.
        regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
            .size_limit(1 << 20)
            .build()
            .map(Matcher)
            .map_err(|e| {
                let first = e.to_string();
                let first = first.lines().last().unwrap_or_default().to_string();
                serde::de::Error::custom(format!(
                    "the matcher `{text}` is not a regular expression: {first}"
                ))
            })
    }
}

impl Serialize for Matcher {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.pattern())
    }
}

/// What a hook that fails (crashes, times out, exits other than 0 or 2) means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OnError {
    /// Go on as if it had not run (it is shown).
    #[default]
    Ignore,
    /// Refuse what it was asked about.
    Block,
}

/// One hook.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Hook {
    /// The tools it applies to (tool events); every tool when absent.
    #[serde(default)]
    pub(crate) matcher: Option<Matcher>,
    /// Run with `sh -c` in the session directory.
    pub(crate) command: String,
    /// Killed after this long.
    #[serde(default = "default_timeout")]
    pub(crate) timeout_secs: u64,
    /// What a failure means.
    #[serde(default)]
    pub(crate) on_error: OnError,
}

fn default_timeout() -> u64 {
    60
}

/// The hooks of each event, in configuration order.
pub(crate) type HookTable = BTreeMap<HookEvent, Vec<Hook>>;

/// The hooks of `event` for `tool` (if the event has one), in order.
pub(crate) fn hooks_for<'a>(
    table: &'a HookTable,
    event: HookEvent,
    tool: Option<&'a str>,
) -> impl Iterator<Item = &'a Hook> + 'a {
    table
        .get(&event)
        .into_iter()
        .flatten()
        .filter(move |hook| match (&hook.matcher, tool) {
            (Some(matcher), Some(tool)) => matcher.matches(tool),
            _ => true,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct File {
        hooks: HookTable,
    }

    #[test]
    fn hooks_read_in_order_and_bad_ones_name_their_line() {
        let file: File = toml::from_str(
            "[[hooks.PreToolUse]]\nmatcher = \"bash|write\"\ncommand = \"one\"\n[[hooks.PreToolUse]]\ncommand = \"two\"\non_error = \"block\"\n",
        )
        .unwrap();
        let hooks: Vec<&str> = hooks_for(&file.hooks, HookEvent::PreToolUse, Some("bash"))
            .map(|h| h.command.as_str())
            .collect();
        assert_eq!(hooks, ["one", "two"]);
        let read: Vec<&str> = hooks_for(&file.hooks, HookEvent::PreToolUse, Some("read"))
            .map(|h| h.command.as_str())
            .collect();
        assert_eq!(read, ["two"]);
        let unknown =
            toml::from_str::<File>("[[hooks.PreToolUze]]\ncommand = \"x\"\n").unwrap_err();
        assert!(
            unknown
                .message()
                .contains("unknown hook event `PreToolUze`"),
            "{unknown}"
        );
        assert!(unknown.span().is_some());
        let bad = toml::from_str::<File>("[[hooks.Stop]]\ncommand = \"x\"\n\n[[hooks.PreToolUse]]\nmatcher = \"(\"\ncommand = \"y\"\n")
            .unwrap_err();
        assert!(bad.message().contains("not a regular expression"), "{bad}");
        let span = bad.span().unwrap();
        let text = "[[hooks.Stop]]\ncommand = \"x\"\n\n[[hooks.PreToolUse]]\nmatcher = \"(\"\ncommand = \"y\"\n";
        let line = text.get(..span.start).unwrap().lines().count();
        assert_eq!(line, 5, "the span starts on the matcher's line, the 5th");
    }
}
