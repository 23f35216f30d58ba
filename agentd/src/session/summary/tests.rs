use protocol::{
    Activity, Decision, Event, Group, PermissionRequestId, RunId, SessionId, SessionInfo,
    StopReason, ToolCallInfo,
};

use super::SummaryTracker;

fn info() -> SessionInfo {
    crate::store::Meta::new("s1", "/tmp").info()
}

#[test]
fn a_run_is_thinking_then_in_a_tool_then_asking_then_done() {
    let mut t = SummaryTracker::default();
    let run = RunId(1);
    t.apply(
        &Event::RunStarted {
            run,
            trigger: protocol::Delivery::FollowUp,
            max_turns: 10,
            model: "claude-sonnet-4-5".into(),
            provider: "anthropic".into(),
        },
        100,
    );
    t.apply(&Event::TurnStarted { turn: 1 }, 110);
    assert_eq!(t.summary(info()).activity, Activity::Thinking);
    t.apply(
        &Event::ToolCall(ToolCallInfo {
            id: "c1".into(),
            name: "bash".into(),
            args: r#"{"command":"cargo test\n--all"}"#.into(),
        }),
        120,
    );
    let s = t.summary(info());
    assert_eq!(
        s.activity,
        Activity::Tool {
            name: "bash".into(),
            detail: "cargo test --all".into()
        }
    );
    assert_eq!(s.activity_since_ms, 120);
    t.apply(
        &Event::PermissionRequested {
            session: Some(SessionId("child".into())),
            request: PermissionRequestId(3),
            tool: "write".into(),
            args: "{}".into(),
            summary: "write src/lib.rs".into(),
        },
        130,
    );
    let s = t.summary(info());
    assert_eq!(s.group(), Group::NeedsYou);
    assert_eq!(s.pending[0].summary, "write src/lib.rs");
    // An answer to a request of the same number in another session leaves it pending.
    t.apply(
        &Event::PermissionResolved {
            session: None,
            request: PermissionRequestId(3),
            decision: Decision::Allow,
            by_client: "x".into(),
        },
        140,
    );
    assert_eq!(t.summary(info()).pending.len(), 1);
    t.apply(
        &Event::PermissionResolved {
            session: Some(SessionId("child".into())),
            request: PermissionRequestId(3),
            decision: Decision::Allow,
            by_client: "x".into(),
        },
        150,
    );
    assert!(t.summary(info()).pending.is_empty());
    t.apply(
        &Event::RunFinished {
            run,
            stop_reason: StopReason::Error,
            turns: 2,
            truncated: false,
            usage: Default::default(),
            returned_messages: Vec::new(),
            nothing_changed: false,
            error: Some("x".repeat(1000)),
        },
        160,
    );
    let s = t.summary(info());
    assert_eq!(s.activity, Activity::Idle);
    assert_eq!(s.group(), Group::Failed);
    let end = s.run.unwrap().end.unwrap();
    assert_eq!(end.finished_ms, 160);
    assert!(end.error.unwrap().chars().count() <= protocol::summary::SUMMARY_TEXT_CHARS);
    assert!(t.finished_run().is_some());
}
