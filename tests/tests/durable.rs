//! Durable sessions: they outlive daemon restarts and crashes (`kill -9` anywhere), a torn last
//! record, and a failing session actor; the configuration reloads live; the stale-file guard.

use agentctl::client::Client;
use protocol::{Event, Reply, Request, SessionEvent, SessionId, SessionState, StopReason};
use serde_json::json;
use tests::model_server::{Gate, ModelServer, Scripted, anthropic};
use tests::{
    Daemon, Home, TestEnv, create_session, next_event, run_options, session_in, start_run,
    subscribe, tool_results, until_finished,
};

async fn history(client: &Client, session: &SessionId) -> Vec<SessionEvent> {
    client.history(session).await.unwrap().1
}

/// Loads every session and checks that its log accounts for every `seq` and answers every
/// permission request.
async fn account_for_every_seq(daemon: &Daemon) {
    let client = daemon.client().await;
    for session in client.list_sessions().await.unwrap().sessions {
        client.history(&session.id).await.unwrap();
    }
    tests::assert_logs_account_for_every_seq(&daemon.home);
}

/// Every tool call has a result, every run a finish, and sequence numbers only go up.
fn assert_consistent(events: &[SessionEvent]) {
    let mut open_calls: Vec<String> = Vec::new();
    let mut open_runs = 0;
    let mut last = 0;
    for event in events {
        assert!(event.seq > last, "seq {} after {last}", event.seq);
        last = event.seq;
        match &event.event {
            Event::AssistantMessage { tool_calls, .. } => {
                assert!(
                    open_calls.is_empty(),
                    "calls without results: {open_calls:?}"
                );
                open_calls = tool_calls.iter().map(|c| c.id.clone()).collect();
            }
            Event::ToolResult { id, .. } => open_calls.retain(|c| c != id),
            Event::RunStarted { .. } => open_runs += 1,
            Event::RunFinished { .. } => {
                assert!(
                    open_calls.is_empty(),
                    "a run ended with calls unanswered: {open_calls:?}"
                );
                open_runs -= 1;
            }
            _ => {}
        }
    }
    assert_eq!(open_runs, 0, "a run was never finished");
}

/// Every line of the session's log is a whole JSON record.
fn assert_log_parses(daemon: &Daemon, session: &SessionId) -> usize {
    let log = daemon
        .paths()
        .data_dir
        .join("sessions")
        .join(session.as_str())
        .join("log.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.ends_with('\n'), "the log ends with a whole line");
    for line in text.lines() {
        let record: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(record["kind"].is_string(), "{line}");
    }
    text.lines().count()
}

fn finished_of(events: &[SessionEvent]) -> Vec<(StopReason, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::RunFinished {
                stop_reason, error, ..
            } => Some((*stop_reason, error.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_session_and_its_history_survive_a_restart_and_can_be_resumed() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "alpha\n").unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "a.txt"})),
        anthropic::text("It says alpha."),
        anthropic::text("You asked about a.txt."),
    ])
    .await;
    let mut daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "what is in a.txt?", run_options(&server)).await;
    until_finished(&mut incoming).await;
    let before = history(&client, &session).await;
    drop((client, incoming));
    assert!(daemon.terminate());

    daemon.restart();
    let listed = daemon.home.run_agentctl(&["sessions", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["id"], session.as_str());
    assert_eq!(listed[0]["turns"], 2);

    let client = daemon.client().await;
    let after = history(&client, &session).await;
    assert_eq!(after, before, "the replayed history is the same");
    let continued = daemon
        .home
        .agentctl_with(
            &server,
            project.path(),
            &["run", "--continue", "what did I ask?"],
        )
        .output()
        .await
        .unwrap();
    assert!(continued.status.success());
    let messages = server.received()[2].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        messages.len(),
        5,
        "the model sees the whole stored history: {messages:?}"
    );
    assert_eq!(messages[0]["content"][0]["text"], "what is in a.txt?");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[4]["content"][0]["text"], "what did I ask?");
    account_for_every_seq(&daemon).await;
}

