//! Compaction is atomic and cancellable (SPEC §7, §8): a summary applies only to the history
//! it summarised, keeping every message added since; a compaction a client asked for answers at
//! once, goes on in the background, and any client can cancel it.

use protocol::{Event, Request};
use serde_json::json;
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::{Daemon, events_until, run_options, session_in, start_run, until_finished};

/// A session with three long exchanges: enough history for the older part to be summarised.
async fn long_session(
    server: &ModelServer,
    client: &agentctl::client::Client,
    session: &protocol::SessionId,
    incoming: &mut tokio::sync::mpsc::UnboundedReceiver<agentctl::client::Incoming>,
) {
    for i in 0..3 {
        server.push(vec![anthropic::text(&format!("noted {i}"))]);
        let prompt = format!("part {i}: {}", "words ".repeat(7000));
        start_run(client, session, &prompt, run_options(server)).await;
        until_finished(incoming).await;
    }
}

#[tokio::test]
async fn a_manual_compaction_racing_a_run_keeps_every_message_added_meanwhile() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("notes.txt"), "remember this\n").unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    long_session(&server, &client, &session, &mut incoming).await;

    let summary_held = Gate::new();
    server.push(vec![
        anthropic::text("SUMMARY of the early parts").hold_after(4, &summary_held),
    ]);
    // The request answers at once; the summary is made in the background.
    client
        .request(Request::Compact {
            session: session.clone(),
        })
        .await
        .unwrap();
    server.wait_for_requests(4).await;
    // A run comes and goes while the summary is being written.
    server.push(vec![
        anthropic::tool("read", json!({"path": "notes.txt"})),
        anthropic::text("read it"),
    ]);
    let other = daemon.client().await;
    start_run(&other, &session, "read the notes", run_options(&server)).await;
    until_finished(&mut incoming).await;
    summary_held.release();
    let events = events_until(&mut incoming, |e| {
        matches!(e, Event::Compacted { .. } | Event::Error { .. })
    })
    .await;
    assert!(
        matches!(events.last().unwrap().event, Event::Compacted { .. }),
        "{:?}",
        events.last()
    );
    // The next model call sees the summary, then everything that was not summarised,
    // the run that came meanwhile included, with its tool call and result together.
    server.push(vec![anthropic::text("done")]);
    start_run(&client, &session, "what now?", run_options(&server)).await;
    until_finished(&mut incoming).await;
    let messages = server.received().last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let text = serde_json::to_string(&messages).unwrap();
    assert!(text.contains("SUMMARY of the early parts"), "no summary");
    assert!(
        !text.contains("part 0:"),
        "the summarised part is still there"
    );
    for kept in [
        "part 2:",
        "noted 2",
        "read the notes",
        "remember this",
        "read it",
        "what now?",
    ] {
        assert!(text.contains(kept), "`{kept}` was lost");
    }
    tests::assert_pairs_intact(&messages);
}

#[tokio::test]
async fn a_manual_compaction_is_cancelled_by_any_client() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    long_session(&server, &client, &session, &mut incoming).await;
    let never = Gate::new();
    server.push(vec![
        anthropic::text("a summary that never ends").hold_after(4, &never),
    ]);
    client
        .request(Request::Compact {
            session: session.clone(),
        })
        .await
        .unwrap();
    server.wait_for_requests(4).await;
    let other = daemon.client().await;
    other
        .request(Request::Cancel {
            session: session.clone(),
        })
        .await
        .unwrap();
    let events = events_until(&mut incoming, |e| {
        matches!(e, Event::Compacted { .. } | Event::Error { .. })
    })
    .await;
    assert!(
        matches!(&events.last().unwrap().event, Event::Error { message } if message == "the compaction was cancelled"),
        "{:?}",
        events.last()
    );
    // The history is as it was: the next call sees all of it.
    server.push(vec![anthropic::text("still here")]);
    start_run(&client, &session, "go on", run_options(&server)).await;
    until_finished(&mut incoming).await;
    let body = server.received().last().unwrap().body.to_string();
    assert!(body.contains("part 0:") && !body.contains("a summary that never ends"));
    never.release();
}
