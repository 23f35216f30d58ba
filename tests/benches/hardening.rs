//! Hardening figures: the daemon's peak memory while a model reads `/dev/zero` (and a FIFO) in
//! every way it can, how fast a cancel ends a run that waits for a full tool pool, and how long
//! a stalled frame is held before it is dropped.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench hardening`.

use std::time::Instant;

use agentctl::client::frames as frame;
use protocol::{ClientFrame, Event, Hello, PROTOCOL_VERSION, Request, ServerFrame};
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{
    Daemon, Home, events_until, peak_rss, percentile, run_options, session_in, start_run,
    until_finished,
};
use tokio::io::AsyncWriteExt;

async fn memory_while_reading_dev_zero() {
    let project = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/dev/zero", project.path().join("zero.rs")).unwrap();
    tests::make_fifo(&project.path().join("pipe.rs"));
    let mut reply = anthropic::reply();
    for i in 0..16 {
        reply = reply.tool_with_id(&format!("r{i}"), "read", json!({"path": "zero.rs"}));
    }
    let reply = reply
        .tool("read", json!({"path": "pipe.rs"}))
        .tool("grep", json!({"pattern": "x", "path": "zero.rs"}))
        .tool("grep", json!({"pattern": "x"}))
        .build();
    let server = ModelServer::start(vec![reply, anthropic::text("done")]).await;
    let daemon = Daemon::start();
    let idle = peak_rss(daemon.pid());
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let start = Instant::now();
    start_run(&client, &session, "read it all", run_options(&server)).await;
    until_finished(&mut incoming).await;
    println!(
        "peak RSS: {} MiB idle, {} MiB after 16 reads of /dev/zero, a FIFO and greps (run took {:?})",
        idle >> 20,
        peak_rss(daemon.pid()) >> 20,
        start.elapsed()
    );
}

async fn cancel_with_a_full_pool() {
    let home = Home::with_config("tool_pool_size = 1\n");
    let project = tempfile::tempdir().unwrap();
    let started = project.path().join("started");
    tests::make_fifo(&started);
    const ROUNDS: usize = 30;
    let mut script = vec![anthropic::tool(
        "bash",
        json!({"command": "echo $$ > started; exec sleep 600"}),
    )];
    for _ in 0..ROUNDS {
        script.push(anthropic::tool("bash", json!({"command": "true"})));
    }
    let server = ModelServer::start(script).await;
    let daemon = Daemon::start_in(home);
    let (holder, held, _held_events) = session_in(&daemon, project.path()).await;
    start_run(&holder, &held, "hold the pool", run_options(&server)).await;
    tests::read_fifo(&started).await;
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let mut times = Vec::new();
    for _ in 0..ROUNDS {
        start_run(&client, &session, "wait for the pool", run_options(&server)).await;
        events_until(&mut incoming, |e| matches!(e, Event::ToolCall(_))).await;
        let start = Instant::now();
        client
            .request(Request::Cancel {
                session: session.clone(),
            })
            .await
            .unwrap();
        until_finished(&mut incoming).await;
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "cancel with a full pool, cancel sent to run finished: p50 {:?}, p99 {:?}, max {:?}",
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times[times.len() - 1]
    );
    holder
        .request(Request::Cancel { session: held })
        .await
        .unwrap();
}

async fn stalled_frame() {
    let daemon = Daemon::start();
    let mut times = Vec::new();
    for _ in 0..3 {
        let mut stream = tokio::net::UnixStream::connect(&daemon.paths().socket)
            .await
            .unwrap();
        let hello = ClientFrame::Hello(Hello {
            protocol_version: PROTOCOL_VERSION,
            client: "bench".into(),
        });
        frame::write_frame(&mut stream, &hello).await.unwrap();
        let _welcome = frame::read_frame::<ServerFrame, _>(&mut stream).await;
        stream
            .write_all(&(16u32 * 1024 * 1024).to_be_bytes())
            .await
            .unwrap();
        stream.write_all(&[0]).await.unwrap();
        let start = Instant::now();
        let dropped = frame::read_frame::<ServerFrame, _>(&mut stream).await;
        times.push(start.elapsed());
        assert!(
            matches!(dropped, Ok(Some(ServerFrame::Error(_)))),
            "{dropped:?}"
        );
    }
    times.sort();
    println!(
        "stalled frame (16 MiB announced, 1 byte sent) dropped after: median {:?} (frame_timeout_ms default 5000)",
        times[1]
    );
}

/// Peak memory while 60 clients each hold 8 MiB of an unfinished 16 MiB frame.
async fn stalled_partial_frames() {
    let daemon = Daemon::start_in(Home::with_config("frame_timeout_ms = 600000\n"));
    let before = peak_rss(daemon.pid());
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..60 {
        let mut stream = tests::wire::raw(&daemon).await;
        tests::wire::hello(&mut stream).await;
        tasks.spawn(async move {
            let mut bytes = (16u32 * 1024 * 1024).to_be_bytes().to_vec();
            bytes.resize(4 + 8 * 1024 * 1024, 7);
            let _ = stream.write_all(&bytes).await;
            stream
        });
    }
    let mut held = Vec::new();
    while let Some(stream) = tasks.join_next().await {
        held.push(stream.unwrap());
    }
    let client = daemon.client().await;
    let now = match client.request(Request::Status).await {
        Ok(protocol::Reply::Status(status)) => status.rss_bytes.unwrap_or(0),
        _ => 0,
    };
    println!(
        "60 stalled 8 MiB partial frames: daemon peak RSS {} MiB, {} MiB once all were read (was {} MiB before them; frame budget 64 MiB)",
        peak_rss(daemon.pid()) / (1024 * 1024),
        now / (1024 * 1024),
        before / (1024 * 1024)
    );
}

#[tokio::main]
async fn main() {
    stalled_partial_frames().await;
    memory_while_reading_dev_zero().await;
    cancel_with_a_full_pool().await;
    stalled_frame().await;
}
