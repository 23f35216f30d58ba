use protocol::{
    Activity, Group, PendingSummary, PermissionRequestId, RunEnd, RunId, RunSummary, SessionId,
    SessionInfo, SessionState, SessionSummary, StopReason,
};

use super::arrange::{Key, Row};
use super::model::Board;

fn summary(id: &str, parent: Option<&str>, group: Group, time: u64) -> SessionSummary {
    let info = SessionInfo {
        title: Some(format!("title {id}")),
        state: if group == Group::Working {
            SessionState::Running
        } else {
            SessionState::Idle
        },
        created_ms: time,
        last_activity_ms: time,
        parent: parent.map(|p| SessionId(p.to_string())),
        ..SessionInfo::idle(SessionId(id.to_string()), format!("/work/{id}"))
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
            Row::Session(key, depth) => format!("{}{}", "-".repeat(*depth), key.id.0),
            Row::Unreachable(host) => format!("unreachable:{host}"),
        })
        .collect()
}

#[test]
fn groups_come_in_order_with_working_children_under_their_parent() {
    let mut board = Board::new(vec!["local".into()]);
    board.apply(
        0,
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
    assert_eq!(board.selected().unwrap().id.0, "ask1");
    board.move_selection(100);
    assert_eq!(board.selected().unwrap().id.0, "fail");
    board.filter = "DONE".to_string();
    board.arrange();
    assert_eq!(ids(&board), ["done:2", "done2", "done1"]);
    assert_eq!(board.selected().unwrap().id.0, "done2");
}

#[test]
fn only_requests_that_come_after_the_board_opened_ring() {
    let mut board = Board::new(vec!["local".into()]);
    let rang = board.apply(0, vec![summary("a", None, Group::NeedsYou, 1)], &[], true);
    assert!(rang.is_empty());
    let rang = board.apply(0, vec![summary("b", None, Group::NeedsYou, 2)], &[], false);
    assert_eq!(rang, [Key::new(0, SessionId("b".into()))]);
    // The same request again rings nothing; a deleted session leaves the board.
    let rang = board.apply(
        0,
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
        let line = super::render::session_line(&s, None, 0, true, width, &ui, 12_001);
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

#[test]
fn the_same_id_on_two_hosts_is_two_sessions_each_answered_on_its_host() {
    let mut board = Board::new(vec!["local".into(), "build".into()]);
    board.apply(0, vec![summary("same", None, Group::Done, 5)], &[], true);
    // Not open before every host was heard from.
    assert!(!board.ready());
    board.apply(
        1,
        vec![summary("same", None, Group::NeedsYou, 9)],
        &[],
        true,
    );
    assert!(board.ready());
    assert_eq!(ids(&board), ["needs_you:1", "same", "done:1", "same"]);
    assert_eq!(
        board.selected(),
        Some(&Key::new(1, SessionId("same".into())))
    );
    std::thread::sleep(super::model::ANSWER_GUARD);
    let Some(Ok((asker, _))) = board.answerable() else {
        panic!("nothing to answer")
    };
    assert_eq!(asker, Key::new(1, SessionId("same".into())));
    // A deletion on one host leaves the other's session.
    board.apply(1, Vec::new(), &[SessionId("same".into())], false);
    assert_eq!(ids(&board), ["done:1", "same"]);
    // The filter matches the host's name.
    board.apply(1, vec![summary("other", None, Group::Done, 7)], &[], false);
    board.filter = "build".into();
    board.arrange();
    assert_eq!(ids(&board), ["done:1", "other"]);
}

#[test]
fn an_unreachable_host_is_a_line_of_its_own_and_its_sessions_leave_until_it_is_back() {
    let mut board = Board::new(vec!["local".into(), "build".into()]);
    board.apply(0, vec![summary("mine", None, Group::Done, 5)], &[], true);
    board.unreachable(1, "ssh ended before a daemon answered".into());
    // A host found unreachable counts as heard from: the board opens.
    assert!(board.ready());
    assert_eq!(ids(&board), ["unreachable:1", "done:1", "mine"]);
    assert_eq!(
        board.selected(),
        Some(&Key::new(0, SessionId("mine".into())))
    );
    // Its first summaries once back do not ring, and its line goes.
    let rang = board.apply(1, vec![summary("far", None, Group::NeedsYou, 1)], &[], true);
    assert!(rang.is_empty());
    assert_eq!(ids(&board), ["needs_you:1", "far", "done:1", "mine"]);
    board.unreachable(1, "the link closed".into());
    assert_eq!(ids(&board), ["unreachable:1", "done:1", "mine"]);
}

#[test]
fn with_several_hosts_each_row_names_its_host_within_80_columns() {
    let mut s = summary("4014c02e-long-id", None, Group::Working, 1);
    s.info.title = Some("a title that goes on and on and on and on".into());
    let ui = super::ui::Ui::default();
    for width in [60, 80, 120] {
        let host = Some("build-box ".to_string());
        let line = super::render::session_line(&s, host, 0, false, width, &ui, 2_000);
        let text: String = line
            .spans
            .iter()
            .map(|span| span.content.as_ref())
            .collect();
        assert!(text.starts_with("  build-box  4014c02e "), "{text}");
        assert!(
            unicode_width::UnicodeWidthStr::width(text.as_str()) <= width,
            "{text}"
        );
    }
}

#[test]
fn a_letter_with_ctrl_is_not_the_letter() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut ui = super::ui::Ui::default();
    let selected = Key::new(0, SessionId("s".into()));
    let ctrl_d = KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL);
    assert_eq!(ui.key(ctrl_d, Some(&selected)), super::ui::Action::None);
    assert_eq!(ui.prompt, super::ui::Prompt::None);
    let ctrl_y = KeyEvent::new(KeyCode::Char('y'), KeyModifiers::CONTROL);
    assert_eq!(ui.key(ctrl_y, Some(&selected)), super::ui::Action::None);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(ui.key(ctrl_c, Some(&selected)), super::ui::Action::Quit);
}
