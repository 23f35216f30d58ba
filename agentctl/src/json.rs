//! The JSON view: one object per event, with stable field names (`--json` of `run` and
//! `show`). It consumes the same events as the human view.
//!
//! Each line is a [`JsonEvent`]. Its shape is written once, as serde definitions of the
//! protocol's types (`remote`): the wire types are not serialized as JSON themselves, since
//! their serde form is bincode's (variants by Rust name, arguments as text, costs in
//! millionths), and renaming a field on the wire must not change what scripts read.

use std::fmt::{self, Display};

use agentctl::client::{Flow, View};
use protocol::{
    Decision, Delivery, Event, HealthKind, ImageRef, Mode, ModelStopReason, PermissionRequestId,
    PlanItem, QueuedMessage, ResumeReason, RunId, SessionEvent, SessionId, ShellEnd, StopReason,
    TokenUsage, ToolCallInfo,
};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// The JSON view: each event as one line on stdout.
pub struct JsonLines;

impl View for JsonLines {
    fn event(&mut self, event: &SessionEvent, _replay: bool) -> Flow {
        outln!("{}", JsonEvent(event));
        Flow::Go
    }
}

/// One event as a JSON object: the event's fields, then `type`, `seq`, `session` and
/// `time_ms`. That order is the one these lines have always had, so it is kept.
pub struct JsonEvent<'a>(
    /// The event.
    pub &'a SessionEvent,
);

impl Serialize for JsonEvent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Line<'a> {
            #[serde(flatten, with = "EventDef")]
            event: &'a Event,
            #[serde(rename = "type")]
            kind: &'static str,
            seq: u64,
            session: &'a SessionId,
            time_ms: u64,
        }
        let SessionEvent {
            session,
            seq,
            time_ms,
            event,
        } = self.0;
        Line {
            event,
            kind: event.kind(),
            seq: *seq,
            session,
            time_ms: *time_ms,
        }
        .serialize(serializer)
    }
}

impl Display for JsonEvent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every map key here is a string, so serializing cannot fail.
        let line = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&escape_obeyed(line))
    }
}

/// `line` (JSON) with the characters a terminal showing it would obey and JSON leaves as they
/// are (C1 controls, bidirectional overrides; JSON escapes those below U+0020 itself) written
/// as `\uXXXX` escapes: the same JSON to a parser, inert on a screen. They only occur inside
/// strings, where such an escape means the character.
pub(crate) fn escape_obeyed(line: String) -> String {
    if !line
        .chars()
        .any(|c| agentctl::client::far_text::obeyed(c, true))
    {
        return line;
    }
    let mut out = String::with_capacity(line.len() + 16);
    for c in line.chars() {
        match agentctl::client::far_text::obeyed(c, true) {
            true => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            false => out.push(c),
        }
    }
    out
}

/// Token counts with stable field names.
#[derive(Serialize)]
pub struct Tokens<'a>(
    /// The counts.
    #[serde(with = "TokensDef")]
    pub &'a TokenUsage,
);

