use protocol::{
    Activity, Group, PendingSummary, PermissionRequestId, RunEnd, RunId, RunSummary, SessionId,
    SessionInfo, SessionState, SessionSummary, StopReason,
};

use super::arrange::Row;
use super::model::Board;

fn summary(id: &str, parent: Option<&str>, group: Group, time: u64) -> SessionSummary {
    let info = SessionInfo {
        id: SessionId(id.to_string()),
        cwd: format!("/work/{id}"),
        title: Some(format!("title {id}")),
        model: None,
        provider: None,
        mode: protocol::Mode::Default,
        state: if group == Group::Working {
            SessionState::Running
        } else {
            SessionState::Idle
        },
        turns: 0,
        steer_queued: 0,
        follow_up_queued: 0,
        created_ms: time,
        last_activity_ms: time,
        last_seq: 0,
        branch: None,
        parent: parent.map(|p| SessionId(p.to_string())),
    };
    let end = |stop_reason| {
        Some(RunSummary {
            run: RunId(1),
            started_ms: time,
            turn: 1,
            usage: Default::default(),
            cost_micros: None,
            end: Some(RunEnd {
                stop_reason,
                error: None,
                finished_ms: time,
            }),
        })
    };
    let mut s = SessionSummary::idle(info, None);
    match group {
        Group::NeedsYou => s.pending.push(PendingSummary {
            session: None,
            request: PermissionRequestId(1),
            tool: "bash".into(),
            summary: "run `ls`".into(),
            since_ms: time,
        }),
        Group::Working => s.activity = Activity::Thinking,
        Group::Done => s.run = end(StopReason::Completed),
        Group::Failed => s.run = end(StopReason::Error),
    }
    s
}

fn ids(board: &Board) -> Vec<String> {
    board
        .rows()
        .iter()
        .map(|row| match row {
            Row::Heading(group, n) => format!("{}:{n}", group.as_str()),
            Row::Session(id, depth) => format!("{}{}", "-".repeat(*depth), id.0),
        })
        .collect()
}

#[test]
fn groups_come_in_order_with_working_children_under_their_parent() {
    let mut board = Board::default();
    board.apply(
        vec![
            summary("done1", None, Group::Done, 10),
            summary("done2", None, Group::Done, 20),
            summary("ask2", None, Group::NeedsYou, 40),
            summary("ask1", None, Group::NeedsYou, 30),
            summary("fail", None, Group::Failed, 5),
            summary("parent", None, Group::Done, 1),
            summary("child", Some("parent"), Group::Working, 2),
            summary("old-child", Some("parent"), Group::Done, 3),
        ],
        &[],
        true,
    );
    // A parent whose subagent works is working; finished subagents are not shown.
    assert_eq!(
        ids(&board),
        [
            "needs_you:2",
            "ask1",
            "ask2",
            "working:1",
            "parent",
            "-child",
            "done:2",
            "done2",
            "done1",
            "failed:1",
            "fail"
        ]
    );
    // It opens on the oldest request.
    assert_eq!(board.selected().unwrap().0, "ask1");
    board.move_selection(100);
    assert_eq!(board.selected().unwrap().0, "fail");
    board.filter = "DONE".to_string();
    board.arrange();
    assert_eq!(ids(&board), ["done:2", "done2", "done1"]);
    assert_eq!(board.selected().unwrap().0, "done2");
}

#[test]
fn only_requests_that_come_after_the_board_opened_ring() {
    let mut board = Board::default();
    let rang = board.apply(vec![summary("a", None, Group::NeedsYou, 1)], &[], true);
    assert!(rang.is_empty());
    let rang = board.apply(vec![summary("b", None, Group::NeedsYou, 2)], &[], false);
    assert_eq!(rang, [SessionId("b".into())]);
    // The same request again rings nothing; a deleted session leaves the board.
    let rang = board.apply(
        vec![summary("b", None, Group::NeedsYou, 2)],
        &[SessionId("a".into())],
        false,
    );
    assert!(rang.is_empty());
    assert_eq!(ids(&board), ["needs_you:1", "b"]);
    // Too soon after it showed up to be answered by a key.
    assert!(matches!(board.answerable(), Some(Err(_))));
}

#[test]
fn a_row_counts_the_steps_of_the_plan_done() {
    let mut s = summary("p", None, Group::Done, 1);
    assert_eq!(super::describe::plan(&s), None);
    s.plan = Some(protocol::PlanCount { done: 3, total: 7 });
    assert_eq!(super::describe::plan(&s).as_deref(), Some("plan 3/7"));
}

#[test]
fn a_row_counts_the_running_background_shells() {
    let mut s = summary("p", None, Group::Done, 1);
    assert_eq!(super::describe::shells(&s), None);
    s.shells = 2;
    assert_eq!(super::describe::shells(&s).as_deref(), Some("2 shells"));
}

#[test]
fn a_narrow_row_keeps_the_plan_and_the_shells_whole() {
    let mut s = summary("4014c02e", None, Group::Done, 1);
    s.info.title = Some("start a server and fetch it".into());
    s.info.model = Some("fake".into());
    if let Some(run) = &mut s.run {
        run.turn = 7;
        run.usage.output = 105;
    }
    s.plan = Some(protocol::PlanCount { done: 2, total: 3 });
    s.shells = 1;
    let ui = super::ui::Ui {
        prompt: super::ui::Prompt::None,
        message: None,
        offset: 0,
        color: false,
    };
    for width in [60, 80, 120] {
        let line = super::render::session_line(&s, 0, true, width, &ui, 12_001);
        let text: String = line
            .spans
            .iter()
            .map(|span| span.content.as_ref())
            .collect();
        assert!(text.contains("· plan 2/3 · 1 shell"), "{width}: {text}");
        assert!(
            unicode_width::UnicodeWidthStr::width(text.as_str()) <= width,
            "{text}"
        );
    }
}