#[tokio::test]
async fn with_resuming_off_kill_9_during_a_tool_batch_closes_the_run_on_restart() {
    let project = tempfile::tempdir().unwrap();
    let fifo = project.path().join("started");
    tests::make_fifo(&fifo);
    std::fs::write(project.path().join("notes.txt"), "note\n").unwrap();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .tool("read", json!({"path": "notes.txt"}))
            .tool("bash", json!({"command": "echo $$ > started; sleep 30"}))
            .build(),
        anthropic::text("Picking up again."),
    ])
    .await;
    let mut daemon = Daemon::start_in(Home::with_config("resume_interrupted = false\n"));
    let (client, session, incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "work", run_options(&server)).await;
    // bash writes its pid into the FIFO, which blocks until this read: bash is running.
    let text = tokio::task::spawn_blocking({
        let fifo = fifo.clone();
        move || std::fs::read_to_string(fifo)
    });
    let pgid: i32 = tokio::time::timeout(tests::WAIT, text)
        .await
        .unwrap()
        .unwrap()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    drop(incoming);
    daemon.kill();
    // SAFETY: killpg has no memory-safety preconditions.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };

    daemon.restart();
    let client = daemon.client().await;
    let events = history(&client, &session).await;
    assert_consistent(&events);
    let results = tool_results(&events);
    assert_eq!(results[0].0, "read");
    assert!(!results[0].1, "the finished read keeps its result");
    assert_eq!(
        results[1],
        (
            "bash".into(),
            true,
            "(interrupted: the daemon stopped)".into()
        )
    );
    assert_eq!(
        finished_of(&events),
        vec![(
            StopReason::Error,
            Some("the daemon stopped during this run".into())
        )]
    );
    assert_log_parses(&daemon, &session);

    // Resumable: the next run sends a history the provider accepts.
    subscribe(&client, &session, 0).await;
    let reply = client
        .request(Request::Send {
            session: session.clone(),
            text: "go on".into(),
            images: Vec::new(),
            delivery: protocol::Delivery::FollowUp,
            options: run_options(&server),
        })
        .await
        .unwrap();
    assert!(matches!(reply, Reply::Sent { started: Some(_) }));
    let received = server.wait_for_requests(2).await;
    let messages = received[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(
        messages[1]["content"].as_array().unwrap().len(),
        2,
        "two tool_use blocks"
    );
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][1]["type"], "tool_result");
    account_for_every_seq(&daemon).await;
}

#[tokio::test]
async fn with_resuming_off_kill_9_during_a_model_stream_keeps_no_partial_reply_and_the_queue() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::text("A partial answer that").hold_after(4, &gate),
        anthropic::text("Fresh."),
        anthropic::text("And the queued one."),
    ])
    .await;
    let mut daemon = Daemon::start_in(Home::with_config("resume_interrupted = false\n"));
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "first", run_options(&server)).await;
    loop {
        if let Event::TextDelta { .. } = next_event(&mut incoming).await.event {
            break;
        }
    }
    let queued = client
        .request(Request::Send {
            session: session.clone(),
            text: "queued before the crash".into(),
            images: Vec::new(),
            delivery: protocol::Delivery::FollowUp,
            options: Default::default(),
        })
        .await
        .unwrap();
    assert_eq!(queued, Reply::Sent { started: None });
    loop {
        if let Event::QueueChanged { .. } = next_event(&mut incoming).await.event {
            break;
        }
    }
    daemon.kill();
    gate.release();

    daemon.restart();
    let mut client = daemon.client().await;
    let events = history(&client, &session).await;
    assert_consistent(&events);
    assert!(!events.iter().any(|e| matches!(
        e.event,
        Event::AssistantMessage { .. } | Event::TextDelta { .. }
    )));
    assert_eq!(
        finished_of(&events),
        vec![(
            StopReason::Error,
            Some("the daemon stopped during this run".into())
        )]
    );
    let info = subscribe(&client, &session, events.last().unwrap().seq).await;
    assert_eq!(
        (info.state, info.follow_up_queued),
        (SessionState::Idle, 1),
        "the queue is kept"
    );
    assert_log_parses(&daemon, &session);

    // The next message runs, and the kept follow-up is delivered in the same run.
    let mut incoming = client.take_incoming().unwrap();
    start_run(&client, &session, "again", run_options(&server)).await;
    loop {
        if let Event::RunFinished {
            stop_reason, error, ..
        } = next_event(&mut incoming).await.event
        {
            assert_eq!(stop_reason, StopReason::Completed, "{error:?}");
            break;
        }
    }
    let received = server.received();
    let last = received.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        last.last().unwrap()["content"][0]["text"],
        "queued before the crash"
    );
    account_for_every_seq(&daemon).await;
}

