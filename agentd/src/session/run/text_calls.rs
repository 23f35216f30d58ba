//! Tool calls written as text. Small and local models often answer with the call itself as
//! their whole reply: bare JSON, an array of calls, inside one ```json fence, in
//! `<tool_call>` tags, or after `[TOOL_CALLS]`, and the server does not turn it into a tool
//! call. When a reply has no structured calls and its whole text is such calls, each naming a
//! tool offered this turn with arguments that fit the tool's schema, they become the reply's
//! calls and the text goes. Anything else stays text.
//!
//! While a reply streams, text that may turn out to be such calls is held back from the views
//! (a [`TextGate`]) and let through at the end if it was text after all.

use serde_json::Value;

use crate::conversation::{AssistantReply, Block, ToolCall};
use crate::provider::ToolSpec;
use protocol::ModelStopReason;

/// How a reply's text begins when it may be calls.
const OPENINGS: [&str; 5] = ["{", "[", "```", "<tool_call>", "[TOOL_CALLS]"];

/// The reply with the calls its text holds, or `None` when its text is not (only) calls.
pub(crate) fn recover(reply: &AssistantReply, specs: &[ToolSpec]) -> Option<AssistantReply> {
    if !reply.tool_calls().is_empty() {
        return None;
    }
    let text = reply.text();
    let calls = parse(text.trim(), specs)?;
    let mut content: Vec<Block> = reply
        .content
        .iter()
        .filter(|b| !matches!(b, Block::Text { .. }))
        .cloned()
        .collect();
    content.extend(calls.into_iter().map(Block::ToolCall));
    Some(AssistantReply {
        content,
        stop_reason: ModelStopReason::ToolUse,
        usage: reply.usage,
    })
}

/// The calls `text` is, each checked against `specs`.
fn parse(text: &str, specs: &[ToolSpec]) -> Option<Vec<ToolCall>> {
    let bodies = unwrap(text)?;
    let mut calls = Vec::new();
    for body in bodies {
        // Code in a string often comes with its quotes unescaped: repaired, when it can be.
        let value: Value = serde_json::from_str(body.trim()).ok().or_else(|| {
            let repaired = super::lenient_json::repair(body)?;
            serde_json::from_str(&repaired).ok()
        })?;
        let objects = match value {
            Value::Array(items) if !items.is_empty() => items,
            object @ Value::Object(_) => vec![object],
            _ => return None,
        };
        for object in objects {
            calls.push(call_of(&object, specs, calls.len())?);
        }
    }
    (!calls.is_empty()).then_some(calls)
}

/// The JSON texts inside the wrappers small models use.
fn unwrap(text: &str) -> Option<Vec<&str>> {
    if let Some(rest) = text.strip_prefix("[TOOL_CALLS]") {
        return Some(vec![rest]);
    }
    if text.starts_with("<tool_call>") {
        let mut bodies = Vec::new();
        let mut rest = text;
        while !rest.trim().is_empty() {
            let inner = rest.trim_start().strip_prefix("<tool_call>")?;
            let (body, after) = inner.split_once("</tool_call>")?;
            bodies.push(body);
            rest = after;
        }
        return Some(bodies);
    }
    if let Some(fenced) = text.strip_prefix("```") {
        let fenced = fenced.strip_prefix("json").unwrap_or(fenced);
        let body = fenced.strip_suffix("```")?;
        // One fence only.
        return (!body.contains("```")).then_some(vec![body]);
    }
    Some(vec![text])
}

/// One call from `{"name": …, "arguments"|"parameters": {…}}`, if the tool is offered and the
/// arguments fit its schema.
fn call_of(object: &Value, specs: &[ToolSpec], index: usize) -> Option<ToolCall> {
    let map = object.as_object()?;
    let name = map.get("name")?.as_str()?;
    let spec = specs.iter().find(|s| s.name == name)?;
    let args = match map.get("arguments").or_else(|| map.get("parameters")) {
        Some(Value::Object(args)) => Value::Object(args.clone()),
        // Some models write the arguments as a JSON string, as the OpenAI wire format does.
        Some(Value::String(text)) => match serde_json::from_str(text).ok()? {
            object @ Value::Object(_) => object,
            _ => return None,
        },
        None => Value::Object(Default::default()),
        _ => return None,
    };
    let keys = map.keys().all(|k| {
        matches!(
            k.as_str(),
            "name" | "arguments" | "parameters" | "id" | "type"
        )
    });
    if !keys || !fits(&args, &spec.input_schema) {
        return None;
    }
    Some(ToolCall {
        id: format!("call_text_{}_{index}", uuid::Uuid::new_v4().simple()),
        name: name.to_string(),
        args: args.to_string(),
    })
}

/// Whether `value` fits `schema` as far as the tool schemas here say: an object with the
/// required properties, each property of its declared type, none that the schema forbids.
fn fits(value: &Value, schema: &Value) -> bool {
    let Some(object) = value.as_object() else {
        return false;
    };
    let properties = schema["properties"].as_object();
    let required = schema["required"].as_array().into_iter().flatten();
    if required
        .filter_map(Value::as_str)
        .any(|name| !object.contains_key(name))
    {
        return false;
    }
    let closed = schema["additionalProperties"] == Value::Bool(false);
    object.iter().all(|(key, v)| {
        match properties.and_then(|p| p.get(key)) {
            Some(property) => has_type(v, &property["type"]),
            // Built-in tools list every argument: an unknown one means this is not a call.
            None => !closed && properties.is_none(),
        }
    })
}

