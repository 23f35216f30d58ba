//! Foundation figures: the whole-process time of `agentctl sessions` against a running daemon,
//! and the daemon's resident memory idle and with 1,000 sessions.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench foundation`.

use std::time::{Duration, Instant};

use tests::{Daemon, create_session};

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn time_sessions(daemon: &Daemon, runs: usize) -> (Duration, Duration) {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let output = daemon.home.run_agentctl(&["sessions"]);
        times.push(start.elapsed());
        assert!(output.status.success());
    }
    times.sort();
    (times[runs / 2], times[runs * 9 / 10])
}

#[tokio::main]
async fn main() {
    let daemon = Daemon::start();
    let client = daemon.client().await;
    let dir = std::env::temp_dir();
    // Warm up the page cache and the daemon.
    time_sessions(&daemon, 10);
    let (median, p90) = time_sessions(&daemon, 200);
    println!("agentctl sessions, 0 sessions:     median {median:?}, p90 {p90:?}");
    println!(
        "daemon RSS idle:                   {} KiB",
        rss_kib(daemon.pid())
    );

    let start = Instant::now();
    for _ in 0..1000 {
        create_session(&client, &dir).await;
    }
    println!("create 1,000 sessions:             {:?}", start.elapsed());
    let (median, p90) = time_sessions(&daemon, 200);
    println!("agentctl sessions, 1,000 sessions: median {median:?}, p90 {p90:?}");
    println!(
        "daemon RSS with 1,000 sessions:    {} KiB",
        rss_kib(daemon.pid())
    );
}
