//! Live sessions: attaching mid-run, steering, queueing follow-ups, cancelling with queued
//! messages, answering permission requests from any client, and the permission modes. The
//! scripted server holds replies at gates, so every step waits on an event, not on time.

use protocol::{
    Decision, Delivery, ErrorCode, Event, Mode, QueuedMessage, Reply, Request, RunOptions,
    SessionEvent, SessionId, SessionState, StopReason,
};
use serde_json::json;
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::{
    Daemon, TestEnv, events_until, finished, next_event, session_in, start_run, subscribe,
    tool_results, until_finished,
};

async fn send(
    client: &agentctl::client::Client,
    session: &SessionId,
    text: &str,
    delivery: Delivery,
) -> Reply {
    client
        .request(Request::Send {
            session: session.clone(),
            text: text.into(),
            images: Vec::new(),
            delivery,
            options: RunOptions::default(),
        })
        .await
        .unwrap()
}

async fn wait_for(
    incoming: &mut tokio::sync::mpsc::UnboundedReceiver<agentctl::client::Incoming>,
    kind: &str,
) -> SessionEvent {
    loop {
        let event = next_event(incoming).await;
        if event.event.kind() == kind {
            return event;
        }
    }
}

#[tokio::test]
async fn a_client_attaching_mid_run_sees_the_same_stream_as_the_first() {
    let gate = Gate::new();
    let mut env = TestEnv::builder()
        .file("a.txt", "a\n")
        .model(vec![
            anthropic::reply()
                .text("Looking at the file now.")
                .tool("read", json!({"path": "a.txt"}))
                .build()
                .hold_after(4, &gate),
            anthropic::text("Done."),
        ])
        .start()
        .await;
    env.start_run("look").await;
    let mut seen_first = vec![];
    loop {
        let event = next_event(&mut env.incoming).await;
        let delta = matches!(event.event, Event::TextDelta { .. });
        seen_first.push(event);
        if delta {
            break;
        }
    }
    let mut late = env.daemon.client().await;
    subscribe(&late, &env.session, 0).await;
    let mut second = late.take_incoming().unwrap();
    gate.release();
    seen_first.extend(until_finished(&mut env.incoming).await);
    let seen_second = until_finished(&mut second).await;
    assert_eq!(seen_first, seen_second);
    let seqs: Vec<u64> = seen_second.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_steer_lands_before_the_next_model_call() {
    let gate = Gate::new();
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("glob", json!({"pattern": "*"})).hold_after(2, &gate),
            anthropic::text("Checked the tests too."),
        ])
        .start()
        .await;
    env.start_run("look around").await;
    env.server.wait_for_requests(1).await;
    assert_eq!(
        send(
            &env.client,
            &env.session,
            "also check the tests",
            Delivery::Steer
        )
        .await,
        Reply::Sent { started: None }
    );
    let queued = wait_for(&mut env.incoming, "queue_changed").await;
    assert_eq!(
        queued.event,
        Event::QueueChanged {
            steer: vec!["also check the tests".into()],
            follow_up: vec![],
            steer_images: vec![],
            follow_up_images: vec![],
        }
    );
    gate.release();
    let events = until_finished(&mut env.incoming).await;
    let kinds: Vec<&str> = events.iter().map(|e| e.event.kind()).collect();
    let result = kinds.iter().position(|k| *k == "tool_result").unwrap();
    let steer = kinds.iter().position(|k| *k == "user_message").unwrap();
    let turn2 = kinds.iter().rposition(|k| *k == "turn_started").unwrap();
    assert!(result < steer && steer < turn2, "{kinds:?}");
    let last = env.server.received()[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][1]["text"], "also check the tests");
}

