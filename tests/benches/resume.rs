//! Continuity figures: after `kill -9` of a daemon with 100 sessions of which 10 were running,
//! how long the new daemon takes to start (to its ready line), and from its start to the first
//! and the tenth resumed run's model request.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench resume`.

use std::time::Instant;

use tests::model_server::{Gate, ModelServer, Scripted, anthropic};
use tests::{Daemon, Home, run_options, session_in, start_run};

const SESSIONS: usize = 100;
const RUNNING: usize = 10;

#[tokio::main]
async fn main() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    // Each running session's reply is held mid-stream; after the restart each is asked again.
    let mut script: Vec<Scripted> = (0..RUNNING)
        .map(|_| anthropic::text("a long answer").hold_after(4, &gate))
        .collect();
    script.extend((0..RUNNING).map(|_| anthropic::text("done")));
    let server = ModelServer::start(script).await;
    let env = [
        ("ANTHROPIC_BASE_URL", server.url()),
        ("ANTHROPIC_API_KEY", "test-key"),
    ];
    let mut daemon = Daemon::start_with(Home::new(), &env);
    for _ in 0..RUNNING {
        let (client, session, _incoming) = session_in(&daemon, project.path()).await;
        start_run(&client, &session, "think", run_options(&server)).await;
    }
    let client = daemon.client().await;
    for _ in RUNNING..SESSIONS {
        tests::create_session(&client, project.path()).await;
    }
    server.wait_for_requests(RUNNING).await;
    drop(client);
    daemon.kill();
    gate.release();

    let start = Instant::now();
    daemon.restart();
    let ready = start.elapsed();
    server.wait_for_requests(RUNNING + 1).await;
    let first = start.elapsed();
    server.wait_for_requests(2 * RUNNING).await;
    let all = start.elapsed();
    println!(
        "kill -9 with {SESSIONS} sessions, {RUNNING} running: new daemon ready in {ready:?}; first resumed run's model request {first:?} after its start, all {RUNNING} by {all:?}"
    );
}
