//! What sessions store: checks that a log accounts for every event, that requests keep calls
//! and results paired, and sample sessions written straight to disk (benchmarks).

use protocol::Event;

use crate::Home;

/// Checks every session log under `home` (docs/architecture.md#state-on-disk): each `seq` up to the
/// highest is a stored event, inside the range an assistant message folds, or inside a recorded
/// gap; and every permission request has its answer. Load the sessions first (a crash's gap is
/// recorded when the session loads again).
pub fn assert_logs_account_for_every_seq(home: &Home) {
    let sessions = home.paths().sessions_dir();
    for entry in std::fs::read_dir(&sessions).into_iter().flatten().flatten() {
        let log = entry.path().join("log.jsonl");
        let Ok(text) = std::fs::read_to_string(&log) else {
            continue;
        };
        let mut stored = std::collections::BTreeSet::new();
        let mut ranges = Vec::new();
        let mut requested = std::collections::BTreeSet::new();
        let mut resolved = std::collections::BTreeSet::new();
        for line in text.lines() {
            let record: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}: unreadable record {line}: {e}", log.display()));
            match record["kind"].as_str() {
                Some("event") => {
                    stored.insert(record["seq"].as_u64().expect("seq"));
                    let event = &record["event"];
                    if let Some(folds) = event["AssistantMessage"]["folds"].as_array() {
                        ranges.push((folds[0].as_u64().unwrap(), folds[1].as_u64().unwrap()));
                    }
                    if let Some(request) = event["PermissionRequested"]["request"].as_u64() {
                        requested.insert(request);
                    }
                    if let Some(request) = event["PermissionResolved"]["request"].as_u64() {
                        resolved.insert(request);
                    }
                }
                Some("gap") => ranges.push((
                    record["from"].as_u64().unwrap(),
                    record["to"].as_u64().unwrap(),
                )),
                _ => {}
            }
        }
        let highest = stored.last().copied().unwrap_or(0);
        for seq in 1..=highest {
            assert!(
                stored.contains(&seq) || ranges.iter().any(|(a, b)| (*a..=*b).contains(&seq)),
                "{}: seq {seq} is neither stored, folded nor in a gap",
                log.display()
            );
        }
        let unanswered: Vec<_> = requested.difference(&resolved).collect();
        assert!(
            unanswered.is_empty(),
            "{}: permission requests without an answer: {unanswered:?}",
            log.display()
        );
    }
}

/// Every tool result in a request follows the call that asked for it (Anthropic format).
pub fn assert_pairs_intact(messages: &[serde_json::Value]) {
    for (i, message) in messages.iter().enumerate() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                let id = &block["tool_use_id"];
                let previous = &messages[i - 1]["content"];
                assert!(
                    previous
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|b| b["type"] == "tool_use" && &b["id"] == id),
                    "tool_result {id} without its tool_use just before"
                );
            }
        }
    }
}

/// Event `i` of a realistic mix as sessions store them: messages, tool calls, results, turns
/// and replies (benchmarks).
pub fn sample_event(i: u64) -> Event {
    match i % 5 {
        0 => Event::UserMessage {
            text: "Please look at the parser and fix the failing test.".into(),
            delivery: protocol::Delivery::FollowUp,
            images: Vec::new(),
        },
        1 => Event::ToolCall(protocol::ToolCallInfo {
            id: format!("toolu_{i}"),
            name: "read".into(),
            args: r#"{"path":"src/parser.rs"}"#.into(),
        }),
        2 => Event::ToolResult {
            id: format!("toolu_{i}"),
            name: "read".into(),
            is_error: false,
            output: "     1\tfn parse(input: &str) -> Result<Ast, Error> {\n".repeat(6),
            duration_ms: 1,
            images: Vec::new(),
        },
        3 => Event::TurnStarted { turn: i as u32 },
        _ => Event::AssistantMessage {
            turn: i as u32,
            text: "I read the parser; the test fails because of an off-by-one.".into(),
            thinking: String::new(),
            tool_calls: vec![],
            stop_reason: protocol::ModelStopReason::EndTurn,
            folds: None,
        },
    }
}

/// Writes session `id` under `home` with `events` events of [`sample_event`] (benchmarks).
pub fn write_session(home: &Home, id: &str, events: u64) {
    use agentd::store::{Meta, Record, SessionStore};
    let sessions = home.paths().sessions_dir();
    let mut meta = Meta::new(id, "/");
    meta.title = Some(format!("bench {id}"));
    SessionStore::create(&sessions, &meta, &[], false).expect("session created");
    let mut store = SessionStore::open(&sessions.join(id)).expect("session opened");
    for seq in 1..=events {
        store
            .append(&Record::Event {
                seq,
                time_ms: seq,
                event: sample_event(seq),
            })
            .expect("event appended");
    }
}

/// Appends to session `id`'s log a reservation of `seq`s up to `to` for deltas that never came
/// (as a daemon killed mid-reply leaves it): the session's last `seq` then lies past its last
/// stored event.
pub fn reserve_through(home: &Home, id: &str, to: u64) {
    use agentd::store::{Record, SessionStore};
    let mut store =
        SessionStore::open(&home.paths().sessions_dir().join(id)).expect("session opened");
    store
        .append(&Record::Reserved { to })
        .expect("reservation appended");
}
