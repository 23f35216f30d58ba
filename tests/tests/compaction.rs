//! Compaction is atomic and cancellable (docs/architecture.md#providers,
//! docs/architecture.md#state-on-disk): a summary applies only to the history it summarised,
//! keeping every message added since; a compaction a client asked for answers at once, goes on in
//! the background, and any client can cancel it.

use protocol::{Event, Request};
use serde_json::json;
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::{TestEnv, events_until, run_options, start_run, until_finished};

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
    let mut env = TestEnv::builder()
        .file("notes.txt", "remember this\n")
        .start()
        .await;
    long_session(&env.server, &env.client, &env.session, &mut env.incoming).await;

    let summary_held = Gate::new();
    env.server.push(vec![
        anthropic::text("SUMMARY of the early parts").hold_after(4, &summary_held),
    ]);
    // The request answers at once; the summary is made in the background.
    env.client
        .request(Request::Compact {
            session: env.session.clone(),
        })
        .await
        .unwrap();
    env.server.wait_for_requests(4).await;
    // A run comes and goes while the summary is being written.
    env.server.push(vec![
        anthropic::tool("read", json!({"path": "notes.txt"})),
        anthropic::text("read it"),
    ]);
    let other = env.daemon.client().await;
    start_run(&other, &env.session, "read the notes", env.options()).await;
    until_finished(&mut env.incoming).await;
    summary_held.release();
    let events = events_until(&mut env.incoming, |e| {
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
    env.server.push(vec![anthropic::text("done")]);
    env.start_run("what now?").await;
    until_finished(&mut env.incoming).await;
    let messages = env.server.received().last().unwrap().body["messages"]
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
    let mut env = TestEnv::builder().start().await;
    long_session(&env.server, &env.client, &env.session, &mut env.incoming).await;
    let never = Gate::new();
    env.server.push(vec![
        anthropic::text("a summary that never ends").hold_after(4, &never),
    ]);
    env.client
        .request(Request::Compact {
            session: env.session.clone(),
        })
        .await
        .unwrap();
    env.server.wait_for_requests(4).await;
    let other = env.daemon.client().await;
    other
        .request(Request::Cancel {
            session: env.session.clone(),
        })
        .await
        .unwrap();
    let events = events_until(&mut env.incoming, |e| {
        matches!(e, Event::Compacted { .. } | Event::Error { .. })
    })
    .await;
    assert!(
        matches!(&events.last().unwrap().event, Event::Error { message } if message == "the compaction was cancelled"),
        "{:?}",
        events.last()
    );
    // The history is as it was: the next call sees all of it.
    env.server.push(vec![anthropic::text("still here")]);
    env.start_run("go on").await;
    until_finished(&mut env.incoming).await;
    let body = env.server.received().last().unwrap().body.to_string();
    assert!(body.contains("part 0:") && !body.contains("a summary that never ends"));
    never.release();
}
