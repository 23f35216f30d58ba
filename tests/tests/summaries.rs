//! The board's feed underneath the board (docs/architecture.md#the-board): `SubscribeSummaries`
//! over the protocol, and `agentctl sessions --watch --json` for scripts.

use agentctl::client::Incoming;
use protocol::{Event, Reply, Request};
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, asking_options, run_options, start_run, titled, until_event_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_watch_json_prints_every_session_then_each_change_as_a_line() {
    use tokio::io::AsyncBufReadExt;
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Vec::new()).await;
    server.route(
        "WATCH-ASK",
        vec![
            anthropic::tool("bash", json!({"command": "echo watched"})),
            anthropic::text("ok"),
        ],
    );
    let daemon = Daemon::start();
    let mut client = daemon.client().await;
    let session = titled(&client, project.path(), "watched").await;
    let mut incoming = client.take_incoming().unwrap();
    let mut watch =
        daemon
            .home
            .agentctl_with(&server, project.path(), &["sessions", "--watch", "--json"]);
    watch.stdout(std::process::Stdio::piped());
    let mut child = watch.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> serde_json::Value {
        let line = tokio::time::timeout(tests::WAIT, lines.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"))
    };
    let first = next().await;
    assert_eq!(first["session"], session.as_str());
    assert_eq!(first["group"], "done");
    assert_eq!(first["title"], "watched");
    assert_eq!(next().await, json!({"ready": true, "sessions": 1}));

    start_run(&client, &session, "WATCH-ASK", asking_options(&server)).await;
    let asking_line = loop {
        let line = next().await;
        if line["group"] == "needs_you" {
            break line;
        }
        assert_eq!(line["group"], "working", "{line}");
    };
    assert_eq!(asking_line["pending"][0]["tool"], "bash");
    assert!(
        asking_line["pending"][0]["summary"]
            .as_str()
            .unwrap()
            .contains("echo watched"),
        "{asking_line}"
    );
    let request = asking_line["pending"][0]["request"].as_u64().unwrap();
    client
        .request(Request::Answer {
            session: session.clone(),
            request: protocol::PermissionRequestId(request),
            decision: protocol::Decision::Allow,
        })
        .await
        .unwrap();
    until_event_of(&mut incoming, &session, |e| {
        matches!(e, Event::RunFinished { .. })
    })
    .await;
    let done = loop {
        let line = next().await;
        if line["group"] == "done" {
            break line;
        }
    };
    assert_eq!(done["run"]["stop_reason"], "completed");
    assert!(done["pending"].as_array().unwrap().is_empty());
    let _ = child.kill().await;
}

#[tokio::test]
async fn summaries_cover_sessions_not_loaded_without_loading_them() {
    let project = tempfile::tempdir().unwrap();
    let server =
        ModelServer::start(vec![anthropic::text("first"), anthropic::text("second")]).await;
    let mut daemon = Daemon::start();
    {
        let mut client = daemon.client().await;
        let one = titled(&client, project.path(), "one").await;
        let _two = titled(&client, project.path(), "two").await;
        let mut incoming = client.take_incoming().unwrap();
        start_run(&client, &one, "go", run_options(&server)).await;
        until_event_of(&mut incoming, &one, |e| {
            matches!(e, Event::RunFinished { .. })
        })
        .await;
    }
    assert!(daemon.terminate());
    daemon.restart();
    let mut client = daemon.client().await;
    let mut incoming = client.take_incoming().unwrap();
    let reply = client.request(Request::SubscribeSummaries).await.unwrap();
    assert_eq!(reply, Reply::Done);
    let mut summaries = Vec::new();
    loop {
        match tokio::time::timeout(tests::WAIT, incoming.recv())
            .await
            .unwrap()
            .unwrap()
        {
            Incoming::Summary(s) => summaries.push(*s),
            Incoming::SummariesReady { sessions } => {
                assert_eq!(sessions, 2);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    let one = summaries
        .iter()
        .find(|s| s.info.title.as_deref() == Some("one"))
        .unwrap();
    let end = one
        .run
        .as_ref()
        .and_then(|r| r.end.as_ref())
        .expect("the last run's end");
    assert_eq!(end.stop_reason, protocol::StopReason::Completed);
    assert_eq!(one.group(), protocol::Group::Done);
    let Reply::Status(status) = client.request(Request::Status).await.unwrap() else {
        panic!()
    };
    assert_eq!(status.loaded, 0, "a summary loaded a session");
}
