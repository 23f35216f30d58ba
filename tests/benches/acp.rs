//! ACP figures: the time from `session/prompt` to the first `agent_message_chunk` with an
//! instant scripted model; the replay of a 10,000-event session through `session/load`; and the
//! adapter's memory.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench acp`.

use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema::{LoadSessionRequest, PromptRequest, SessionUpdate};
use tests::acp::{new_session, with_editor};
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, percentile};

/// The `agentctl` this process started (the adapter), by its parent and name.
fn adapter_pid() -> Option<u32> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let (name, rest) = stat.split_once(") ")?;
            let ppid = rest.split_whitespace().nth(1)?;
            (name.ends_with("(agentctl") && ppid == me)
                .then(|| entry.file_name().to_str()?.parse().ok())
                .flatten()
        })
}

fn peak_mib(pid: Option<u32>) -> f64 {
    pid.map_or(0.0, |pid| tests::peak_rss(pid) as f64 / (1 << 20) as f64)
}

async fn first_chunk() {
    const PROMPTS: usize = 100;
    let model = ModelServer::start((0..PROMPTS).map(|_| anthropic::text("hi")).collect()).await;
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let cwd = project.path().to_path_buf();
    let (times, _child) = with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, _| {
            let session = new_session(&cx, &cwd).await;
            let mut times = Vec::with_capacity(PROMPTS);
            for _ in 0..PROMPTS {
                let start = Instant::now();
                let pending =
                    cx.send_request(PromptRequest::new(session.clone(), vec!["hello".into()]));
                got.updates_until(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)))
                    .await;
                times.push(start.elapsed());
                pending.block_task().await.unwrap();
                got.drain();
            }
            (times, peak_mib(adapter_pid()))
        },
    )
    .await;
    let (mut times, rss) = times;
    times.sort();
    println!(
        "session/prompt to the first agent_message_chunk: p50 {:?}, p99 {:?} over {PROMPTS} prompts; adapter peak RSS {rss:.1} MiB",
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    );
}

async fn replay() {
    let home = Home::new();
    tests::write_session(&home, "replay01", 10_000);
    tests::write_session(&home, "replay02", 10_000);
    tests::reserve_through(&home, "replay02", 10_100);
    let model = ModelServer::start(vec![]).await;
    let daemon = Daemon::start_in(home);
    // The daemon's own replay, for comparison: every event to a protocol client.
    let mut client = daemon.client().await;
    let start = Instant::now();
    tests::subscribe(&client, &protocol::SessionId("replay01".into()), 0).await;
    let mut incoming = client.take_incoming().unwrap();
    let mut received = 0;
    while received < 10_000 {
        match incoming.recv().await {
            Some(agentctl::client::Incoming::Event(e)) if e.seq >= 10_000 => break,
            Some(agentctl::client::Incoming::Event(_)) => received += 1,
            other => panic!("{other:?}"),
        }
    }
    println!(
        "subscribe from 0 to a 10,000-event session over the daemon protocol: {:?}",
        start.elapsed()
    );
    drop(client);
    let (elapsed, updates, rss) = load(&daemon, &model, "replay01").await;
    println!(
        "session/load of a 10,000-event session: {elapsed:?} ({updates} updates replayed); adapter peak RSS {rss:.1} MiB"
    );
    let (elapsed, updates, _) = load(&daemon, &model, "replay02").await;
    println!(
        "session/load of a 10,000-event session whose last seq lies 100 past its last event: {elapsed:?} ({updates} updates replayed)"
    );
}

/// `session/load` of `id` in a new adapter: how long until the answer, the updates replayed,
/// and the adapter's peak memory.
async fn load(daemon: &Daemon, model: &ModelServer, id: &'static str) -> (Duration, usize, f64) {
    let project = tempfile::tempdir().unwrap();
    let (measured, _child) = with_editor(
        &daemon.home,
        model,
        project.path(),
        async move |cx, mut got, _| {
            let start = Instant::now();
            cx.send_request(LoadSessionRequest::new(id, "/"))
                .block_task()
                .await
                .unwrap();
            let elapsed = start.elapsed();
            (elapsed, got.drain().len(), peak_mib(adapter_pid()))
        },
    )
    .await;
    measured
}

/// From `session/cancel` to the answer `cancelled`, with a command running.
async fn cancel() {
    const ROUNDS: usize = 20;
    let project = tempfile::tempdir().unwrap();
    let script = (0..ROUNDS)
        .map(|_| anthropic::tool("bash", serde_json::json!({"command": "sleep 600"})))
        .collect();
    let model = ModelServer::start(script).await;
    let home = Home::new();
    let daemon = Daemon::start_in(home);
    let cwd = project.path().to_path_buf();
    let (mut times, _child) =
        with_editor(
            &daemon.home,
            &model,
            project.path(),
            async move |cx, mut got, _| {
                let session = new_session(&cx, &cwd).await;
                let mut times = Vec::with_capacity(ROUNDS);
                for _ in 0..ROUNDS {
                    let pending =
                        cx.send_request(PromptRequest::new(session.clone(), vec!["sleep".into()]));
                    let (ask, responder) = got.ask().await;
                    let allow = ask.options[0].option_id.clone();
                    responder
                .respond(agent_client_protocol::v1::schema::RequestPermissionResponse::new(
                    agent_client_protocol::v1::schema::RequestPermissionOutcome::Selected(
                        agent_client_protocol::v1::schema::SelectedPermissionOutcome::new(allow),
                    ),
                ))
                .unwrap();
                    // The command runs once its call is announced as running.
                    got.updates_until(|u| matches!(u, SessionUpdate::ToolCall(_)))
                        .await;
                    let start = Instant::now();
                    cx.send_notification(
                        agent_client_protocol::v1::schema::CancelNotification::new(session.clone()),
                    )
                    .unwrap();
                    pending.block_task().await.unwrap();
                    times.push(start.elapsed());
                    got.drain();
                }
                times
            },
        )
        .await;
    times.sort();
    println!(
        "session/cancel to the answer `cancelled`, a `bash` call under way: p50 {:?}, p99 {:?} over {ROUNDS}",
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    );
}

#[tokio::main]
async fn main() {
    first_chunk().await;
    cancel().await;
    replay().await;
}
