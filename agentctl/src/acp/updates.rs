//! How the daemon's events read in an editor: tool calls as ACP `tool_call`s (kind, title,
//! locations, raw input), their results as `tool_call_update`s (text, and a diff for edits and
//! writes), the model's plan as a `plan` update, stop reasons and modes in ACP's terms.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionMode, SessionModeId, SessionModeState, SessionUpdate, StopReason as AcpStop, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind,
};
use protocol::{Mode, PlanItem, PlanStatus, StopReason, ToolCallInfo};
use serde_json::Value;

/// The modes an editor may switch to (`bypass` is only for the command line).
pub const MODES: [Mode; 4] = [Mode::Default, Mode::AcceptEdits, Mode::Auto, Mode::Plan];

/// The modes, with `current` selected.
pub fn modes(current: Mode) -> SessionModeState {
    let available = MODES
        .iter()
        .map(|mode| {
            let (name, description) = match mode {
                Mode::Default => ("Default", "Reads run; file changes and commands ask"),
                Mode::AcceptEdits => (
                    "Accept edits",
                    "File changes inside the project run without asking",
                ),
                Mode::Plan => ("Plan", "Explore and write a plan; nothing else changes"),
                Mode::Auto => (
                    "Auto",
                    "Edits inside the project and commands in a kernel sandbox run without asking",
                ),
                _ => (mode.as_str(), ""),
            };
            SessionMode::new(mode.as_str().to_string(), name).description(description.to_string())
        })
        .collect();
    SessionModeState::new(current.as_str().to_string(), available)
}

/// The mode an editor's mode id names.
pub fn mode(id: &SessionModeId) -> Option<Mode> {
    MODES.into_iter().find(|m| m.as_str() == &*id.0)
}

/// The line an editor shows after a run that was asked for a change and changed nothing.
pub fn nothing_changed() -> SessionUpdate {
    text_chunk(
        SessionUpdate::AgentMessageChunk,
        "\n\n(Nothing was changed: the request asked for a change, but no file was changed and no command was run.)",
    )
}

/// A chunk of text as an update of `kind`.
pub fn text_chunk(kind: fn(ContentChunk) -> SessionUpdate, text: &str) -> SessionUpdate {
    kind(ContentChunk::new(ContentBlock::from(text.to_string())))
}

/// A line of progress of a call under way (a subagent's activity), as its update.
pub fn progress(call_id: &str, text: &str) -> SessionUpdate {
    let fields = ToolCallUpdateFields::new()
        .status(ToolCallStatus::InProgress)
        .content(vec![ToolCallContent::from(text.to_string())]);
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.to_string(), fields))
}

