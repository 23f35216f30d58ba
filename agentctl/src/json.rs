//! The JSON view: one object per event, with stable field names (`--json` of `run` and
//! `show`). It consumes the same events as the human view.

use agentctl::client::{Flow, View};
use protocol::{Event, SessionEvent, TokenUsage};
use serde_json::{Value, json};

/// The JSON view: each event as one line on stdout.
pub struct JsonLines;

impl View for JsonLines {
    fn event(&mut self, event: &SessionEvent, _replay: bool) -> Flow {
        outln!("{}", event_json(event));
        Flow::Go
    }
}

/// Token counts with stable field names.
pub fn usage_json(usage: &TokenUsage) -> Value {
    json!({
        "input": usage.input,
        "output": usage.output,
        "cache_read": usage.cache_read,
        "cache_write": usage.cache_write,
    })
}

fn args_json(args: &str) -> Value {
    serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.to_string()))
}

/// One event as a JSON object: `seq`, `session`, `time_ms`, `type`, and the event's fields.
pub fn event_json(event: &SessionEvent) -> Value {
    let mut value = match &event.event {
        Event::RunStarted {
            run,
            trigger,
            max_turns,
            model,
            provider,
        } => json!({
            "run": run.0,
            "trigger": trigger.as_str(),
            "max_turns": max_turns,
            "model": model,
            "provider": provider,
        }),
        Event::UserMessage { text, delivery } => {
            json!({"text": text, "delivery": delivery.as_str()})
        }
        Event::TurnStarted { turn } => json!({"turn": turn}),
        Event::TextDelta { text } | Event::ThinkingDelta { text } => json!({"text": text}),
        Event::AssistantMessage {
            turn,
            text,
            thinking,
            tool_calls,
            stop_reason,
            folds,
        } => json!({
            "turn": turn,
            "text": text,
            "thinking": thinking,
            "tool_calls": tool_calls.iter().map(|c| json!({"id": c.id, "name": c.name, "args": args_json(&c.args)})).collect::<Vec<_>>(),
            "stop_reason": stop_reason.as_str(),
            "folds": folds.map(|(first, last)| json!([first, last])),
        }),
        Event::ToolCall(call) => {
            json!({"id": call.id, "name": call.name, "args": args_json(&call.args)})
        }
        Event::ToolOutput { id, text, omitted } => {
            json!({"id": id, "text": text, "omitted": omitted})
        }
        Event::ToolResult {
            id,
            name,
            is_error,
            output,
            duration_ms,
        } => json!({
            "id": id, "name": name, "is_error": is_error, "output": output, "duration_ms": duration_ms,
        }),
        Event::PermissionRequested {
            session,
            request,
            tool,
            args,
            summary,
        } => json!({
            "request": request.0, "tool": tool, "args": args_json(args), "summary": summary,
            "asker": session.as_ref().map(|s| s.as_str()),
        }),
        Event::PermissionResolved {
            session,
            request,
            decision,
            by_client,
        } => json!({
            "request": request.0, "decision": decision.as_str(), "by_client": by_client,
            "asker": session.as_ref().map(|s| s.as_str()),
        }),
        Event::QueueChanged { steer, follow_up } => json!({"steer": steer, "follow_up": follow_up}),
        Event::Usage {
            turn,
            cumulative,
            cost_micros,
        } => json!({
            "turn": usage_json(turn),
            "cumulative": usage_json(cumulative),
            "cost_usd": cost_micros.map(|c| c as f64 / 1e6),
        }),
        Event::Retrying {
            attempt,
            wait_ms,
            reason,
        } => json!({"attempt": attempt, "wait_ms": wait_ms, "reason": reason}),
        Event::Compacted {
            before_tokens,
            after_tokens,
        } => {
            json!({"before_tokens": before_tokens, "after_tokens": after_tokens})
        }
        Event::Health { kind, detail } => json!({"kind": kind.as_str(), "detail": detail}),
        Event::FileChanged { path } => json!({"path": path}),
        Event::Notice { text } => json!({"text": text}),
        Event::ModeChanged { mode } => json!({"mode": mode.as_str()}),
        Event::ModelChanged { model } => json!({"model": model}),
        Event::Rewound {
            run,
            restored,
            removed,
            kept,
        } => json!({"run": run.0, "restored": restored, "removed": removed, "kept": kept}),
        Event::RunFinished {
            run,
            stop_reason,
            turns,
            truncated,
            usage,
            returned_messages,
            error,
            nothing_changed,
        } => json!({
            "run": run.0,
            "stop_reason": stop_reason.as_str(),
            "turns": turns,
            "truncated": truncated,
            "usage": usage_json(usage),
            "returned_messages": returned_messages.iter().map(|m| json!({"text": m.text, "delivery": m.delivery.as_str()})).collect::<Vec<_>>(),
            "error": error,
            "nothing_changed": nothing_changed,
        }),
        Event::Error { message } => json!({"message": message}),
        Event::SessionDeleted => json!({}),
        Event::RunResumed { run, reason } => json!({"run": run.0, "reason": reason.as_str()}),
        Event::SubagentStarted {
            call,
            child,
            description,
            agent,
            background,
        } => json!({
            "call": call, "child": child.as_str(), "description": description, "agent": agent,
            "background": background,
        }),
        Event::HookRan {
            event,
            command,
            exit,
            duration_ms,
            decision,
        } => json!({
            "event": event, "command": command, "exit": exit, "duration_ms": duration_ms,
            "decision": decision,
        }),
        Event::SubagentActivity { child, activity } => {
            json!({"child": child.as_str(), "activity": activity})
        }
        Event::SubagentFinished {
            child,
            stop_reason,
            turns,
            usage,
            cost_micros,
            duration_ms,
        } => json!({
            "child": child.as_str(), "stop_reason": stop_reason.as_str(), "turns": turns,
            "usage": usage_json(usage), "duration_ms": duration_ms,
            "cost_usd": cost_micros.map(|c| c as f64 / 1e6),
        }),
    };
    value["type"] = json!(event.event.kind());
    value["seq"] = json!(event.seq);
    value["session"] = json!(event.session.as_str());
    value["time_ms"] = json!(event.time_ms);
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_events_carry_type_and_seq() {
        let event = SessionEvent {
            session: protocol::SessionId("s1".into()),
            seq: 4,
            time_ms: 9,
            event: Event::TextDelta { text: "hi".into() },
        };
        let value = event_json(&event);
        assert_eq!(
            value,
            json!({"type": "text_delta", "seq": 4, "session": "s1", "time_ms": 9, "text": "hi"})
        );
    }
}