#[derive(Serialize)]
#[serde(remote = "TokenUsage")]
struct TokensDef {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

/// A tool call, its arguments as JSON.
#[derive(Serialize)]
#[serde(remote = "ToolCallInfo")]
struct CallDef {
    id: String,
    name: String,
    #[serde(serialize_with = "args_json")]
    args: String,
}

/// A queued message a run handed back.
#[derive(Serialize)]
#[serde(remote = "QueuedMessage")]
struct QueuedDef {
    text: String,
    #[serde(serialize_with = "name")]
    delivery: Delivery,
    #[serde(serialize_with = "image_refs", skip_serializing_if = "Vec::is_empty")]
    images: Vec<ImageRef>,
}

/// The fields of each kind of event, in the order they are printed. Untagged: the name comes
/// after them, in [`JsonEvent`]. Ids are printed as their numbers or text (serde's newtypes).
#[derive(Serialize)]
#[serde(remote = "Event", untagged)]
enum EventDef {
    RunStarted {
        run: RunId,
        #[serde(serialize_with = "name")]
        trigger: Delivery,
        max_turns: u32,
        model: String,
        provider: String,
    },
    UserMessage {
        text: String,
        #[serde(serialize_with = "name")]
        delivery: Delivery,
        #[serde(serialize_with = "image_refs", skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
    },
    TurnStarted {
        turn: u32,
    },
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        text: String,
    },
    AssistantMessage {
        turn: u32,
        text: String,
        thinking: String,
        #[serde(serialize_with = "calls")]
        tool_calls: Vec<ToolCallInfo>,
        #[serde(serialize_with = "model_stop")]
        stop_reason: ModelStopReason,
        folds: Option<(u64, u64)>,
    },
    ToolCall(#[serde(with = "CallDef")] ToolCallInfo),
    ToolOutput {
        id: String,
        text: String,
        omitted: u64,
    },
    ToolResult {
        id: String,
        name: String,
        is_error: bool,
        output: String,
        duration_ms: u64,
        #[serde(serialize_with = "image_refs", skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
    },
    PermissionRequested {
        request: PermissionRequestId,
        tool: String,
        #[serde(serialize_with = "args_json")]
        args: String,
        summary: String,
        /// The subagent that asks; `null` for the session itself.
        #[serde(rename = "asker")]
        session: Option<SessionId>,
    },
    PermissionResolved {
        request: PermissionRequestId,
        #[serde(serialize_with = "name")]
        decision: Decision,
        by_client: String,
        #[serde(rename = "asker")]
        session: Option<SessionId>,
    },
    QueueChanged {
        steer: Vec<String>,
        follow_up: Vec<String>,
        #[serde(serialize_with = "image_lists", skip_serializing_if = "Vec::is_empty")]
        steer_images: Vec<Vec<ImageRef>>,
        #[serde(serialize_with = "image_lists", skip_serializing_if = "Vec::is_empty")]
        follow_up_images: Vec<Vec<ImageRef>>,
    },
    Usage {
        #[serde(with = "TokensDef")]
        turn: TokenUsage,
        #[serde(with = "TokensDef")]
        cumulative: TokenUsage,
        #[serde(rename = "cost_usd", serialize_with = "usd")]
        cost_micros: Option<u64>,
    },
    Retrying {
        attempt: u32,
        wait_ms: u64,
        reason: String,
    },
    Compacted {
        before_tokens: u64,
        after_tokens: u64,
    },
    Health {
        #[serde(serialize_with = "name")]
        kind: HealthKind,
        detail: String,
    },
    Notice {
        text: String,
    },
    FileChanged {
        path: String,
    },
    ModeChanged {
        #[serde(serialize_with = "name")]
        mode: Mode,
    },
    ModelChanged {
        model: String,
    },
    Rewound {
        run: RunId,
        restored: Vec<String>,
        removed: Vec<String>,
        kept: Vec<String>,
    },
    RunFinished {
        run: RunId,
        #[serde(serialize_with = "name")]
        stop_reason: StopReason,
        turns: u32,
        truncated: bool,
        #[serde(with = "TokensDef")]
        usage: TokenUsage,
        #[serde(serialize_with = "returned")]
        returned_messages: Vec<QueuedMessage>,
        error: Option<String>,
        nothing_changed: bool,
    },
    Error {
        message: String,
    },
    SessionDeleted,
    RunResumed {
        run: RunId,
        #[serde(serialize_with = "name")]
        reason: ResumeReason,
    },
    SubagentStarted {
        call: String,
        child: SessionId,
        description: String,
        agent: String,
        background: bool,
    },
    SubagentActivity {
        child: SessionId,
        activity: String,
    },
    HookRan {
        event: String,
        command: String,
        exit: Option<i32>,
        duration_ms: u64,
        decision: Option<String>,
    },
    SubagentFinished {
        child: SessionId,
        #[serde(serialize_with = "name")]
        stop_reason: StopReason,
        turns: u32,
        #[serde(with = "TokensDef")]
        usage: TokenUsage,
        duration_ms: u64,
        #[serde(rename = "cost_usd", serialize_with = "usd")]
        cost_micros: Option<u64>,
    },
    PlanUpdated {
        #[serde(serialize_with = "plan_items")]
        items: Vec<PlanItem>,
    },
    ShellStarted {
        shell: u32,
        command: String,
    },
    ShellEnded {
        shell: u32,
        #[serde(serialize_with = "shell_end")]
        end: ShellEnd,
    },
}

/// A plan's steps, each with its text and status by name.
fn plan_items<S: Serializer>(items: &[PlanItem], serializer: S) -> Result<S::Ok, S::Error> {
    let items: Vec<Value> = items
        .iter()
        .map(|item| serde_json::json!({"text": item.text, "status": item.status.as_str()}))
        .collect();
    items.serialize(serializer)
}

/// How a shell ended: `how` (`exited`, `signalled`, `killed`, `lost`) and its code or signal.
fn shell_end<S: Serializer>(end: &ShellEnd, serializer: S) -> Result<S::Ok, S::Error> {
    shell_end_value(end).serialize(serializer)
}

/// How a shell ended as JSON (`{"how": "exited", "code": 0}`), the same in events and in
/// `agentctl shells --json`.
pub fn shell_end_value(end: &ShellEnd) -> serde_json::Value {
    match end {
        ShellEnd::Exited { code } => serde_json::json!({"how": "exited", "code": code}),
        ShellEnd::Signalled { signal } => serde_json::json!({"how": "signalled", "signal": signal}),
        ShellEnd::Killed => serde_json::json!({"how": "killed"}),
        ShellEnd::Lost => serde_json::json!({"how": "lost"}),
    }
}

/// A value of a field-less protocol enum by the name users see (`follow_up`, `accept-edits`).
fn name<T: Display, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// Why a reply ended, by its provider-neutral name.
fn model_stop<S: Serializer>(reason: &ModelStopReason, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(reason.as_str())
}

/// A tool call's arguments as JSON; text that is not JSON stays a string.
fn args_json<S: Serializer>(args: &str, serializer: S) -> Result<S::Ok, S::Error> {
    match serde_json::from_str::<Value>(args) {
        Ok(value) => value.serialize(serializer),
        Err(_) => serializer.serialize_str(args),
    }
}

/// Millionths of a US dollar as dollars.
fn usd<S: Serializer>(micros: &Option<u64>, serializer: S) -> Result<S::Ok, S::Error> {
    micros.map(|c| c as f64 / 1e6).serialize(serializer)
}

/// Tool calls, each with its arguments as JSON.
fn calls<S: Serializer>(calls: &[ToolCallInfo], serializer: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Call<'a>(#[serde(with = "CallDef")] &'a ToolCallInfo);
    serializer.collect_seq(calls.iter().map(Call))
}

/// An image as `--json` prints it: never its bytes, which stay in the daemon's store.
#[derive(Serialize)]
#[serde(remote = "ImageRef")]
struct ImageDef {
    hash: String,
    media_type: String,
    size: u64,
    width: u32,
    height: u32,
    #[serde(rename = "path")]
    name: String,
}

/// Images, each as [`ImageDef`].
fn image_refs<S: Serializer>(images: &[ImageRef], serializer: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Image<'a>(#[serde(with = "ImageDef")] &'a ImageRef);
    serializer.collect_seq(images.iter().map(Image))
}

/// Lists of images, one per queued message.
fn image_lists<S: Serializer>(lists: &[Vec<ImageRef>], serializer: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct List<'a>(#[serde(serialize_with = "image_refs")] &'a [ImageRef]);
    serializer.collect_seq(lists.iter().map(|l| List(l)))
}

/// Queued messages, each with its queue's name.
fn returned<S: Serializer>(queued: &[QueuedMessage], serializer: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Queued<'a>(#[serde(with = "QueuedDef")] &'a QueuedMessage);
    serializer.collect_seq(queued.iter().map(Queued))
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
