//! Runs that survive the daemon (docs/architecture.md#resume): after `kill -9` the next daemon goes
//! on with each run that was going, by itself. A model reply cut mid-stream is asked again from the
//! same history; a command under way is never run twice; a permission request is asked again; a run
//! interrupted twice within a minute stops; resuming can be turned off.

use protocol::{Decision, Event, Request, ResumeReason, SessionEvent, SessionId, StopReason};
use serde_json::json;
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::restart::{after_restart, provider_env, resumed};
use tests::{
    Daemon, Home, TestEnv, next_event, run_options, session_in, start_run, subscribe, tool_results,
    until_finished,
};

fn finished(events: &[SessionEvent]) -> (StopReason, Option<String>, u32) {
    match &tests::finished(events) {
        Event::RunFinished {
            stop_reason,
            error,
            turns,
            ..
        } => (*stop_reason, error.clone(), *turns),
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn a_run_killed_during_a_command_goes_on_without_running_it_again() {
    let project = tempfile::tempdir().unwrap();
    let started = project.path().join("started");
    tests::make_fifo(&started);
    std::fs::write(project.path().join("notes.txt"), "note\n").unwrap();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .tool("read", json!({"path": "notes.txt"}))
            .tool(
                "bash",
                json!({"command": "echo ran >> runs; echo $$ > started; sleep 30"}),
            )
            .tool("glob", json!({"pattern": "*.txt"}))
            .build(),
        anthropic::text("Picking up again."),
    ])
    .await;
    let mut daemon = Daemon::start_with(Home::new(), &provider_env(&server));
    let (client, session, _incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "work", run_options(&server)).await;
    let pgid = tests::read_fifo(&started).await;
    daemon.kill();
    // SAFETY: killpg has no memory-safety preconditions.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    daemon.restart();

    let events = after_restart(&daemon, &session).await;
    assert_eq!(resumed(&events), [ResumeReason::Crash]);
    let (stop, error, turns) = finished(&events);
    assert_eq!(stop, StopReason::Completed, "{error:?}");
    assert_eq!(turns, 2, "the run kept its turn count");
    let results = tool_results(&events);
    let names: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    // The read finished before the stop; the glob had not begun and runs now.
    assert_eq!(names, ["read", "bash", "glob"]);
    assert!(results[1].1);
    assert!(
        results[1]
            .2
            .contains("stopped while this call ran; it was not run again"),
        "{}",
        results[1].2
    );
    assert!(!results[2].1);
    let runs = std::fs::read_to_string(project.path().join("runs")).unwrap();
    assert_eq!(runs, "ran\n", "the command ran once");
    // The model sees each call with its result.
    let second = &server.wait_for_requests(2).await[1].body;
    let results = second["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r["type"] == "tool_result"));
}

#[tokio::test]
async fn a_reply_cut_mid_stream_is_asked_again_from_the_same_history() {
    let gate = Gate::new();
    let mut env = TestEnv::builder()
        .provider_in_daemon()
        .model(vec![
            anthropic::text("A partial answer that").hold_after(4, &gate),
            anthropic::text("Fresh."),
        ])
        .start()
        .await;
    env.start_run("question").await;
    while !matches!(
        next_event(&mut env.incoming).await.event,
        Event::TextDelta { .. }
    ) {}
    env.daemon.kill();
    gate.release();
    env.daemon.restart();

    let events = after_restart(&env.daemon, &env.session).await;
    assert_eq!(finished(&events).0, StopReason::Completed);
    let answers: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::AssistantMessage { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answers, ["Fresh."], "no partial text is kept");
    let received = env.server.wait_for_requests(2).await;
    assert_eq!(
        received[0].body["messages"], received[1].body["messages"],
        "the model sees what it saw: no synthetic message"
    );
}

#[tokio::test]
async fn a_pending_permission_request_is_asked_again_and_answered_from_another_client() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "touch done"})),
        anthropic::text("Touched."),
    ])
    .await;
    let mut daemon = Daemon::start_with(Home::new(), &provider_env(&server));
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let mut options = run_options(&server);
    options.grants.clear();
    options.deny_unanswered = false;
    start_run(&client, &session, "touch it", options).await;
    let first = loop {
        if let Event::PermissionRequested { request, .. } = next_event(&mut incoming).await.event {
            break request;
        }
    };
    daemon.kill();
    daemon.restart();

    let mut other = daemon.client().await;
    subscribe(&other, &session, 0).await;
    let mut incoming = other.take_incoming().unwrap();
    let mut seen_resume = false;
    let again = loop {
        match next_event(&mut incoming).await.event {
            Event::RunResumed { .. } => seen_resume = true,
            Event::PermissionRequested { request, .. } if seen_resume => break request,
            _ => {}
        }
    };
    assert_ne!(again, first);
    other
        .request(Request::Answer {
            session: session.clone(),
            request: again,
            decision: Decision::Allow,
        })
        .await
        .unwrap();
    let events = until_finished(&mut incoming).await;
    assert_eq!(finished(&events).0, StopReason::Completed);
    assert!(project.path().join("done").exists());
}

