//! Long-lived daemon figures: resident memory with 1,000 sessions of 1,000 events each after
//! every one was used; memory while a 100 MB session is attached; how soon an attach gets its
//! first event on a 50,000-event session; `agentctl show` on a 100 MB log; and the cost of
//! `durability = "fsync"` against `"flush"` for a whole run.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench long_lived`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use agentctl::client::{Client, Incoming};
use protocol::{Request, SessionId};
use tests::model_server::{ModelServer, Scripted, anthropic};
use tests::{Daemon, Home, percentile, process_cpu, run_options, start_run, subscribe};

fn rss(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        / 1024
}

/// Receives events until `count` have come, returning when the first came.
async fn receive(
    incoming: &mut tokio::sync::mpsc::UnboundedReceiver<Incoming>,
    count: usize,
    start: Instant,
) -> Duration {
    let mut first = None;
    let mut got = 0;
    while got < count {
        match incoming.recv().await {
            Some(Incoming::Event(_)) => {
                first.get_or_insert_with(|| start.elapsed());
                got += 1;
            }
            Some(Incoming::Lagged { .. }) => panic!("lagged"),
            Some(Incoming::ReplayDone { .. }) => {}
            other => panic!("{other:?}"),
        }
    }
    first.unwrap_or_default()
}

async fn many_sessions() {
    let home = Home::with_config("durability = \"flush\"\n");
    let start = Instant::now();
    for i in 0..1000 {
        tests::write_session(&home, &format!("m{i:07}"), 1000);
    }
    println!(
        "1,000 sessions of 1,000 events written in {:?}",
        start.elapsed()
    );
    let daemon = Daemon::start_in(home);
    let client = daemon.client().await;
    let idle = rss(daemon.pid(), "VmRSS:");
    let start = Instant::now();
    for i in 0..1000 {
        let (_, events) = client
            .history(&SessionId(format!("m{i:07}")))
            .await
            .unwrap();
        assert_eq!(events.len(), 1000);
    }
    println!(
        "every session's history read in {:?}: RSS {} MiB before, {} MiB after (peak {} MiB)",
        start.elapsed(),
        idle,
        rss(daemon.pid(), "VmRSS:"),
        rss(daemon.pid(), "VmHWM:")
    );
}

async fn one_large_session() {
    let home = Home::new();
    // About 100 MB: 460,000 events.
    tests::write_session(&home, "large001", 460_000);
    tests::write_session(&home, "fifty001", 50_000);
    let size = std::fs::metadata(home.paths().sessions_dir().join("large001/log.jsonl"))
        .unwrap()
        .len();
    let daemon = Daemon::start_in(home);
    let mut client = daemon.client().await;
    let mut incoming = client.take_incoming().unwrap();
    let start = Instant::now();
    subscribe(&client, &SessionId("large001".into()), 0).await;
    receive(&mut incoming, 460_000, start).await;
    println!(
        "attach to a {} MB session and replay all of it: {:?}, daemon RSS {} MiB (peak {} MiB)",
        size / 1_000_000,
        start.elapsed(),
        rss(daemon.pid(), "VmRSS:"),
        rss(daemon.pid(), "VmHWM:")
    );

    // Attach to a loaded 50,000-event session: from the start, and from near its end.
    let fifty = SessionId("fifty001".into());
    client.history(&fifty).await.unwrap();
    for (label, from) in [("from the start", 0u64), ("from seq 49,000", 49_000)] {
        let mut times = Vec::new();
        for _ in 0..20 {
            let mut attacher = daemon.client().await;
            let mut events = attacher.take_incoming().unwrap();
            let start = Instant::now();
            subscribe(&attacher, &fifty, from).await;
            times.push(receive(&mut events, 1, start).await);
        }
        times.sort();
        println!(
            "attach to a 50,000-event session {label}, first event after: p50 {:?}, p90 {:?}",
            percentile(&times, 0.5),
            percentile(&times, 0.9)
        );
    }

    let start = Instant::now();
    let shown = daemon
        .home
        .agentctl(&["show", "large001", "--json"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(shown.success());
    println!(
        "agentctl show --json of the {} MB session: {:?}",
        size / 1_000_000,
        start.elapsed()
    );
}

/// Two-turn runs (a tool call, then a reply) back to back; the daemon's CPU and wall time per
/// run under `durability`.
async fn runs(durability: &str) {
    let home = Home::with_config(&format!("durability = \"{durability}\"\n"));
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("README.md"), "# App\n").unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start_in(home);
    let mut client: Client = daemon.client().await;
    let mut incoming = client.take_incoming().unwrap();
    let session = tests::create_session(&client, project.path()).await.id;
    subscribe(&client, &session, 0).await;
    let script = || -> Vec<Scripted> {
        vec![
            anthropic::tool("read", serde_json::json!({"path": "README.md"})),
            anthropic::text("It is an app."),
        ]
    };
    let mut times = Vec::new();
    let cpu_before = process_cpu(daemon.pid());
    for _ in 0..200 {
        server.push(script());
        let start = Instant::now();
        start_run(&client, &session, "what is it?", run_options(&server)).await;
        tests::until_finished(&mut incoming).await;
        times.push(start.elapsed());
    }
    let cpu = process_cpu(daemon.pid()) - cpu_before;
    times.sort();
    println!(
        "durability = {durability:<7} two-turn run: median {:?}, p90 {:?}, daemon CPU {:?} per run",
        percentile(&times, 0.5),
        percentile(&times, 0.9),
        cpu / 200
    );
    let _ = client.request(Request::Cancel { session }).await;
}

#[tokio::main]
async fn main() {
    many_sessions().await;
    one_large_session().await;
    runs("flush").await;
    runs("fsync").await;
}
