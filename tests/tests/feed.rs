//! The one event feed every front end follows: replay and live told apart by the daemon's
//! marker, a dropped subscription resumed with nothing twice, and `agentctl run` starting its run
//! in one exchange.

use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};

use agentctl::client::{Client, Feed, FeedItem};
use protocol::{ClientFrame, Event, Request, StopReason};
use serde_json::json;
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::{Daemon, TestEnv, until_finished};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The next item, failing the test after a while.
async fn next(feed: &mut Feed) -> FeedItem {
    tokio::time::timeout(tests::WAIT, feed.next())
        .await
        .expect("the feed moved on")
}

#[tokio::test]
async fn replayed_events_come_before_the_marker_and_live_ones_after() {
    let project = tempfile::tempdir().unwrap();
    let daemon = Daemon::start();
    let (_client, session, _incoming, _server, gate) =
        tests::session_mid_reply(&daemon, project.path()).await;
    let mut feed = Feed::new(daemon.client().await).unwrap();
    feed.follower().follow(&session, 0).await.unwrap();
    let mut replayed = Vec::new();
    let boundary = loop {
        match next(&mut feed).await {
            FeedItem::Event { event, replay } => {
                assert!(replay, "{event:?} came before the marker");
                replayed.push(event.seq);
            }
            FeedItem::ReplayDone { last_seq, .. } => break last_seq,
            other => panic!("{other:?}"),
        }
    };
    assert!(replayed.windows(2).all(|w| w[0] < w[1]));
    assert!(replayed.iter().all(|&seq| seq <= boundary));
    gate.release();
    loop {
        match next(&mut feed).await {
            FeedItem::Event { event, replay } => {
                assert!(!replay && event.seq > boundary, "{event:?}");
                if matches!(event.event, Event::RunFinished { .. }) {
                    break;
                }
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn a_dropped_subscription_is_resumed_with_nothing_twice() {
    let gate = Gate::new();
    let mut env = TestEnv::builder()
        .daemon_env("AGENTD_FAULT_INJECTION", "1")
        .model(vec![
            anthropic::text("first answer"),
            anthropic::text("never finished").hold_after(4, &gate),
        ])
        .start()
        .await;
    env.start_run("one").await;
    until_finished(&mut env.incoming).await;

    let mut feed = Feed::new(env.daemon.client().await).unwrap();
    feed.follower().follow(&env.session, 0).await.unwrap();
    env.start_run("two").await;
    let mut seen = Vec::new();
    loop {
        if let FeedItem::Event { event, .. } = next(&mut feed).await {
            seen.push(event.seq);
            if matches!(event.event, Event::TextDelta { .. }) {
                break;
            }
        }
    }
    // The session's actor fails: its subscribers are dropped, and the feed subscribes again.
    let panic = Request::Send {
        session: env.session.clone(),
        text: "__agentd_fault_panic__".into(),
        images: Vec::new(),
        delivery: protocol::Delivery::Steer,
        options: Default::default(),
    };
    assert!(env.client.request(panic).await.is_err());
    let mut told = false;
    let stop = loop {
        match next(&mut feed).await {
            FeedItem::Event { event, .. } => {
                seen.push(event.seq);
                match event.event {
                    Event::Error { message } => {
                        told |= message.contains("restarted after an internal error")
                    }
                    Event::RunFinished { stop_reason, .. } => break stop_reason,
                    _ => {}
                }
            }
            FeedItem::ReplayDone { .. } => {}
            other => panic!("{other:?}"),
        }
    };
    assert!(told);
    assert_eq!(stop, StopReason::Error);
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    gate.release();
}

/// A socket in front of the daemon's that notes every request clients send through it.
async fn counting_proxy(daemon: &Daemon) -> (tempfile::TempDir, Arc<Mutex<Vec<String>>>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let listener = tokio::net::UnixListener::bind(dir.path().join("proxy.sock")).unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (target, noted) = (daemon.paths().socket, seen.clone());
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let daemon = tokio::net::UnixStream::connect(&target).await.unwrap();
            let (mut from_client, mut to_client) = client.into_split();
            let (mut from_daemon, mut to_daemon) = daemon.into_split();
            tokio::spawn(async move { tokio::io::copy(&mut from_daemon, &mut to_client).await });
            let noted = noted.clone();
            tokio::spawn(async move {
                loop {
                    let mut prefix = [0u8; 4];
                    if from_client.read_exact(&mut prefix).await.is_err() {
                        return;
                    }
                    let mut payload = vec![0u8; u32::from_be_bytes(prefix) as usize];
                    from_client.read_exact(&mut payload).await.unwrap();
                    if let Ok(ClientFrame::Request { request, .. }) =
                        protocol::frame::decode::<ClientFrame>(&payload)
                    {
                        let name = format!("{request:?}");
                        let name = name.split([' ', '(', '{']).next().unwrap_or_default();
                        noted.lock().unwrap().push(name.to_string());
                    }
                    to_daemon.write_all(&prefix).await.unwrap();
                    to_daemon.write_all(&payload).await.unwrap();
                }
            });
        }
    });
    (dir, seen)
}

#[tokio::test]
async fn agentctl_run_starts_its_run_in_one_exchange_after_creating_the_session() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("README.md"), "make dev\n").unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "README.md"})),
        anthropic::text("Run make dev."),
    ])
    .await;
    let daemon = Daemon::start();
    // The daemon is there: nothing is started through the proxy.
    let _ = Client::connect(&daemon.paths().socket, "test")
        .await
        .unwrap();
    let (dir, seen) = counting_proxy(&daemon).await;
    let out = daemon
        .home
        .agentctl_with(&server, project.path(), &["run", "how do I start it?"])
        .env("AGENTD_SOCKET", dir.path().join("proxy.sock"))
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Run make dev."));
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["CreateSession", "SendSubscribed"]
    );
}