#[tokio::test]
async fn kill_9_at_any_point_leaves_a_log_that_loads_and_a_run_that_completes() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("f.txt"), "x\n").unwrap();
    // A reply the daemon received but did not store is asked again: one more answer is there.
    let script = || -> Vec<Scripted> {
        vec![
            anthropic::reply()
                .text("Reading both.")
                .tool("read", json!({"path": "f.txt"}))
                .tool("glob", json!({"pattern": "*"}))
                .build(),
            anthropic::reply()
                .tool("bash", json!({"command": "echo hi"}))
                .build(),
            anthropic::reply()
                .tool("write", json!({"path": "out.txt", "content": "done"}))
                .build(),
            anthropic::text("All done."),
            anthropic::text("All done."),
        ]
    };
    let mut daemon = Daemon::start();
    // Kill after the k-th event of the run, for k across the whole run.
    for k in 1..=24 {
        let server = ModelServer::start(script()).await;
        let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
        start_run(&client, &session, "work", run_options(&server)).await;
        let mut seen = 0;
        while seen < k {
            let event = next_event(&mut incoming).await;
            seen += 1;
            if matches!(event.event, Event::RunFinished { .. }) {
                break;
            }
        }
        drop((client, incoming));
        daemon.kill();
        // The next daemon resumes the run against the same server.
        daemon.restart_with(&[
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "test-key"),
        ]);
        let mut client = daemon.client().await;
        subscribe(&client, &session, 0).await;
        let mut incoming = client.take_incoming().unwrap();
        until_finished(&mut incoming).await;
        let events = history(&client, &session).await;
        assert_consistent(&events);
        let finished = finished_of(&events);
        assert_eq!(finished.len(), 1, "k={k}");
        assert_eq!(finished[0].0, StopReason::Completed, "k={k}: {finished:?}");
        assert!(assert_log_parses(&daemon, &session) > 2);
    }
    account_for_every_seq(&daemon).await;
}

#[tokio::test]
async fn a_torn_last_line_is_dropped_and_nothing_else_is_lost() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::text("hello"),
        anthropic::text("still here"),
    ])
    .await;
    let mut daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "hi", run_options(&server)).await;
    until_finished(&mut incoming).await;
    let before = history(&client, &session).await;
    drop((client, incoming));
    assert!(daemon.terminate());
    let log = daemon
        .paths()
        .data_dir
        .join("sessions")
        .join(session.as_str())
        .join("log.jsonl");
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut file, br#"{"kind":"event","seq":99,"time_ms":1,"ev"#).unwrap();
    drop(file);

    daemon.restart();
    let client = daemon.client().await;
    assert_eq!(history(&client, &session).await, before);
    assert_log_parses(&daemon, &session);
    let log_text = std::fs::read_to_string(daemon.paths().log_file()).unwrap();
    assert!(
        log_text.contains("dropping a torn last record"),
        "a warning is logged"
    );
    let mut client = client;
    subscribe(&client, &session, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    start_run(&client, &session, "again", run_options(&server)).await;
    assert!(
        until_finished(&mut incoming)
            .await
            .iter()
            .any(|e| matches!(e.event, Event::AssistantMessage { .. }))
    );
    account_for_every_seq(&daemon).await;
}

