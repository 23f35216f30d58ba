//! Cancel is a hard boundary (docs/architecture.md#the-agent-loop), also when every tool executor
//! is busy: a run waiting for one is cancelled at once, and its call never starts.

use protocol::{Event, Request, StopReason};
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, events_until, run_options, session_in, start_run, until_finished};

#[tokio::test]
async fn a_run_waiting_for_a_busy_pool_is_cancelled_at_once_and_its_call_never_starts() {
    let home = Home::with_config("retry_base_ms = 5\nretry_max_ms = 20\ntool_pool_size = 1\n");
    let project = tempfile::tempdir().unwrap();
    let started = project.path().join("started");
    tests::make_fifo(&started);
    let server = ModelServer::start(vec![
        // Session A holds the only executor.
        anthropic::tool(
            "bash",
            json!({"command": "echo $$ > started; exec sleep 600"}),
        ),
        // Session B waits for it.
        anthropic::tool("bash", json!({"command": "echo late > after.txt"})),
    ])
    .await;
    let daemon = Daemon::start_in(home);
    let (client_a, session_a, mut incoming_a) = session_in(&daemon, project.path()).await;
    start_run(&client_a, &session_a, "hold the pool", run_options(&server)).await;
    let pgid = tests::read_fifo(&started).await;

    let (client_b, session_b, mut incoming_b) = session_in(&daemon, project.path()).await;
    start_run(&client_b, &session_b, "write a file", run_options(&server)).await;
    events_until(&mut incoming_b, |e| matches!(e, Event::ToolCall(_))).await;
    client_b
        .request(Request::Cancel {
            session: session_b.clone(),
        })
        .await
        .unwrap();
    // Without a hard boundary this waits for session A's command (600 s).
    let events = until_finished(&mut incoming_b).await;
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Aborted);
    assert_eq!(
        tests::tool_results(&events),
        [(
            "bash".to_string(),
            true,
            "(interrupted before this tool ran)".to_string()
        )]
    );

    client_a
        .request(Request::Cancel {
            session: session_a.clone(),
        })
        .await
        .unwrap();
    let events = until_finished(&mut incoming_a).await;
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Aborted);
    assert!(tests::group_is_gone(pgid).await);
    // The executor is free again, and the cancelled call did not run on it.
    let server_b = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "echo free"})),
        anthropic::text("done"),
    ])
    .await;
    start_run(&client_b, &session_b, "again", run_options(&server_b)).await;
    let events = until_finished(&mut incoming_b).await;
    assert_eq!(
        tests::tool_results(&events)[0].2,
        "free\n[exit code: 0]".to_string()
    );
    assert!(!project.path().join("after.txt").exists());
}
