//! MCP figures: the round trip of a call whose tool does nothing (what the daemon's client adds
//! over the server's own time), over stdio and Streamable HTTP; how fast a cancelled call
//! returns; the daemon's memory with 10 servers connected; and how many server processes 20
//! sessions using 3 servers need.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench mcp`.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use agentd::config::{Config, ConfigState};
use agentd::mcp::{McpHub, SessionSide};
use protocol::SessionId;
use serde_json::json;
use tests::mcp::{ServerEvents, http_server, quiet_entry, stdio_entry};
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, percentile, session_in, start_run, until_finished};
use tokio_util::sync::CancellationToken;

/// A hub (the daemon's MCP client side, in this process) configured with `config`.
fn hub(config: &str) -> McpHub {
    let config = Config::parse(config, Path::new("bench.toml")).expect("a valid config");
    let state = ConfigState::good(config);
    let (_tx, rx) = tokio::sync::watch::channel(state);
    // The sender may go: the hub keeps the last configuration.
    McpHub::new(
        reqwest::Client::new(),
        agentd::tools::processes::ProcessRecords::default(),
        rx,
    )
}

fn side() -> SessionSide {
    SessionSide {
        id: SessionId("bench".into()),
        cwd: std::env::temp_dir(),
        env: Arc::new(agentd::shell_env::current()),
    }
}

async fn call_latency(label: &str, config: &str, server: &str) {
    let hub = hub(config);
    let side = side();
    let cancel = CancellationToken::new();
    let tools = hub.toolset(&side, &cancel).await;
    let echo = tools
        .get(&format!("mcp__{server}__echo"))
        .expect("the echo tool")
        .clone();
    const CALLS: usize = 2000;
    let mut times = Vec::with_capacity(CALLS);
    for i in 0..CALLS + 100 {
        let start = Instant::now();
        let output = hub.call(&side, &echo, json!({"text": "x"}), &cancel).await;
        assert!(!output.is_error, "{}", output.output);
        if i >= 100 {
            times.push(start.elapsed());
        }
    }
    times.sort();
    println!(
        "call round trip ({label}, a tool that does nothing): p50 {:?}, p99 {:?} over {CALLS} calls",
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    );
    hub.shutdown().await;
}

/// The same calls from a bare rmcp client: what the transport and the SDK cost by themselves.
async fn bare_client_latency() {
    use rmcp::ServiceExt;
    let command = tokio::process::Command::new(tests::binary("mcp_server"));
    let transport = rmcp::transport::TokioChildProcess::new(command).expect("the server starts");
    let client = ().serve(transport).await.expect("initialize");
    const CALLS: usize = 2000;
    let mut times = Vec::with_capacity(CALLS);
    for i in 0..CALLS + 100 {
        let args = json!({"text": "x"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let params = rmcp::model::CallToolRequestParams::new("echo").with_arguments(args);
        let start = Instant::now();
        client.peer().call_tool(params).await.expect("a result");
        if i >= 100 {
            times.push(start.elapsed());
        }
    }
    times.sort();
    println!(
        "call round trip (stdio, bare rmcp client, for comparison): p50 {:?}, p99 {:?}",
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    );
    let _ = client.cancel().await;
}

async fn cancel_latency() {
    let events = ServerEvents::new();
    let hub = hub(&stdio_entry("s", &events, ""));
    let side = side();
    let tools = hub.toolset(&side, &CancellationToken::new()).await;
    let hang = tools.get("mcp__s__hang").expect("the hang tool").clone();
    events.until("started").await;
    const ROUNDS: usize = 50;
    let mut times = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let cancel = CancellationToken::new();
        let call = {
            let (hub, side, hang, cancel) =
                (hub.clone(), side.clone(), hang.clone(), cancel.clone());
            tokio::spawn(async move { hub.call(&side, &hang, json!({}), &cancel).await })
        };
        events.until("call hang").await;
        let start = Instant::now();
        cancel.cancel();
        let output = call.await.expect("the call task");
        times.push(start.elapsed());
        assert!(output.is_error);
    }
    times.sort();
    println!(
        "cancel of a running call to its result: p50 {:?}, p99 {:?} over {ROUNDS} calls",
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    );
    hub.shutdown().await;
}

/// Resident memory of `pid` now (`VmRSS`).
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

/// Live processes whose parent is `parent`.
fn children(parent: u32) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.flatten()
        .filter(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().collect())
                .unwrap_or_default();
            fields.len() > 1 && fields[1] == parent.to_string() && fields[0] != "Z"
        })
        .count()
}

async fn memory_with_ten_servers() {
    let config: String = (0..10).map(|i| quiet_entry(&format!("s{i}"), "")).collect();
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![anthropic::text("hello")]).await;
    let daemon = Daemon::start_in(Home::with_config(&config));
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let before = rss(daemon.pid());
    start_run(&client, &session, "hi", tests::run_options(&model)).await;
    until_finished(&mut incoming).await;
    let after = rss(daemon.pid());
    println!(
        "daemon RSS: {:.1} MiB before, {:.1} MiB with 10 stdio servers connected ({} server processes)",
        before as f64 / (1 << 20) as f64,
        after as f64 / (1 << 20) as f64,
        children(daemon.pid())
    );
}

async fn processes_for_twenty_sessions(scope: &str) {
    let extra = format!("scope = \"{scope}\"");
    let config: String = ["a", "b", "c"]
        .iter()
        .map(|name| quiet_entry(name, &extra))
        .collect();
    let project = tempfile::tempdir().unwrap();
    let mut script = Vec::new();
    for _ in 0..20 {
        script.push(
            anthropic::reply()
                .tool("mcp__a__echo", json!({"text": "a"}))
                .tool("mcp__b__echo", json!({"text": "b"}))
                .tool("mcp__c__echo", json!({"text": "c"}))
                .build(),
        );
        script.push(anthropic::text("done"));
    }
    let model = ModelServer::start(script).await;
    let daemon = Daemon::start_in(Home::with_config(&config));
    let mut options = tests::run_options(&model);
    options.grants.push(protocol::PermissionClass::Mcp);
    let mut clients = Vec::new();
    let started = Instant::now();
    for _ in 0..20 {
        let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
        start_run(&client, &session, "use all three", options.clone()).await;
        until_finished(&mut incoming).await;
        clients.push(client);
    }
    println!(
        "20 sessions calling 3 `{scope}`-scope servers: {} server processes, daemon RSS {:.1} MiB ({:?})",
        children(daemon.pid()),
        rss(daemon.pid()) as f64 / (1 << 20) as f64,
        started.elapsed()
    );
}

#[tokio::main]
async fn main() {
    call_latency("stdio", &quiet_entry("s", ""), "s").await;
    bare_client_latency().await;
    let (_server, url) = http_server(None).await;
    call_latency("HTTP", &format!("[mcp_servers.h]\nurl = {url:?}\n"), "h").await;
    cancel_latency().await;
    memory_with_ten_servers().await;
    processes_for_twenty_sessions("daemon").await;
    processes_for_twenty_sessions("session").await;
}