#[tokio::test]
async fn a_failing_session_actor_is_restarted_from_its_log_and_its_clients_are_told() {
    let gate = Gate::new();
    let mut env = TestEnv::builder()
        .daemon_env("AGENTD_FAULT_INJECTION", "1")
        .model(vec![
            anthropic::text("first answer"),
            anthropic::text("never finished").hold_after(4, &gate),
            anthropic::text("after the restart"),
        ])
        .start()
        .await;
    env.start_run("one").await;
    until_finished(&mut env.incoming).await;
    env.start_run("two").await;
    loop {
        if let Event::TextDelta { .. } = next_event(&mut env.incoming).await.event {
            break;
        }
    }
    let failed = env
        .client
        .request(Request::Send {
            session: env.session.clone(),
            text: "__agentd_fault_panic__".into(),
            images: Vec::new(),
            delivery: protocol::Delivery::Steer,
            options: Default::default(),
        })
        .await;
    assert!(failed.is_err());
    // The subscription is dropped; the client is told to resubscribe.
    let last_seq = loop {
        match tokio::time::timeout(tests::WAIT, env.incoming.recv())
            .await
            .unwrap()
        {
            Some(agentctl::client::Incoming::Lagged { last_seq, .. }) => break last_seq,
            Some(_) => {}
            None => panic!("closed"),
        }
    };
    subscribe(&env.client, &env.session, last_seq).await;
    let mut told = false;
    loop {
        match next_event(&mut env.incoming).await.event {
            Event::Error { message } => {
                told = message.contains("restarted after an internal error")
            }
            Event::RunFinished {
                stop_reason, error, ..
            } => {
                assert_eq!(stop_reason, StopReason::Error);
                assert_eq!(
                    error.as_deref(),
                    Some("the session restarted after an internal error during this run")
                );
                break;
            }
            _ => {}
        }
    }
    assert!(told);
    gate.release();
    let events = history(&env.client, &env.session).await;
    assert_consistent(&events);
    assert!(events.iter().any(
        |e| matches!(&e.event, Event::AssistantMessage { text, .. } if text == "first answer")
    ));
    let events = env.run("three").await;
    assert!(events.iter().any(
        |e| matches!(&e.event, Event::AssistantMessage { text, .. } if text == "after the restart")
    ));
    account_for_every_seq(&env.daemon).await;
}

#[tokio::test]
async fn a_thousand_stored_sessions_are_listed_after_a_restart_without_loading_them() {
    let mut daemon = Daemon::start();
    let client = daemon.client().await;
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..1000 {
        create_session(&client, dir.path()).await;
    }
    drop(client);
    assert!(daemon.terminate());
    daemon.restart();
    let listed = daemon.home.run_agentctl(&["sessions", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1000);
    let log = std::fs::read_to_string(daemon.paths().log_file()).unwrap();
    assert!(
        log.contains("sessions listed sessions=1000"),
        "listed at start"
    );
}

#[tokio::test]
async fn a_config_change_applies_to_the_next_run_and_a_broken_one_is_kept_out() {
    let home = Home::new();
    let config = home.paths().config_file();
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "model = \"model-a\"\n").unwrap();
    let daemon = Daemon::start_in(home);
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::text("a"),
        anthropic::text("b"),
        anthropic::text("c"),
    ])
    .await;
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "one", run_options(&server)).await;
    until_finished(&mut incoming).await;

    std::fs::write(&config, "model = \"model-b\"\n").unwrap();
    let status = tests::wait_for_config(&client, 2).await;
    assert_eq!(status.config_error, None);
    start_run(&client, &session, "two", run_options(&server)).await;
    until_finished(&mut incoming).await;

    let generation = status.config_generation;
    std::fs::write(&config, "model = \"model-c\"\nmax_turns = \"lots\"\n").unwrap();
    let status = tests::wait_for_config(&client, generation + 1).await;
    let error = status.config_error.expect("the error is shown");
    assert!(error.contains("config.toml:2:"), "{error}");
    let shown = String::from_utf8(daemon.home.run_agentctl(&["daemon", "status"]).stdout).unwrap();
    assert!(
        shown.contains("— the last good configuration is in force"),
        "{shown}"
    );
    let check = daemon.home.run_agentctl(&["config", "check"]);
    assert_eq!(check.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&check.stderr).contains("config.toml:2:"));
    start_run(&client, &session, "three", run_options(&server)).await;
    until_finished(&mut incoming).await;

    let models: Vec<String> = server
        .received()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(models, ["model-a", "model-b", "model-b"]);
}