#[tokio::test]
async fn follow_ups_queued_mid_run_run_in_order_in_the_same_run() {
    let gate = Gate::new();
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::text("first").hold_after(3, &gate),
            anthropic::text("second"),
            anthropic::text("third"),
            anthropic::text("fourth"),
        ])
        .start()
        .await;
    let run = env.start_run("start").await;
    env.server.wait_for_requests(1).await;
    for text in ["f1", "f2", "f3"] {
        assert_eq!(
            send(&env.client, &env.session, text, Delivery::FollowUp).await,
            Reply::Sent { started: None }
        );
    }
    gate.release();
    let events = until_finished(&mut env.incoming).await;
    assert_eq!(
        events
            .iter()
            .filter(|e| e.event.kind() == "run_started")
            .count(),
        1
    );
    let Event::RunFinished {
        run: finished_run,
        turns,
        stop_reason,
        ..
    } = finished(&events)
    else {
        unreachable!()
    };
    assert_eq!(
        (*finished_run, *turns, *stop_reason),
        (run, 4, StopReason::Completed)
    );
    let received = env.server.wait_for_requests(4).await;
    for (request, text) in received[1..].iter().zip(["f1", "f2", "f3"]) {
        let messages = request.body["messages"].as_array().unwrap();
        assert_eq!(messages.last().unwrap()["content"][0]["text"], text);
    }
}

#[tokio::test]
async fn cancel_returns_queued_messages_and_loses_nothing() {
    let gate = Gate::new();
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::text("thinking about it").hold_after(3, &gate),
            anthropic::text("new run"),
        ])
        .start()
        .await;
    env.start_run("start").await;
    env.server.wait_for_requests(1).await;
    send(&env.client, &env.session, "s1", Delivery::Steer).await;
    send(&env.client, &env.session, "f1", Delivery::FollowUp).await;
    env.cancel().await;
    let events = until_finished(&mut env.incoming).await;
    let Event::RunFinished {
        stop_reason,
        returned_messages,
        ..
    } = finished(&events)
    else {
        unreachable!()
    };
    assert_eq!(*stop_reason, StopReason::Aborted);
    assert_eq!(
        returned_messages,
        &vec![
            QueuedMessage {
                text: "s1".into(),
                delivery: Delivery::Steer,
                images: vec![],
            },
            QueuedMessage {
                text: "f1".into(),
                delivery: Delivery::FollowUp,
                images: vec![],
            },
        ]
    );
    // The queue entries stay in the session's history.
    let (info, history) = env.client.history(&env.session).await.unwrap();
    assert!(history.iter().any(|e| e.event
        == Event::QueueChanged {
            steer: vec!["s1".into()],
            follow_up: vec!["f1".into()],
            steer_images: vec![],
            follow_up_images: vec![],
        }));
    assert_eq!(
        (info.state, info.steer_queued, info.follow_up_queued),
        (SessionState::Idle, 0, 0)
    );
    gate.release();
    // Nothing left behind: the next message starts a fresh run.
    env.start_run("again").await;
    assert!(matches!(
        finished(&until_finished(&mut env.incoming).await),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            ..
        }
    ));
}

#[tokio::test]
async fn the_first_answer_to_a_permission_request_wins_and_everyone_is_told() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", json!({"command": "echo hi > made.txt"})),
            anthropic::text("made it"),
        ])
        .start()
        .await;
    let mut second = env.daemon.client().await;
    subscribe(&second, &env.session, 0).await;
    let mut second_events = second.take_incoming().unwrap();
    env.start_run_with("make a file", tests::asking_options(&env.server))
        .await;
    let asked = wait_for(&mut env.incoming, "permission_requested").await;
    assert_eq!(
        wait_for(&mut second_events, "permission_requested").await,
        asked
    );
    let Event::PermissionRequested {
        request,
        summary,
        tool,
        ..
    } = asked.event
    else {
        unreachable!()
    };
    assert_eq!(
        (tool.as_str(), summary.as_str()),
        ("bash", "run `echo hi > made.txt`")
    );

    second
        .request(Request::Answer {
            session: env.session.clone(),
            request,
            decision: Decision::Allow,
        })
        .await
        .unwrap();
    let late = env
        .client
        .request(Request::Answer {
            session: env.session.clone(),
            request,
            decision: Decision::Deny,
        })
        .await
        .unwrap_err();
    assert_eq!(late.code(), Some(ErrorCode::AlreadyDecided));
    assert!(
        late.to_string().contains("already decided by test #"),
        "{late}"
    );
    for events in [&mut env.incoming, &mut second_events] {
        let resolved = wait_for(events, "permission_resolved").await;
        let Event::PermissionResolved {
            decision,
            by_client,
            ..
        } = resolved.event
        else {
            unreachable!()
        };
        assert_eq!(decision, Decision::Allow);
        assert!(by_client.starts_with("test #"));
    }
    until_finished(&mut env.incoming).await;
    assert!(env.project().join("made.txt").exists());
}

