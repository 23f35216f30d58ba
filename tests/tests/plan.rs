//! The model's plan (docs/architecture.md#the-plan): `todo` replaces it whole, the session stores
//! it as a `PlanUpdated` event, and it reaches every client: the stored history (also after a
//! daemon restart and a resumed run), `--json`, editors over ACP as a `plan` update, and the
//! board's count; a fork keeps it up to its turn, and a compacted history still tells the model.

use agent_client_protocol::v1::schema::{
    PlanEntryStatus, PromptRequest, SessionUpdate, StopReason,
};
use agentctl::client::{Client, Incoming};
use protocol::{
    Event, PlanCount, PlanItem, PlanStatus, Reply, Request, SessionEvent, SessionId, SessionSummary,
};
use serde_json::{Value, json};
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::restart::{after_restart, provider_env, resumed};
use tests::{
    Daemon, Home, TestEnv, agentctl_output, events_until, run_options, session_in, start_run,
    tool_results,
};

/// The arguments of a `todo` call setting `steps` (text, status).
fn todo(steps: &[(&str, &str)]) -> Value {
    let items: Vec<Value> = steps
        .iter()
        .map(|(text, status)| json!({"text": text, "status": status}))
        .collect();
    json!({ "items": items })
}

/// The plan the first call of the tests sets: one step done, one going, one to do.
fn first_plan() -> Value {
    todo(&[
        ("read the code", "done"),
        ("fix the bug", "in_progress"),
        ("run the tests", "pending"),
    ])
}

/// The plans `events` set, in order.
fn plans(events: &[SessionEvent]) -> Vec<Vec<PlanItem>> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::PlanUpdated { items } => Some(items.clone()),
            _ => None,
        })
        .collect()
}

/// The steps of [`first_plan`] as the session stores them.
fn first_items() -> Vec<PlanItem> {
    let item = |text: &str, status| PlanItem {
        text: text.into(),
        status,
    };
    vec![
        item("read the code", PlanStatus::Done),
        item("fix the bug", PlanStatus::InProgress),
        item("run the tests", PlanStatus::Pending),
    ]
}

/// Every event of `session` stored so far.
async fn history(client: &Client, session: &SessionId) -> Vec<SessionEvent> {
    match client
        .request(Request::GetHistory {
            session: session.clone(),
            from_seq: 0,
        })
        .await
        .unwrap()
    {
        Reply::History { events, .. } => events,
        other => panic!("{other:?}"),
    }
}

/// The board's summaries of every session, from a new subscription.
async fn summaries(daemon: &Daemon) -> Vec<SessionSummary> {
    let mut client = daemon.client().await;
    let mut incoming = client.take_incoming().unwrap();
    let reply = client.request(Request::SubscribeSummaries).await.unwrap();
    assert_eq!(reply, Reply::Done);
    let mut summaries = Vec::new();
    loop {
        match tokio::time::timeout(tests::WAIT, incoming.recv())
            .await
            .expect("summaries in time")
            .expect("the connection is open")
        {
            Incoming::Summary(s) => summaries.push(*s),
            Incoming::SummariesReady { .. } => return summaries,
            other => panic!("{other:?}"),
        }
    }
}

/// The board's count of `session`'s plan.
async fn board_count(daemon: &Daemon, session: &SessionId) -> Option<PlanCount> {
    summaries(daemon)
        .await
        .into_iter()
        .find(|s| s.info.id == *session)
        .expect("the session is on the board")
        .plan
}

#[tokio::test]
async fn a_plan_is_stored_before_its_result_and_read_back_after_a_daemon_restart() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("todo", first_plan()),
            anthropic::text("working on it"),
        ])
        .start()
        .await;
    let events = env.run("fix the bug").await;
    assert_eq!(plans(&events), [first_items()]);
    let results = tool_results(&events);
    assert_eq!(
        results,
        [(
            "todo".to_string(),
            false,
            "Plan updated (1/3 done):\n[x] read the code\n[>] fix the bug\n[ ] run the tests\nNow: fix the bug"
                .to_string()
        )]
    );
    let at = |kind: fn(&Event) -> bool| events.iter().position(|e| kind(&e.event)).unwrap();
    assert!(
        at(|e| matches!(e, Event::PlanUpdated { .. }))
            < at(|e| matches!(e, Event::ToolResult { .. }))
    );
    // The model is offered `todo`, and its prompt asks for a plan.
    let first = &env.server.received()[0].body;
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "todo"),
        "{first}"
    );
    assert!(
        first["system"]
            .to_string()
            .contains("three steps or more, keep a plan with todo"),
        "{}",
        first["system"]
    );
    assert_eq!(
        board_count(&env.daemon, &env.session).await,
        Some(PlanCount { done: 1, total: 3 })
    );

    assert!(env.daemon.terminate());
    env.daemon.restart();
    // Not loaded: the board counts the plan from what the session stored beside its log.
    assert_eq!(
        board_count(&env.daemon, &env.session).await,
        Some(PlanCount { done: 1, total: 3 })
    );
    let client = env.daemon.client().await;
    assert_eq!(
        plans(&history(&client, &env.session).await),
        [first_items()]
    );
}