#[tokio::test]
async fn a_run_interrupted_twice_within_a_minute_stops() {
    let project = tempfile::tempdir().unwrap();
    let (one, two) = (project.path().join("one"), project.path().join("two"));
    tests::make_fifo(&one);
    tests::make_fifo(&two);
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "echo $$ > one; sleep 30"})),
        anthropic::tool("bash", json!({"command": "echo $$ > two; sleep 30"})),
        anthropic::text("never"),
    ])
    .await;
    let mut daemon = Daemon::start_with(Home::new(), &provider_env(&server));
    let (client, session, _incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "work", run_options(&server)).await;
    tests::read_fifo(&one).await;
    daemon.kill();
    daemon.restart();
    // Resumed: the first command is answered, the second begins.
    tests::read_fifo(&two).await;
    daemon.kill();
    daemon.restart();

    let events = after_restart(&daemon, &session).await;
    assert_eq!(resumed(&events), [ResumeReason::Crash]);
    let (stop, error, _) = finished(&events);
    assert_eq!(stop, StopReason::Error);
    assert!(error.unwrap().contains("interrupted twice within a minute"));
}

#[tokio::test]
async fn resuming_off_for_a_session_leaves_the_run_stopped() {
    let project = tempfile::tempdir().unwrap();
    let started = project.path().join("started");
    tests::make_fifo(&started);
    let server = ModelServer::start(vec![anthropic::tool(
        "bash",
        json!({"command": "echo $$ > started; sleep 30"}),
    )])
    .await;
    let mut daemon = Daemon::start_with(Home::new(), &provider_env(&server));
    let (client, session, _incoming) = session_in(&daemon, project.path()).await;
    client
        .request(Request::SetResume {
            session: session.clone(),
            resume: false,
        })
        .await
        .unwrap();
    start_run(&client, &session, "work", run_options(&server)).await;
    tests::read_fifo(&started).await;
    daemon.kill();
    daemon.restart();

    let events = after_restart(&daemon, &session).await;
    assert!(resumed(&events).is_empty());
    let (stop, error, _) = finished(&events);
    assert_eq!(stop, StopReason::Error);
    assert_eq!(error.as_deref(), Some("the daemon stopped during this run"));
    assert_eq!(server.received().len(), 1);
}

