//! Subagents against a model that makes many of them (docs/architecture.md#subagents): a session's
//! children are bounded, background children that wait for a place all run even when the daemon
//! unloads idle sessions meanwhile, deleting a parent with many children never stalls the daemon,
//! and a child's request numbered like its parent's can still be answered through the parent.

use protocol::{Decision, ErrorCode, Event, Request};
use serde_json::json;
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::{
    Daemon, Home, TestEnv, next_event, run_options, session_in, start_run, tool_results,
    until_finished,
};

/// A daemon that keeps at most two idle sessions loaded and runs one child at a time.
fn tight_daemon(extra: &str) -> Daemon {
    Daemon::start_in(Home::with_config(&format!(
        "retry_base_ms = 5\nretry_max_ms = 20\nmax_loaded_sessions = 2\nsession_idle_unload_secs = 1\n[subagents]\nmax_parallel = 1\n{extra}"
    )))
}

fn background(n: usize) -> serde_json::Value {
    json!({"description": format!("job {n}"), "prompt": format!("BG-{n}: work"), "background": true})
}

#[tokio::test]
async fn children_beyond_max_children_are_refused() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .tool("task", background(1))
            .tool("task", background(2))
            .tool("task", background(3))
            .build(),
        anthropic::text("ok"),
    ])
    .await;
    for n in 1..=3 {
        server.route(
            &format!("BG-{n}:"),
            vec![anthropic::text("held").hold_after(2, &gate)],
        );
    }
    let daemon = tight_daemon("max_children = 2\n");
    let (client, parent, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &parent, "go", run_options(&server)).await;
    let events = until_finished(&mut incoming).await;
    let results = tool_results(&events);
    // Calls of one reply run at once: which one is refused is not fixed.
    let refused: Vec<_> = results.iter().filter(|r| r.1).collect();
    assert_eq!(refused.len(), 1, "{results:?}");
    assert!(refused[0].2.contains("max_children"), "{results:?}");
    gate.release();
}

#[tokio::test]
async fn background_children_that_wait_for_a_place_all_run_though_idle_sessions_unload() {
    let project = tempfile::tempdir().unwrap();
    const N: usize = 6;
    let calls = (1..=N).fold(anthropic::reply(), |r, n| r.tool("task", background(n)));
    let mut script = vec![calls.build()];
    script.extend((0..2 * N).map(|_| anthropic::text("noted")));
    let server = ModelServer::start(script).await;
    for n in 1..=N {
        server.route(
            &format!("BG-{n}:"),
            vec![anthropic::text(&format!("result {n}"))],
        );
    }
    let daemon = tight_daemon("");
    let (client, parent, _incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &parent, "go", run_options(&server)).await;
    // Every child asks the model once, one after another.
    let mut seen = 0;
    for total in N + 1.. {
        let received = server.wait_for_requests(total).await;
        seen = (1..=N)
            .filter(|n| {
                let marker = format!("BG-{n}:");
                received
                    .iter()
                    .any(|r| tests::model_server::first_user_text(&r.body).contains(&marker))
            })
            .count();
        if seen == N || total > 4 * N {
            break;
        }
    }
    assert_eq!(seen, N, "every background child ran");
}

#[tokio::test]
async fn deleting_a_parent_with_many_waiting_children_does_not_stall_the_daemon() {
    let project = tempfile::tempdir().unwrap();
    const N: usize = 12;
    let gate = Gate::new();
    let calls = (1..=N).fold(anthropic::reply(), |r, n| r.tool("task", background(n)));
    let server = ModelServer::start(vec![calls.build(), anthropic::text("ok")]).await;
    for n in 1..=N {
        server.route(
            &format!("BG-{n}:"),
            vec![anthropic::text("held").hold_after(2, &gate)],
        );
    }
    let daemon = tight_daemon("max_children = 50\n");
    let (client, parent, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &parent, "go", run_options(&server)).await;
    until_finished(&mut incoming).await;
    // One child runs (held), the others wait for its place while the daemon unloads idle ones.
    server.wait_for_requests(3).await;
    let deleted = tokio::time::timeout(
        tests::WAIT,
        client.request(Request::DeleteSession {
            session: parent.clone(),
            force: true,
        }),
    )
    .await
    .expect("the delete returns");
    assert!(deleted.is_ok(), "{deleted:?}");
    gate.release();
    let status = tokio::time::timeout(tests::WAIT, client.request(Request::Status)).await;
    assert!(status.is_ok(), "the daemon still answers");
    let left = client.list_sessions().await.unwrap().sessions;
    assert!(
        left.is_empty(),
        "the parent and its children are gone: {left:?}"
    );
}

#[tokio::test]
async fn a_childs_request_numbered_like_the_parents_is_answered_in_the_childs_session() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::reply()
                .tool(
                    "task",
                    json!({"description": "asks", "prompt": "ASKING-CHILD", "background": true}),
                )
                .tool("bash", json!({"command": "touch parent-ran"}))
                .build(),
            anthropic::text("ok"),
        ])
        .route(
            "ASKING-CHILD",
            vec![
                anthropic::tool("bash", json!({"command": "touch child-ran"})),
                anthropic::text("child done"),
            ],
        )
        .start()
        .await;
    let options = tests::asking_options(&env.server);
    env.start_run_with("go", options).await;
    let mut asks = Vec::new();
    while asks.len() < 2 {
        if let Event::PermissionRequested {
            session, request, ..
        } = next_event(&mut env.incoming).await.event
        {
            asks.push((session, request));
        }
    }
    assert_eq!(asks[0].1, asks[1].1, "both are request 1 of their session");
    // Through the parent the number names the parent's own request, pending or decided: a
    // second answer is refused and names the child, never taken for the child's request.
    let child = asks
        .iter()
        .find_map(|(session, _)| session.clone())
        .expect("the child's request is shown in the parent's stream");
    tests::answer(&env.client, &env.session, asks[0].1, Decision::Allow)
        .await
        .expect("answered");
    let again = tests::answer(&env.client, &env.session, asks[0].1, Decision::Allow)
        .await
        .expect_err("the parent's request 1 is decided");
    assert_eq!(again.code(), Some(ErrorCode::AlreadyDecided), "{again}");
    assert!(
        again
            .to_string()
            .contains(&format!("agentctl approve {child} ")),
        "{again}"
    );
    assert!(!env.project().join("child-ran").exists());
    // In the child's own session it is answered.
    tests::answer(&env.client, &child, asks[0].1, Decision::Allow)
        .await
        .expect("answered in the child's session");
    // Both are resolved, the parent's and (shown in the parent's stream) the child's.
    let (mut own, mut childs, mut finished) = (false, false, false);
    while !(own && childs && finished) {
        match next_event(&mut env.incoming).await.event {
            Event::PermissionResolved { session, .. } => {
                own |= session.is_none();
                childs |= session.is_some();
            }
            Event::RunFinished { .. } => finished = true,
            _ => {}
        }
    }
    assert!(env.project().join("parent-ran").exists());
}
