//! Harness overhead of `agentctl run` for the two-turn task (read a file, then answer) against
//! a scripted server that answers at once: whole-process wall time and CPU of `agentctl`, the
//! daemon's CPU per run (from /proc), and, for comparison, two bare HTTP requests for the same
//! two streamed replies.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench run`.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use tests::model_server::{ModelServer, Scripted, anthropic};
use tests::{Daemon, Home, process_cpu};

const RUNS: usize = 200;

fn script() -> Vec<Scripted> {
    vec![
        anthropic::reply()
            .text("Let me read it.")
            .tool("read", json!({"path": "README.md"}))
            .build(),
        anthropic::text("Start it with `npm run dev`."),
    ]
}

fn children_cpu() -> Duration {
    // SAFETY: getrusage writes into the struct we pass.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("README.md"),
        "# App\nStart it with `npm run dev`.\n",
    )
    .unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start_in(Home::new());

    // Warm up.
    for _ in 0..10 {
        server.push(script());
        let out = daemon
            .home
            .agentctl_with(&server, project.path(), &["run", "go"])
            .output()
            .await
            .unwrap();
        assert!(out.status.success());
    }

    let mut walls = Vec::with_capacity(RUNS);
    let cpu_before = children_cpu();
    let daemon_before = process_cpu(daemon.pid());
    for _ in 0..RUNS {
        server.push(script());
        let start = Instant::now();
        let out = daemon
            .home
            .agentctl_with(&server, project.path(), &["run", "go"])
            .output()
            .await
            .unwrap();
        walls.push(start.elapsed());
        assert!(out.status.success());
    }
    let agentctl_cpu = (children_cpu() - cpu_before) / RUNS as u32;
    let daemon_cpu = (process_cpu(daemon.pid()) - daemon_before) / RUNS as u32;

    // Baseline: the same two streamed replies fetched with a bare HTTP client.
    let http = reqwest::Client::new();
    let mut bare = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        server.push(script());
        let start = Instant::now();
        for _ in 0..2 {
            let response = http
                .post(format!("{}/v1/messages", server.url()))
                .json(&json!({"model": "m", "messages": []}))
                .send()
                .await
                .unwrap();
            let mut body = response.bytes_stream();
            while body.next().await.is_some() {}
        }
        bare.push(start.elapsed());
    }
    let mut spawn = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        tokio::process::Command::new("true").status().await.unwrap();
        spawn.push(start.elapsed());
    }

    println!("agentctl run, two-turn task ({RUNS} runs):");
    println!("  wall time          median {:?}", median(walls));
    println!("  agentctl CPU       mean {agentctl_cpu:?} per run");
    println!("  daemon CPU         mean {daemon_cpu:?} per run");
    println!("baseline:");
    println!(
        "  two bare HTTP requests (in-process, warm connection)  median {:?}",
        median(bare)
    );
    println!(
        "  spawning /bin/true                                    median {:?}",
        median(spawn)
    );
}
