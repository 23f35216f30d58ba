//! What a no-op PreToolUse hook adds to a tool call: the time from a call's announcement to
//! its result as a client sees it, for 100 `read` calls with the hook and 100 without.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench hooks`.

use std::time::{Duration, Instant};

use protocol::Event;
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, percentile, run_options, session_in, start_run};

const CALLS: usize = 100;

/// The call-to-result times of `CALLS` reads in a daemon with `config`.
async fn call_times(config: &str) -> Vec<Duration> {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "a\n").unwrap();
    let mut script: Vec<_> = (0..CALLS)
        .map(|_| anthropic::tool("read", json!({"path": "a.txt"})))
        .collect();
    script.push(anthropic::text("done"));
    let server = ModelServer::start(script).await;
    let daemon = Daemon::start_in(Home::with_config(config));
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "read", run_options(&server)).await;
    let mut times = Vec::new();
    let mut called = None;
    loop {
        let event = tests::next_event(&mut incoming).await;
        match event.event {
            Event::ToolCall(_) => called = Some(Instant::now()),
            Event::ToolResult { .. } => {
                if let Some(at) = called.take() {
                    times.push(at.elapsed());
                }
            }
            Event::RunFinished { .. } => break,
            _ => {}
        }
    }
    times.sort();
    times
}

#[tokio::main]
async fn main() {
    let hooks = tempfile::tempdir().unwrap();
    let noop = hooks.path().join("noop.sh");
    std::fs::write(&noop, "#!/bin/sh\ncat > /dev/null\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&noop, std::fs::Permissions::from_mode(0o755)).unwrap();
    let without = call_times("").await;
    let with = call_times(&format!(
        "[[hooks.PreToolUse]]\ncommand = \"{}\"\n",
        noop.display()
    ))
    .await;
    let (p50, p99) = (percentile(&without, 0.5), percentile(&without, 0.99));
    let (h50, h99) = (percentile(&with, 0.5), percentile(&with, 0.99));
    println!("read call to result without hooks: p50 {p50:?}, p99 {p99:?}");
    println!(
        "with a no-op PreToolUse hook: p50 {h50:?}, p99 {h99:?} (adds p50 {:?}, p99 {:?})",
        h50.saturating_sub(p50),
        h99.saturating_sub(p99)
    );
}