#[tokio::test]
async fn an_outside_edit_between_read_and_edit_is_reported_and_refused() {
    let setup = TestEnv::builder();
    let file = setup.project().join("lib.rs");
    std::fs::write(&file, "fn a() {}\n").unwrap();
    let gate = Gate::new();
    let mut env = setup
        .model(vec![
            anthropic::tool("read", json!({"path": "lib.rs"})),
            anthropic::tool(
                "edit",
                json!({"path": "lib.rs", "old_string": "fn a", "new_string": "fn b"}),
            )
            .hold_after(0, &gate),
            anthropic::text("I will read it again."),
        ])
        .start()
        .await;
    env.start_run("rename a").await;
    env.server.wait_for_requests(2).await;
    std::fs::write(&file, "fn a() { changed() }\n").unwrap();
    loop {
        if let Event::FileChanged { path } = next_event(&mut env.incoming).await.event {
            assert_eq!(path, "lib.rs");
            break;
        }
    }
    gate.release();
    let results = tool_results(&until_finished(&mut env.incoming).await);
    let edit = results.last().unwrap();
    assert!(edit.1 && edit.0 == "edit");
    assert!(
        edit.2.contains("changed on disk since you last read it"),
        "{}",
        edit.2
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "fn a() { changed() }\n"
    );
}

#[tokio::test]
async fn the_agents_own_writes_are_not_outside_changes() {
    let gate = Gate::new();
    let mut env = TestEnv::builder()
        .file("mine.txt", "one\n")
        .file("theirs.txt", "one\n")
        .model(vec![
            anthropic::reply()
                .tool("read", json!({"path": "mine.txt"}))
                .tool("read", json!({"path": "theirs.txt"}))
                .build(),
            anthropic::tool(
                "edit",
                json!({"path": "mine.txt", "old_string": "one", "new_string": "two"}),
            ),
            anthropic::tool("write", json!({"path": "mine.txt", "content": "three\n"})),
            anthropic::text("done").hold_after(0, &gate),
        ])
        .start()
        .await;
    env.start_run("edit mine").await;
    env.server.wait_for_requests(4).await;
    // An outside change to the other file, after the agent's own writes: its report comes
    // after any report the agent's writes could have caused.
    std::fs::write(env.project().join("theirs.txt"), "changed\n").unwrap();
    let mut changed = Vec::new();
    loop {
        let event = next_event(&mut env.incoming).await;
        if let Event::FileChanged { path } = event.event {
            changed.push(path.clone());
            if path == "theirs.txt" {
                break;
            }
        }
    }
    assert_eq!(changed, ["theirs.txt"]);
    gate.release();
    let results = tool_results(&until_finished(&mut env.incoming).await);
    assert!(results.iter().all(|r| !r.1), "{results:?}");
}

#[tokio::test]
async fn a_permission_request_cancelled_with_its_run_keeps_its_answer_after_a_crash() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::tool(
        "bash",
        serde_json::json!({"command": "touch never"}),
    )])
    .await;
    let mut daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let mut options = run_options(&server);
    options.grants.clear();
    options.deny_unanswered = false;
    start_run(&client, &session, "touch a file", options).await;
    let asked = loop {
        if let Event::PermissionRequested { request, .. } = next_event(&mut incoming).await.event {
            break request;
        }
    };
    client
        .request(Request::Cancel {
            session: session.clone(),
        })
        .await
        .unwrap();
    let events = until_finished(&mut incoming).await;
    assert!(events.iter().any(|e| matches!(
        &e.event,
        Event::PermissionResolved { request, .. } if *request == asked
    )));
    drop(client);
    daemon.kill();
    daemon.restart();
    account_for_every_seq(&daemon).await;
    assert!(!project.path().join("never").exists());
}

#[tokio::test]
async fn an_empty_meta_json_is_reported_not_skipped() {
    let mut daemon = Daemon::start();
    let client = daemon.client().await;
    let project = tempfile::tempdir().unwrap();
    let session = create_session(&client, project.path()).await.id;
    drop(client);
    assert!(daemon.terminate());
    // What an unsynced rename could leave after a power loss.
    let meta = daemon
        .paths()
        .sessions_dir()
        .join(&session.0)
        .join("meta.json");
    std::fs::write(&meta, "").unwrap();
    daemon.restart();
    let output = daemon.home.run_agentctl(&["sessions"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("{}: meta.json is empty", session.0)),
        "{stderr}"
    );
}
