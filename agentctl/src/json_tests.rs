use super::*;

fn usage() -> TokenUsage {
    TokenUsage {
        input: 1,
        output: 2,
        cache_read: 3,
        cache_write: 4,
    }
}

fn call() -> ToolCallInfo {
    ToolCallInfo {
        id: "c1".into(),
        name: "bash".into(),
        args: r#"{"command":"ls"}"#.into(),
    }
}

/// One event of every kind (two where a field may be empty), with the line the JSON view
/// prints for it: scripts read these names, in this order.
fn every_kind() -> Vec<(Event, &'static str)> {
    let child = || SessionId("kid".into());
    vec![
        (
            Event::RunStarted {
                run: RunId(3),
                trigger: Delivery::FollowUp,
                max_turns: 0,
                model: "m".into(),
                provider: "p".into(),
            },
            r#"{"run":3,"trigger":"follow_up","max_turns":0,"model":"m","provider":"p","type":"run_started","seq":1,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::UserMessage {
                text: "hi".into(),
                delivery: Delivery::Steer,
                images: vec![protocol::ImageRef {
                    hash: "ab".repeat(32),
                    media_type: "image/png".into(),
                    size: 2048,
                    width: 1280,
                    height: 720,
                    name: "shot.png".into(),
                }],
            },
            r#"{"text":"hi","delivery":"steer","images":[{"hash":"abababababababababababababababababababababababababababababababab","media_type":"image/png","size":2048,"width":1280,"height":720,"path":"shot.png"}],"type":"user_message","seq":2,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::TurnStarted { turn: 2 },
            r#"{"turn":2,"type":"turn_started","seq":3,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::TextDelta { text: "t".into() },
            r#"{"text":"t","type":"text_delta","seq":4,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::ThinkingDelta { text: "th".into() },
            r#"{"text":"th","type":"thinking_delta","seq":5,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::AssistantMessage {
                turn: 1,
                text: "done".into(),
                thinking: "".into(),
                tool_calls: vec![
                    call(),
                    ToolCallInfo {
                        id: "c2".into(),
                        name: "x".into(),
                        args: "not json".into(),
                    },
                ],
                stop_reason: ModelStopReason::Other("weird".into()),
                folds: Some((4, 9)),
            },
            r#"{"turn":1,"text":"done","thinking":"","tool_calls":[{"id":"c1","name":"bash","args":{"command":"ls"}},{"id":"c2","name":"x","args":"not json"}],"stop_reason":"weird","folds":[4,9],"type":"assistant_message","seq":6,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::AssistantMessage {
                turn: 1,
                text: "".into(),
                thinking: "hm".into(),
                tool_calls: vec![],
                stop_reason: ModelStopReason::EndTurn,
                folds: None,
            },
            r#"{"turn":1,"text":"","thinking":"hm","tool_calls":[],"stop_reason":"end_turn","folds":null,"type":"assistant_message","seq":7,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::ToolCall(call()),
            r#"{"id":"c1","name":"bash","args":{"command":"ls"},"type":"tool_call","seq":8,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::ToolOutput {
                id: "c1".into(),
                text: "out\n".into(),
                omitted: 7,
            },
            r#"{"id":"c1","text":"out\n","omitted":7,"type":"tool_output","seq":9,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::ToolResult {
                id: "c1".into(),
                name: "bash".into(),
                is_error: true,
                output: "boom \"quoted\" é".into(),
                duration_ms: 12,
                images: vec![],
            },
            r#"{"id":"c1","name":"bash","is_error":true,"output":"boom \"quoted\" é","duration_ms":12,"type":"tool_result","seq":10,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::PermissionRequested {
                session: Some(child()),
                request: PermissionRequestId(5),
                tool: "bash".into(),
                args: r#"{"command":"rm -rf x"}"#.into(),
                summary: "run rm".into(),
            },
            r#"{"request":5,"tool":"bash","args":{"command":"rm -rf x"},"summary":"run rm","asker":"kid","type":"permission_requested","seq":11,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::PermissionRequested {
                session: None,
                request: PermissionRequestId(6),
                tool: "write".into(),
                args: "{broken".into(),
                summary: "write".into(),
            },
            r#"{"request":6,"tool":"write","args":"{broken","summary":"write","asker":null,"type":"permission_requested","seq":12,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::PermissionResolved {
                session: None,
                request: PermissionRequestId(5),
                decision: Decision::AllowAlways,
                by_client: "policy".into(),
            },
            r#"{"request":5,"decision":"allow_always","by_client":"policy","asker":null,"type":"permission_resolved","seq":13,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::QueueChanged {
                steer: vec!["a".into()],
                follow_up: vec![],
                steer_images: vec![],
                follow_up_images: vec![],
            },
            r#"{"steer":["a"],"follow_up":[],"type":"queue_changed","seq":14,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::Usage {
                turn: usage(),
                cumulative: usage(),
                cost_micros: Some(120_000),
            },
            r#"{"turn":{"input":1,"output":2,"cache_read":3,"cache_write":4},"cumulative":{"input":1,"output":2,"cache_read":3,"cache_write":4},"cost_usd":0.12,"type":"usage","seq":15,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::Usage {
                turn: usage(),
                cumulative: usage(),
                cost_micros: None,
            },
            r#"{"turn":{"input":1,"output":2,"cache_read":3,"cache_write":4},"cumulative":{"input":1,"output":2,"cache_read":3,"cache_write":4},"cost_usd":null,"type":"usage","seq":16,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::Retrying {
                attempt: 1,
                wait_ms: 500,
                reason: "429".into(),
            },
            r#"{"attempt":1,"wait_ms":500,"reason":"429","type":"retrying","seq":17,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::Compacted {
                before_tokens: 900,
                after_tokens: 100,
            },
            r#"{"before_tokens":900,"after_tokens":100,"type":"compacted","seq":18,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::Health {
                kind: HealthKind::RepeatedCalls,
                detail: "same".into(),
            },
            r#"{"kind":"repeated_calls","detail":"same","type":"health","seq":19,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::Notice { text: "n".into() },
            r#"{"text":"n","type":"notice","seq":20,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::FileChanged {
                path: "a.rs".into(),
            },
            r#"{"path":"a.rs","type":"file_changed","seq":21,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::ModeChanged {
                mode: Mode::AcceptEdits,
            },
            r#"{"mode":"accept-edits","type":"mode_changed","seq":22,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::ModelChanged { model: "m2".into() },
            r#"{"model":"m2","type":"model_changed","seq":23,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::Rewound {
                run: RunId(2),
                restored: vec!["a".into()],
                removed: vec!["b".into()],
                kept: vec![],
            },
            r#"{"run":2,"restored":["a"],"removed":["b"],"kept":[],"type":"rewound","seq":24,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::RunFinished {
                run: RunId(3),
                stop_reason: StopReason::Completed,
                turns: 2,
                truncated: false,
                usage: usage(),
                returned_messages: vec![QueuedMessage {
                    text: "later".into(),
                    delivery: Delivery::FollowUp,
                    images: vec![],
                }],
                error: None,
                nothing_changed: true,
            },
            r#"{"run":3,"stop_reason":"completed","turns":2,"truncated":false,"usage":{"input":1,"output":2,"cache_read":3,"cache_write":4},"returned_messages":[{"text":"later","delivery":"follow_up"}],"error":null,"nothing_changed":true,"type":"run_finished","seq":25,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::RunFinished {
                run: RunId(4),
                stop_reason: StopReason::Error,
                turns: 0,
                truncated: true,
                usage: TokenUsage::default(),
                returned_messages: vec![],
                error: Some("no key".into()),
                nothing_changed: false,
            },
            r#"{"run":4,"stop_reason":"error","turns":0,"truncated":true,"usage":{"input":0,"output":0,"cache_read":0,"cache_write":0},"returned_messages":[],"error":"no key","nothing_changed":false,"type":"run_finished","seq":26,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::Error {
                message: "bad".into(),
            },
            r#"{"message":"bad","type":"error","seq":27,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::SessionDeleted,
            r#"{"type":"session_deleted","seq":28,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::RunResumed {
                run: RunId(3),
                reason: ResumeReason::Crash,
            },
            r#"{"run":3,"reason":"crash","type":"run_resumed","seq":29,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::SubagentStarted {
                call: "c9".into(),
                child: child(),
                description: "look".into(),
                agent: "explore".into(),
                background: false,
            },
            r#"{"call":"c9","child":"kid","description":"look","agent":"explore","background":false,"type":"subagent_started","seq":30,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::SubagentActivity {
                child: child(),
                activity: "thinking".into(),
            },
            r#"{"child":"kid","activity":"thinking","type":"subagent_activity","seq":31,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::HookRan {
                event: "Stop".into(),
                command: "true".into(),
                exit: Some(0),
                duration_ms: 3,
                decision: None,
            },
            r#"{"event":"Stop","command":"true","exit":0,"duration_ms":3,"decision":null,"type":"hook_ran","seq":32,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::HookRan {
                event: "PreToolUse".into(),
                command: "x".into(),
                exit: None,
                duration_ms: 3,
                decision: Some("block".into()),
            },
            r#"{"event":"PreToolUse","command":"x","exit":null,"duration_ms":3,"decision":"block","type":"hook_ran","seq":33,"session":"s1","time_ms":9}"#,
        ),
        (
            Event::SubagentFinished {
                child: child(),
                stop_reason: StopReason::MaxTurns,
                turns: 4,
                usage: usage(),
                cost_micros: Some(1),
                duration_ms: 40,
            },
            r#"{"child":"kid","stop_reason":"max_turns","turns":4,"usage":{"input":1,"output":2,"cache_read":3,"cache_write":4},"duration_ms":40,"cost_usd":1e-6,"type":"subagent_finished","seq":34,"session":"s1","time_ms":9}"#,
        ),
    ]
}