#[tokio::test]
async fn a_plan_that_breaks_a_rule_is_refused_and_changes_nothing() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool(
                "todo",
                todo(&[("one", "in_progress"), ("two", "in_progress")]),
            ),
            anthropic::tool("todo", todo(&[("one", "blocked")])),
            anthropic::tool("todo", json!({"steps": ["one"]})),
            anthropic::text("giving up on the plan"),
        ])
        .start()
        .await;
    let events = env.run("plan it").await;
    assert!(plans(&events).is_empty(), "a refused plan was stored");
    let results = tool_results(&events);
    assert!(
        results
            .iter()
            .all(|(name, is_error, _)| name == "todo" && *is_error)
    );
    assert!(
        results[0].2.contains("steps 1 and 2 are both in_progress"),
        "{}",
        results[0].2
    );
    assert!(
        results[1].2.contains("unknown status `blocked`")
            && results[1].2.contains("pending, in_progress, done"),
        "{}",
        results[1].2
    );
    assert!(
        results[2].2.contains("missing field `items`"),
        "{}",
        results[2].2
    );
    assert!(plans(&history(&env.client, &env.session).await).is_empty());
    assert_eq!(board_count(&env.daemon, &env.session).await, None);
}

#[tokio::test]
async fn an_empty_list_clears_the_plan() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("todo", first_plan()),
            anthropic::tool("todo", todo(&[])),
            anthropic::text("no plan"),
        ])
        .start()
        .await;
    let events = env.run("plan, then drop it").await;
    assert_eq!(plans(&events), [first_items(), Vec::new()]);
    assert_eq!(tool_results(&events)[1].2, "The plan is cleared.");
    assert_eq!(board_count(&env.daemon, &env.session).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_prints_the_plan_as_a_plan_updated_line() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("todo", first_plan()),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start();
    let out = agentctl_output(&daemon, &server, project.path(), &["run", "--json", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("\"plan_updated\""))
        .unwrap_or_else(|| panic!("no plan_updated line in:\n{}", out.stdout));
    let event: Value = serde_json::from_str(line).unwrap();
    let expected = format!(
        r#"{{"items":[{{"text":"read the code","status":"done"}},{{"text":"fix the bug","status":"in_progress"}},{{"text":"run the tests","status":"pending"}}],"type":"plan_updated","seq":{},"session":"{}","time_ms":{}}}"#,
        event["seq"],
        event["session"].as_str().unwrap(),
        event["time_ms"]
    );
    assert_eq!(line, expected);
}

#[tokio::test]
async fn an_editor_gets_the_plan_as_an_acp_plan_update() {
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool("todo", first_plan()),
        anthropic::text("on it"),
    ])
    .await;
    let daemon = Daemon::start();
    let cwd = project.path().to_path_buf();
    let ((), mut child) = tests::acp::with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, _| {
            let session = tests::acp::new_session(&cx, &cwd).await;
            let answer = cx
                .send_request(PromptRequest::new(session, vec!["fix the bug".into()]))
                .block_task()
                .await
                .unwrap();
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
            let mut updates = got.drain();
            // The session's slash commands are announced on their own time: the editor stays
            // until they came, so that nothing is written to it after it left.
            if !updates
                .iter()
                .any(|u| matches!(u, SessionUpdate::AvailableCommandsUpdate(_)))
            {
                updates.extend(
                    got.updates_until(|u| matches!(u, SessionUpdate::AvailableCommandsUpdate(_)))
                        .await,
                );
            }
            let plan = updates
                .into_iter()
                .find_map(|u| match u {
                    SessionUpdate::Plan(plan) => Some(plan),
                    _ => None,
                })
                .expect("a plan update");
            let entries: Vec<(String, PlanEntryStatus)> = plan
                .entries
                .iter()
                .map(|e| (e.content.clone(), e.status.clone()))
                .collect();
            assert_eq!(
                entries,
                [
                    ("read the code".to_string(), PlanEntryStatus::Completed),
                    ("fix the bug".to_string(), PlanEntryStatus::InProgress),
                    ("run the tests".to_string(), PlanEntryStatus::Pending),
                ]
            );
        },
    )
    .await;
    assert!(child.wait().await.unwrap().success());
}

