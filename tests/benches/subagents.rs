//! Subagent figures (docs/architecture.md#subagents): the daemon's CPU and memory per child
//! session, the time from a `task` call to the child's first model request, and one parent's 50
//! children at `max_parallel = 4`: every result delivered, and the daemon's memory after.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench subagents`.

use std::time::{Duration, Instant};

use serde_json::json;
use tests::model_server::{ModelServer, Scripted, anthropic};
use tests::{Daemon, Home, process_cpu, rss, run_options, session_in, start_run, tool_results};

const CHILDREN: usize = 50;

#[tokio::main]
async fn main() {
    let project = tempfile::tempdir().unwrap();

    // One child, alone: from the `task` call's reply to the child's first request.
    let server = ModelServer::start(vec![
        anthropic::tool(
            "task",
            json!({"description": "one", "prompt": "SOLO: answer"}),
        ),
        anthropic::text("done"),
    ])
    .await;
    server.route("SOLO", vec![anthropic::text("solo answer")]);
    let daemon = Daemon::start_with(Home::new(), &[]);
    let (client, parent, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &parent, "go", run_options(&server)).await;
    let mut called = None;
    loop {
        let event = tests::next_event(&mut incoming).await;
        if matches!(&event.event, protocol::Event::ToolCall(c) if c.name == "task") {
            called = Some(Instant::now());
        }
        if matches!(event.event, protocol::Event::RunFinished { .. }) {
            break;
        }
        if called.is_some() && server.received().len() >= 2 {
            break;
        }
    }
    server.wait_for_requests(2).await;
    let to_first = called.map(|at| at.elapsed());
    tests::until_finished(&mut incoming).await;
    drop(daemon);

    // 50 children of one parent, four at a time.
    let calls = (0..CHILDREN).fold(anthropic::reply(), |reply, n| {
        reply.tool(
            "task",
            json!({"description": format!("part {n}"), "prompt": format!("CHILD-{n:03}: do it")}),
        )
    });
    let server = ModelServer::start(vec![calls.build(), anthropic::text("all done")]).await;
    for n in 0..CHILDREN {
        let answer: Scripted = anthropic::text(&format!("result {n}"));
        server.route(&format!("CHILD-{n:03}"), vec![answer]);
    }
    let home =
        Home::with_config("retry_base_ms = 5\nretry_max_ms = 20\n[subagents]\nmax_parallel = 4\n");
    let daemon = Daemon::start_with(home, &[]);
    let pid = daemon.pid();
    let (client, parent, mut incoming) = session_in(&daemon, project.path()).await;
    let (cpu0, rss0) = (process_cpu(pid), rss(pid));
    let start = Instant::now();
    start_run(&client, &parent, "split it", run_options(&server)).await;
    let events = tests::until_finished(&mut incoming).await;
    let took = start.elapsed();
    let results = tool_results(&events);
    let delivered = (0..CHILDREN)
        .filter(|n| {
            let want = format!("result {n}\n");
            results.iter().any(|(_, e, o)| !e && o.contains(&want))
        })
        .count();
    let cpu = process_cpu(pid) - cpu0;
    let rss_after = rss(pid);
    let per_child_cpu = cpu / CHILDREN as u32;
    let per_child_rss = rss_after.saturating_sub(rss0) / CHILDREN as u64;
    println!(
        "task call to the child's first model request: {:?}",
        to_first.unwrap_or(Duration::ZERO)
    );
    println!(
        "{CHILDREN} children at max_parallel 4: {delivered}/{CHILDREN} results delivered in {took:?}; daemon CPU {cpu:?} ({per_child_cpu:?} per child); RSS {} KiB before, {} KiB after ({} KiB per child)",
        rss0 / 1024,
        rss_after / 1024,
        per_child_rss / 1024
    );
    assert_eq!(delivered, CHILDREN);
}