#[test]
fn every_kind_of_event_prints_the_line_scripts_read() {
    for (seq, (event, line)) in (1..).zip(every_kind()) {
        let event = SessionEvent {
            session: SessionId("s1".into()),
            seq,
            time_ms: 9,
            event,
        };
        assert_eq!(JsonEvent(&event).to_string(), line);
    }
}

#[test]
fn a_plan_prints_its_steps_with_their_status_names() {
    let event = SessionEvent {
        session: SessionId("s1".into()),
        seq: 7,
        time_ms: 9,
        event: Event::PlanUpdated {
            items: vec![
                PlanItem {
                    text: "read the code".into(),
                    status: protocol::PlanStatus::Done,
                },
                PlanItem {
                    text: "fix \"it\"".into(),
                    status: protocol::PlanStatus::InProgress,
                },
                PlanItem {
                    text: "test".into(),
                    status: protocol::PlanStatus::Pending,
                },
            ],
        },
    };
    assert_eq!(
        JsonEvent(&event).to_string(),
        r#"{"items":[{"text":"read the code","status":"done"},{"text":"fix \"it\"","status":"in_progress"},{"text":"test","status":"pending"}],"type":"plan_updated","seq":7,"session":"s1","time_ms":9}"#
    );
}

#[test]
fn characters_a_terminal_would_obey_are_escaped_and_read_back_the_same() {
    let text = "a\u{202e}b\u{9b}2Jc\u{7f}d\u{5d0}";
    let event = SessionEvent {
        session: SessionId("s1".into()),
        seq: 1,
        time_ms: 9,
        event: Event::Notice { text: text.into() },
    };
    let line = JsonEvent(&event).to_string();
    assert!(
        line.contains(r#""text":"a\u202eb\u009b2Jc\u007fd"#),
        "{line}"
    );
    // Right-to-left text itself is shown as it is.
    assert!(line.contains('\u{5d0}'), "{line}");
    assert!(
        !line
            .chars()
            .any(|c| agentctl::client::far_text::obeyed(c, true))
    );
    let back: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(back["text"], text);
}