#[tokio::test]
async fn a_fork_carries_the_plan_as_it_stood_at_its_turn() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("todo", first_plan()),
            anthropic::tool(
                "todo",
                todo(&[
                    ("read the code", "done"),
                    ("fix the bug", "done"),
                    ("run the tests", "in_progress"),
                ]),
            ),
            anthropic::text("testing"),
        ])
        .start()
        .await;
    let events = env.run("fix the bug").await;
    assert_eq!(plans(&events).len(), 2);
    let fork = |turn: Option<u64>| {
        let client = &env.client;
        let session = env.session.clone();
        async move {
            match client
                .request(Request::Fork { session, turn })
                .await
                .unwrap()
            {
                Reply::SessionCreated(info) => info.id,
                other => panic!("{other:?}"),
            }
        }
    };
    let at_first = fork(Some(1)).await;
    let whole = fork(None).await;
    assert_eq!(
        board_count(&env.daemon, &at_first).await,
        Some(PlanCount { done: 1, total: 3 })
    );
    assert_eq!(
        board_count(&env.daemon, &whole).await,
        Some(PlanCount { done: 2, total: 3 })
    );
    assert_eq!(
        plans(&history(&env.client, &at_first).await),
        [first_items()]
    );
    assert_eq!(plans(&history(&env.client, &whole).await).len(), 2);
}

#[tokio::test]
async fn a_compacted_history_still_tells_the_model_its_plan() {
    let mut env = TestEnv::builder().start().await;
    for i in 0..3 {
        let mut replies = vec![anthropic::text(&format!("noted {i}"))];
        if i == 0 {
            replies.insert(0, anthropic::tool("todo", first_plan()));
        }
        env.server.push(replies);
        let prompt = format!("part {i}: {}", "words ".repeat(7000));
        env.run(&prompt).await;
    }
    env.server
        .push(vec![anthropic::text("SUMMARY of the early parts")]);
    env.client
        .request(Request::Compact {
            session: env.session.clone(),
        })
        .await
        .unwrap();
    let events = events_until(&mut env.incoming, |e| {
        matches!(e, Event::Compacted { .. } | Event::Error { .. })
    })
    .await;
    assert!(
        matches!(events.last().unwrap().event, Event::Compacted { .. }),
        "{:?}",
        events.last()
    );
    env.server.push(vec![anthropic::text("going on")]);
    env.run("what now?").await;
    let sent = env.server.received().last().unwrap().body["messages"].to_string();
    assert!(
        !sent.contains("part 0:"),
        "the plan's turn was not summarised"
    );
    assert!(
        sent.contains("SUMMARY of the early parts")
            && sent.contains("Your plan as it stands")
            && sent.contains("[>] fix the bug"),
        "{sent}"
    );
}

#[tokio::test]
async fn a_resumed_run_keeps_the_plan_it_set_before_the_daemon_stopped() {
    let project = tempfile::tempdir().unwrap();
    let held = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::tool("todo", first_plan()),
        anthropic::text("never sent").hold_after(0, &held),
        anthropic::text("picked up again"),
    ])
    .await;
    let mut daemon = Daemon::start_with(Home::new(), &provider_env(&server));
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "fix the bug", run_options(&server)).await;
    events_until(&mut incoming, |e| matches!(e, Event::PlanUpdated { .. })).await;
    server.wait_for_requests(2).await;
    daemon.kill();
    daemon.restart();

    let events = after_restart(&daemon, &session).await;
    assert_eq!(resumed(&events).len(), 1);
    assert_eq!(plans(&events), [first_items()]);
    assert_eq!(
        board_count(&daemon, &session).await,
        Some(PlanCount { done: 1, total: 3 })
    );
}