fn has_type(value: &Value, declared: &Value) -> bool {
    let one = |t: &str| match t {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    };
    match declared {
        Value::String(t) => one(t),
        Value::Array(types) => types.iter().filter_map(Value::as_str).any(one),
        _ => true,
    }
}

/// Text of a streaming reply held back while it may be tool calls written as text.
#[derive(Debug, Default)]
pub(crate) struct TextGate {
    /// Text not passed on yet.
    held: String,
    /// The text is known not to be calls: it passes.
    open: bool,
}

impl TextGate {
    /// A gate that holds nothing back (text calls are not looked for).
    pub(crate) fn open() -> TextGate {
        TextGate {
            held: String::new(),
            open: true,
        }
    }

    /// Takes a piece of streamed text; returns what may be shown now.
    pub(crate) fn pass(&mut self, piece: String) -> Option<String> {
        if self.open {
            return Some(piece);
        }
        self.held.push_str(&piece);
        let start = self.held.trim_start();
        if start.is_empty() {
            return None;
        }
        let may_be_calls = OPENINGS
            .iter()
            .any(|o| start.starts_with(o) || o.starts_with(start));
        if may_be_calls {
            return None;
        }
        self.open = true;
        Some(std::mem::take(&mut self.held))
    }

    /// The text still held at the end of the reply.
    pub(crate) fn rest(&mut self) -> Option<String> {
        (!self.held.is_empty()).then(|| std::mem::take(&mut self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::TokenUsage;
    use serde_json::json;

    fn specs() -> Vec<ToolSpec> {
        crate::tools::specs()
    }

    fn reply(text: &str) -> AssistantReply {
        AssistantReply {
            content: vec![Block::Text { text: text.into() }],
            stop_reason: ModelStopReason::EndTurn,
            usage: TokenUsage::default(),
        }
    }

    fn names(text: &str) -> Option<Vec<String>> {
        recover(&reply(text), &specs()).map(|r| {
            assert_eq!(r.text(), "");
            assert_eq!(r.stop_reason, ModelStopReason::ToolUse);
            r.tool_calls().iter().map(|c| c.name.clone()).collect()
        })
    }

    #[test]
    fn every_form_small_models_write_is_a_call() {
        let read = r#"{"name": "read", "arguments": {"path": "solution.py"}}"#;
        assert_eq!(names(read).unwrap(), ["read"]);
        assert_eq!(names(&format!("  {read}\n")).unwrap(), ["read"]);
        assert_eq!(
            names(&format!("[{read}, {read}]")).unwrap(),
            ["read", "read"]
        );
        assert_eq!(names(&format!("```json\n{read}\n```")).unwrap(), ["read"]);
        assert_eq!(names(&format!("```\n{read}\n```")).unwrap(), ["read"]);
        assert_eq!(
            names(&format!(
                "<tool_call>\n{read}\n</tool_call>\n<tool_call>{read}</tool_call>"
            ))
            .unwrap(),
            ["read", "read"]
        );
        assert_eq!(names(&format!("[TOOL_CALLS][{read}]")).unwrap(), ["read"]);
        assert_eq!(
            names(r#"{"name": "bash", "parameters": {"command": "ls"}}"#).unwrap(),
            ["bash"]
        );
        assert_eq!(
            names(r#"{"name": "read", "arguments": "{\"path\": \"a\"}"}"#).unwrap(),
            ["read"]
        );
        let recovered = recover(&reply(read), &specs()).unwrap();
        let args: Value = serde_json::from_str(&recovered.tool_calls()[0].args).unwrap();
        assert_eq!(args, json!({"path": "solution.py"}));
    }

    #[test]
    fn what_is_not_exactly_calls_stays_text() {
        for text in [
            r#"{"name": "nuke", "arguments": {}}"#,
            r#"{"name": "read", "arguments": {"path": 3}}"#,
            r#"{"name": "read", "arguments": {}}"#,
            r#"{"name": "read", "arguments": {"path": "a", "color": "red"}}"#,
            r#"Here it is: {"name": "read", "arguments": {"path": "a"}}"#,
            r#"{"name": "read", "arguments": {"path": "a"}} and then"#,
            r#"[]"#,
            r#"{"answer": 42}"#,
            "```json\n{\"a\": 1}\n```",
            "The answer is 4.",
        ] {
            assert_eq!(names(text), None, "{text}");
        }
    }

    #[test]
    fn text_that_may_be_calls_is_held_until_it_is_known_not_to_be() {
        let mut gate = TextGate::default();
        assert_eq!(gate.pass("  ".into()), None);
        assert_eq!(gate.pass("{\"na".into()), None);
        assert_eq!(gate.rest().as_deref(), Some("  {\"na"));
        let mut gate = TextGate::default();
        assert_eq!(gate.pass("<to".into()), None);
        assert_eq!(gate.pass("day".into()).as_deref(), Some("<today"));
        assert_eq!(gate.pass(" more".into()).as_deref(), Some(" more"));
        assert_eq!(gate.rest(), None);
    }
}