/// A session left by a daemon that died while two reads of one reply ran: the reply is stored,
/// both calls were announced, neither has a result.
fn session_killed_during_reads(home: &Home, cwd: &std::path::Path) {
    use agentd::conversation::{AssistantReply, Block, Message, ToolCall};
    use agentd::store::{Meta, Record, SessionStore};
    use protocol::{Delivery, ModelStopReason, RunId, RunOptions, TokenUsage, ToolCallInfo};
    let sessions = home.paths().sessions_dir();
    let meta = Meta::new("reads01", &cwd.to_string_lossy());
    SessionStore::create(&sessions, &meta, &[], false).unwrap();
    // The journal of runs going names it.
    std::fs::write(home.paths().data_dir.join("running.log"), "+ reads01 1\n").unwrap();
    let mut store = SessionStore::open(&sessions.join("reads01")).unwrap();
    let calls: Vec<ToolCall> = ["a.txt", "b.txt"]
        .iter()
        .enumerate()
        .map(|(i, path)| ToolCall {
            id: format!("toolu_{i}"),
            name: "read".into(),
            args: json!({"path": path}).to_string(),
        })
        .collect();
    let event = |seq: u64, event: Event| Record::Event {
        seq,
        time_ms: seq,
        event,
    };
    let records = vec![
        Record::Run {
            run: RunId(1),
            options: RunOptions::default(),
        },
        event(
            1,
            Event::RunStarted {
                run: RunId(1),
                trigger: Delivery::FollowUp,
                max_turns: 10,
                model: "claude-sonnet-4-5".into(),
                provider: "anthropic".into(),
            },
        ),
        Record::Message {
            message: Message::User {
                text: "read both".into(),
                delivery: Delivery::FollowUp,
                images: Vec::new(),
            },
        },
        event(
            2,
            Event::UserMessage {
                text: "read both".into(),
                delivery: Delivery::FollowUp,
                images: Vec::new(),
            },
        ),
        Record::Message {
            message: Message::Assistant(AssistantReply {
                content: calls.iter().cloned().map(Block::ToolCall).collect(),
                stop_reason: ModelStopReason::ToolUse,
                usage: TokenUsage::default(),
            }),
        },
        event(
            3,
            Event::AssistantMessage {
                turn: 1,
                text: String::new(),
                thinking: String::new(),
                tool_calls: calls
                    .iter()
                    .map(ToolCall::info)
                    .collect::<Vec<ToolCallInfo>>(),
                stop_reason: ModelStopReason::ToolUse,
                folds: None,
            },
        ),
        event(4, Event::ToolCall(calls[0].info())),
        event(5, Event::ToolCall(calls[1].info())),
    ];
    for record in &records {
        store.append(record).unwrap();
    }
}

#[tokio::test]
async fn reads_under_way_when_the_daemon_died_run_again() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(project.path().join("b.txt"), "beta\n").unwrap();
    let server = ModelServer::start(vec![anthropic::text("Both read.")]).await;
    let home = Home::new();
    session_killed_during_reads(&home, project.path());
    let daemon = Daemon::start_with(home, &provider_env(&server));
    // Nobody asks for the session: the daemon loads it and goes on by itself.
    server.wait_for_requests(1).await;
    let events = after_restart(&daemon, &SessionId("reads01".into())).await;
    assert_eq!(resumed(&events), [ResumeReason::Crash]);
    let (stop, error, turns) = finished(&events);
    assert_eq!(stop, StopReason::Completed, "{error:?}");
    assert_eq!(turns, 2);
    let results = tool_results(&events);
    assert_eq!(results.len(), 2);
    // They ran in parallel again: results come as they finish.
    assert!(results.iter().any(|r| r.2.contains("alpha")), "{results:?}");
    assert!(results.iter().any(|r| r.2.contains("beta")), "{results:?}");
    assert!(results.iter().all(|r| !r.1));
}

#[tokio::test]
async fn a_run_its_log_leaves_open_but_the_journal_does_not_name_is_closed_not_resumed() {
    let gate = Gate::new();
    let mut env = TestEnv::builder()
        .provider_in_daemon()
        .model(vec![
            anthropic::text("A partial answer that").hold_after(4, &gate),
            anthropic::text("Never asked."),
        ])
        .start()
        .await;
    env.start_run("question").await;
    while !matches!(
        next_event(&mut env.incoming).await.event,
        Event::TextDelta { .. }
    ) {}
    env.daemon.kill();
    gate.release();
    // The journal is gone (or never had the run): the log alone does not resume it.
    std::fs::remove_file(env.daemon.paths().data_dir.join("running.log")).unwrap();
    env.daemon.restart();

    let events = after_restart(&env.daemon, &env.session).await;
    assert!(resumed(&events).is_empty());
    let (stop, error, _) = finished(&events);
    assert_eq!(stop, StopReason::Error);
    assert!(error.unwrap().contains("the daemon stopped"));
    assert_eq!(
        env.server.received().len(),
        1,
        "the model is not asked again"
    );
}