#[tokio::test]
async fn a_pending_request_survives_a_detach_and_is_shown_to_the_next_client() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("write", json!({"path": "x.txt", "content": "x"})),
        anthropic::text("ok"),
    ])
    .await;
    let daemon = Daemon::start();
    let (first, session, mut events) = session_in(&daemon, project.path()).await;
    start_run(&first, &session, "write", tests::asking_options(&server)).await;
    wait_for(&mut events, "permission_requested").await;
    drop(events);
    drop(first);

    let mut next = daemon.client().await;
    let info = subscribe(&next, &session, 0).await;
    assert_eq!(info.state, SessionState::AwaitingApproval);
    let mut replay = next.take_incoming().unwrap();
    let asked = wait_for(&mut replay, "permission_requested").await;
    let Event::PermissionRequested { request, .. } = asked.event else {
        unreachable!()
    };
    next.request(Request::Answer {
        session: session.clone(),
        request,
        decision: Decision::Deny,
    })
    .await
    .unwrap();
    let events = until_finished(&mut replay).await;
    assert_eq!(
        tool_results(&events)[0].2,
        "denied: the user did not allow this call"
    );
    assert!(!project.path().join("x.txt").exists());
}

#[tokio::test]
async fn allow_always_remembers_the_command_prefix_for_the_session() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", json!({"command": "ls -a"})),
            anthropic::tool("bash", json!({"command": "ls ."})),
            anthropic::text("listed"),
        ])
        .start()
        .await;
    env.start_run_with("list", tests::asking_options(&env.server))
        .await;
    let Event::PermissionRequested { request, .. } =
        wait_for(&mut env.incoming, "permission_requested")
            .await
            .event
    else {
        unreachable!()
    };
    env.client
        .request(Request::Answer {
            session: env.session.clone(),
            request,
            decision: Decision::AllowAlways,
        })
        .await
        .unwrap();
    let events = until_finished(&mut env.incoming).await;
    assert!(
        !events
            .iter()
            .any(|e| e.event.kind() == "permission_requested"),
        "the second ls was not asked"
    );
    assert!(tool_results(&events).iter().all(|r| !r.1));
}

#[tokio::test]
async fn plan_mode_writes_the_plan_file_without_asking_and_asks_for_other_writes() {
    let mut env = TestEnv::builder().mode(Mode::Plan).start().await;
    let plan = env
        .daemon
        .paths()
        .data_dir
        .join("plans")
        .join(format!("{}.md", env.session));
    env.server.push(vec![
        anthropic::tool(
            "write",
            json!({"path": plan.to_string_lossy(), "content": "1. do it"}),
        ),
        anthropic::tool("write", json!({"path": "src.txt", "content": "code"})),
        anthropic::text("Plan written."),
    ]);
    env.start_run_with("plan it", tests::asking_options(&env.server))
        .await;
    let Event::PermissionRequested {
        request, summary, ..
    } = wait_for(&mut env.incoming, "permission_requested")
        .await
        .event
    else {
        unreachable!()
    };
    assert_eq!(summary, "write src.txt (1 lines)");
    env.client
        .request(Request::Answer {
            session: env.session.clone(),
            request,
            decision: Decision::Deny,
        })
        .await
        .unwrap();
    until_finished(&mut env.incoming).await;
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "1. do it");
    assert!(!env.project().join("src.txt").exists());
    let system = env.server.received()[0].body["system"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("Plan mode is active") && system.contains(&plan.display().to_string()),
        "{system}"
    );
}