/// The model's plan as ACP's `plan` update: the whole plan, which replaces the one the editor
/// shows (docs/architecture.md#the-plan). The model gives its steps no priority: each is
/// `medium`.
pub fn plan(items: &[PlanItem]) -> SessionUpdate {
    let entries = items
        .iter()
        .map(|item| {
            let status = match item.status {
                PlanStatus::Pending => PlanEntryStatus::Pending,
                PlanStatus::InProgress => PlanEntryStatus::InProgress,
                PlanStatus::Done => PlanEntryStatus::Completed,
            };
            PlanEntry::new(item.text.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

/// The kind of a tool, as editors group them.
fn kind(tool: &str) -> ToolKind {
    match tool {
        "read" => ToolKind::Read,
        "write" | "edit" => ToolKind::Edit,
        "bash" => ToolKind::Execute,
        "grep" | "glob" | "web_search" | "code" => ToolKind::Search,
        "fetch" => ToolKind::Fetch,
        "task" | "todo" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// A call's arguments as JSON (`null` when they do not parse).
pub fn args(call: &ToolCallInfo) -> Value {
    serde_json::from_str(&call.args).unwrap_or(Value::Null)
}

/// The files a call touches, resolved against the session directory, with the line it starts
/// at when it says.
fn locations(tool: &str, args: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    let path = match tool {
        "read" | "write" | "edit" | "grep" | "glob" | "code" => args["path"].as_str(),
        _ => None,
    };
    let Some(path) = path else {
        return Vec::new();
    };
    let resolved = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        cwd.join(path)
    };
    let mut location = ToolCallLocation::new(resolved);
    if tool == "read"
        && let Some(offset) = args["offset"].as_u64()
    {
        location = location.line(u32::try_from(offset).unwrap_or(u32::MAX));
    }
    vec![location]
}

/// A call as it starts.
pub fn tool_call(call: &ToolCallInfo, cwd: &Path) -> SessionUpdate {
    let args = args(call);
    SessionUpdate::ToolCall(
        ToolCall::new(
            call.id.clone(),
            crate::view::tool_summary(&call.name, &call.args),
        )
        .kind(kind(&call.name))
        .status(ToolCallStatus::InProgress)
        .locations(locations(&call.name, &args, cwd))
        .raw_input(args),
    )
}

/// A call's result; `call` is the call when it is known (for the diff of an edit or a write).
pub fn tool_result(
    id: &str,
    is_error: bool,
    output: &str,
    call: Option<&ToolCallInfo>,
    cwd: &Path,
) -> SessionUpdate {
    let mut content = vec![ToolCallContent::from(output.to_string())];
    if let Some(call) = call
        && !is_error
    {
        let args = args(call);
        let path = |key: &str| args[key].as_str().map(|p| cwd.join(p));
        let diff = match (call.name.as_str(), path("path")) {
            ("edit", Some(path)) => Some(
                Diff::new(path, args["new_string"].as_str().unwrap_or("").to_string())
                    .old_text(args["old_string"].as_str().unwrap_or("").to_string()),
            ),
            ("write", Some(path)) => Some(Diff::new(
                path,
                args["content"].as_str().unwrap_or("").to_string(),
            )),
            _ => None,
        };
        content.extend(diff.map(ToolCallContent::Diff));
    }
    let status = if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        id.to_string(),
        ToolCallUpdateFields::new()
            .status(status)
            .content(content)
            .raw_output(Value::String(output.to_string())),
    ))
}

/// How a finished run answers the prompts waiting on it: a stop reason, or an error message.
pub fn stop_reason(
    stop: StopReason,
    truncated: bool,
    error: Option<&str>,
) -> Result<AcpStop, String> {
    match stop {
        StopReason::Completed if truncated => Ok(AcpStop::MaxTokens),
        StopReason::Completed => Ok(AcpStop::EndTurn),
        StopReason::Aborted => Ok(AcpStop::Cancelled),
        StopReason::MaxTurns => Ok(AcpStop::MaxTurnRequests),
        StopReason::Error | StopReason::Health => {
            Err(error.unwrap_or("the run failed").to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Value) -> ToolCallInfo {
        ToolCallInfo {
            id: "c1".into(),
            name: name.into(),
            args: args.to_string(),
        }
    }

    #[test]
    fn calls_get_a_kind_a_title_and_locations() {
        let update = tool_call(
            &call(
                "read",
                serde_json::json!({"path": "src/a.rs", "offset": 10}),
            ),
            Path::new("/w"),
        );
        let json = serde_json::to_value(&update).unwrap();
        assert_eq!(json["kind"], "read");
        assert_eq!(json["status"], "in_progress");
        assert_eq!(json["title"], "read src/a.rs");
        assert_eq!(json["locations"][0]["path"], "/w/src/a.rs");
        assert_eq!(json["locations"][0]["line"], 10);
        let bash = serde_json::to_value(tool_call(
            &call("bash", serde_json::json!({"command": "ls"})),
            Path::new("/w"),
        ))
        .unwrap();
        assert_eq!(bash["kind"], "execute");
    }

    #[test]
    fn a_plan_is_sent_whole_with_acp_statuses() {
        let item = |text: &str, status| PlanItem {
            text: text.into(),
            status,
        };
        let update = plan(&[
            item("read", PlanStatus::Done),
            item("fix", PlanStatus::InProgress),
            item("test", PlanStatus::Pending),
        ]);
        let json = serde_json::to_value(&update).unwrap();
        assert_eq!(json["sessionUpdate"], "plan");
        assert_eq!(
            json["entries"],
            serde_json::json!([
                {"content": "read", "priority": "medium", "status": "completed"},
                {"content": "fix", "priority": "medium", "status": "in_progress"},
                {"content": "test", "priority": "medium", "status": "pending"},
            ])
        );
    }

    #[test]
    fn edits_come_with_a_diff_and_stops_map() {
        let edit = call(
            "edit",
            serde_json::json!({"path": "a.rs", "old_string": "x", "new_string": "y"}),
        );
        let json =
            serde_json::to_value(tool_result("c1", false, "ok", Some(&edit), Path::new("/w")))
                .unwrap();
        assert_eq!(json["status"], "completed");
        assert_eq!(json["content"][1]["type"], "diff");
        assert_eq!(json["content"][1]["oldText"], "x");
        assert_eq!(json["content"][1]["newText"], "y");
        assert_eq!(
            stop_reason(StopReason::Completed, true, None),
            Ok(AcpStop::MaxTokens)
        );
        assert_eq!(
            stop_reason(StopReason::Aborted, false, None),
            Ok(AcpStop::Cancelled)
        );
        assert_eq!(
            stop_reason(StopReason::Error, false, Some("no key")),
            Err("no key".to_string())
        );
    }
}
