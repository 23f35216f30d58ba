//! Reconnection figures: how long after `agentctl daemon restart` begins a client follows
//! again, 20 restarts of a daemon holding 100 sessions. Two clients: `sessions --watch --json`
//! (followed again when it prints `{"reconnected": true, ...}`: every session summarised by the
//! new daemon) and the library's `Feed` following one session (its `Reconnected`). The restart
//! command's own time is shown beside them, and how long after it returned each client was
//! back.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench reconnect`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use agentctl::client::{Client, Feed, FeedItem, Reconnect, Unreachable};
use serde_json::Value;
use tests::model_server::ModelServer;
use tests::{Daemon, WAIT, percentile};
use tokio::io::{AsyncBufReadExt, BufReader};

const RESTARTS: usize = 20;
const SESSIONS: usize = 100;

#[tokio::main]
async fn main() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Vec::new()).await;
    let daemon = Daemon::start();
    let client = daemon.client().await;
    let mut followed = None;
    for _ in 0..SESSIONS {
        followed = Some(tests::create_session(&client, project.path()).await.id);
    }
    drop(client);

    let mut watch = daemon
        .home
        .agentctl_with(&server, project.path(), &["sessions", "--watch", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut until = async |key: &str| loop {
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .expect("a line within the wait")
            .unwrap()
            .expect("the watch goes on");
        let value: Value = serde_json::from_str(&line).unwrap();
        if value[key] == true {
            return Instant::now();
        }
    };
    until("ready").await;

    let socket = daemon.paths().socket;
    let reconnect = Reconnect::new(move |_start| {
        let socket = socket.clone();
        async move {
            Client::connect(&socket, "bench")
                .await
                .map_err(|e| Unreachable::Away(e.to_string()))
        }
    });
    let mut feed = Feed::new(daemon.client().await)
        .unwrap()
        .reconnecting(reconnect);
    let session = followed.expect("a session");
    feed.follower().follow(&session, 0).await.unwrap();

    let (mut command, mut watched, mut fed) = (Vec::new(), Vec::new(), Vec::new());
    let (mut watch_after, mut feed_after) = (Vec::new(), Vec::new());
    for _ in 0..RESTARTS {
        let start = Instant::now();
        let restart = async {
            let out = daemon
                .home
                .agentctl_with(&server, project.path(), &["daemon", "restart"])
                .output()
                .await
                .unwrap();
            assert_eq!(out.status.code(), Some(0));
            Instant::now()
        };
        let back = async {
            loop {
                let item = tokio::time::timeout(WAIT, feed.next())
                    .await
                    .expect("the feed is back within the wait");
                match item {
                    FeedItem::Reconnected { .. } => return Instant::now(),
                    FeedItem::Closed(reason) => panic!("the feed ended: {reason:?}"),
                    _ => {}
                }
            }
        };
        let (done, watch_back, feed_back) = tokio::join!(restart, until("reconnected"), back);
        command.push(done - start);
        watched.push(watch_back - start);
        fed.push(feed_back - start);
        watch_after.push(watch_back.saturating_duration_since(done));
        feed_after.push(feed_back.saturating_duration_since(done));
    }
    let _ = watch.kill().await;

    let figures = |mut times: Vec<Duration>| {
        times.sort();
        format!(
            "p50 {:.1} ms, p90 {:.1} ms",
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.9))
        )
    };
    println!("{RESTARTS} restarts of a daemon with {SESSIONS} sessions:");
    println!(
        "  `daemon restart` itself:                      {}",
        figures(command)
    );
    println!(
        "  `sessions --watch --json` following again:    {}",
        figures(watched)
    );
    println!(
        "    after `daemon restart` returned:            {}",
        figures(watch_after)
    );
    println!(
        "  library Feed following one session again:    {}",
        figures(fed)
    );
    println!(
        "    after `daemon restart` returned:            {}",
        figures(feed_after)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