#[tokio::test]
async fn accept_edits_writes_inside_the_directory_and_asks_outside() {
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().join("out.txt");
    let mut env = TestEnv::builder()
        .mode(Mode::AcceptEdits)
        .model(vec![
            anthropic::tool("write", json!({"path": "in.txt", "content": "in"})),
            anthropic::tool(
                "write",
                json!({"path": outside.to_string_lossy(), "content": "out"}),
            ),
            anthropic::tool("bash", json!({"command": "true"})),
            anthropic::text("done"),
        ])
        .start()
        .await;
    env.start_run_with("write", tests::asking_options(&env.server))
        .await;
    let mut asked = vec![];
    loop {
        let event = next_event(&mut env.incoming).await;
        match event.event {
            Event::PermissionRequested {
                request, summary, ..
            } => {
                asked.push(summary);
                env.client
                    .request(Request::Answer {
                        session: env.session.clone(),
                        request,
                        decision: Decision::Deny,
                    })
                    .await
                    .unwrap();
            }
            Event::RunFinished { .. } => break,
            _ => {}
        }
    }
    assert_eq!(
        asked,
        vec![
            format!("write {} (1 lines)", outside.display()),
            "run `true`".to_string()
        ]
    );
    assert!(env.project().join("in.txt").exists());
    assert!(!outside.exists());
}

#[tokio::test]
async fn switching_the_mode_mid_session_changes_what_asks() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("write", json!({"path": "a.txt", "content": "a"})),
            anthropic::text("ok"),
        ])
        .start()
        .await;
    env.client
        .request(Request::SetMode {
            session: env.session.clone(),
            mode: Mode::AcceptEdits,
        })
        .await
        .unwrap();
    assert_eq!(
        next_event(&mut env.incoming).await.event,
        Event::ModeChanged {
            mode: Mode::AcceptEdits
        }
    );
    let events = env
        .run_with("write", tests::asking_options(&env.server))
        .await;
    assert!(
        !events
            .iter()
            .any(|e| e.event.kind() == "permission_requested")
    );
    assert!(env.project().join("a.txt").exists());
}

#[tokio::test]
async fn an_unanswered_request_is_denied_after_the_configured_timeout() {
    let home = tests::Home::new();
    std::fs::create_dir_all(home.paths().config_dir).unwrap();
    std::fs::write(home.paths().config_file(), "permission_timeout_secs = 1\n").unwrap();
    let daemon = Daemon::start_in(home);
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "true"})),
        anthropic::text("ok"),
    ])
    .await;
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "go", tests::asking_options(&server)).await;
    let events = until_finished(&mut incoming).await;
    let resolved = events.iter().find_map(|e| match &e.event {
        Event::PermissionResolved {
            by_client,
            decision,
            ..
        } => Some((by_client.clone(), *decision)),
        _ => None,
    });
    assert_eq!(
        resolved,
        Some(("the permission timeout".into(), Decision::Deny))
    );
    assert_eq!(
        tool_results(&events)[0].2,
        "denied: nobody answered the permission request within 1 s"
    );
}

#[tokio::test]
async fn a_message_to_an_idle_session_starts_a_run_either_way() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::text("steered"),
            anthropic::text("followed"),
        ])
        .start()
        .await;
    for delivery in [Delivery::Steer, Delivery::FollowUp] {
        let reply = env
            .client
            .request(Request::Send {
                session: env.session.clone(),
                text: "go".into(),
                images: Vec::new(),
                delivery,
                options: env.options(),
            })
            .await
            .unwrap();
        assert!(matches!(reply, Reply::Sent { started: Some(_) }));
        let events = events_until(&mut env.incoming, |e| {
            matches!(e, Event::RunFinished { .. })
        })
        .await;
        assert!(
            matches!(&events[0].event, Event::RunStarted { trigger, .. } if *trigger == delivery)
        );
    }
}
