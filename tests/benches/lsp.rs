//! What language servers cost and give (docs/architecture.md#language-servers), with pyright on a
//! small Python project: the latency from an `edit` call to its result (p50 and p90 over 30
//! edits that break and fix a type in turn) with diagnostics and with `[lsp] enabled = false`;
//! a session's first diagnostics from a cold server (the daemon's first session in the project)
//! against a warm one (a second session in the same project); and the daemon's memory with
//! three servers running (three projects), the servers' own reported apart.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench lsp`. Skips, naming the
//! script that installs it, without pyright.

use std::path::Path;
use std::time::{Duration, Instant};

use protocol::{Event, SessionId};
use serde_json::json;
use tests::language_servers::{pyright_config, pyright_or_skip};
use tests::model_server::{ModelServer, Scripted, anthropic};
use tests::{
    Daemon, Home, descendants, next_event, percentile, rss, run_options, session_in, start_run,
};

/// Edits timed each way.
const EDITS: usize = 30;
/// Fresh daemons started for the cold and warm first diagnostics.
const COLD_STARTS: usize = 5;
/// The project's file: clean.
const CLEAN: &str =
    "def add(a: int, b: int) -> int:\n    return a + b\n\n\nx: int = 1\nprint(add(x, 2))\n";

/// A project with `m.py` in `dir`.
fn project(dir: &Path) {
    std::fs::create_dir_all(dir).expect("the project");
    std::fs::write(dir.join("pyproject.toml"), "").expect("pyproject.toml");
    std::fs::write(dir.join("m.py"), CLEAN).expect("m.py");
}

/// A daemon in a fresh home with `config`.
fn daemon(config: &str) -> Daemon {
    Daemon::start_in(Home::with_config(config))
}

/// `read m.py`, then `EDITS` edits that break and fix `x`'s type in turn, then an answer.
fn edits() -> Vec<Scripted> {
    let mut script = vec![anthropic::tool("read", json!({"path": "m.py"}))];
    for i in 0..EDITS {
        let (old, new) = if i % 2 == 0 {
            ("x: int = 1", "x: int = \"s\"")
        } else {
            ("x: int = \"s\"", "x: int = 1")
        };
        script.push(anthropic::tool(
            "edit",
            json!({"path": "m.py", "old_string": old, "new_string": new}),
        ));
    }
    script.push(anthropic::text("Done."));
    script
}

/// Runs `script` in a new session of `daemon` in `dir`; for each call of `tool`, the time from
/// the call's event to its result's as this client saw them, and the result.
async fn timed_calls(
    daemon: &Daemon,
    dir: &Path,
    script: Vec<Scripted>,
    tool: &str,
) -> Vec<(Duration, String)> {
    let server = ModelServer::start(script).await;
    let (client, session, mut incoming): (_, SessionId, _) = session_in(daemon, dir).await;
    start_run(&client, &session, "go", run_options(&server)).await;
    let mut called = std::collections::HashMap::new();
    let mut timed = Vec::new();
    loop {
        let event = next_event(&mut incoming).await;
        match event.event {
            Event::ToolCall(call) if call.name == tool => {
                called.insert(call.id, Instant::now());
            }
            Event::ToolResult { id, output, .. } => {
                if let Some(at) = called.remove(&id) {
                    timed.push((at.elapsed(), output));
                }
            }
            Event::RunFinished { .. } => return timed,
            _ => {}
        }
    }
}

/// p50 and p90 of `times`, in milliseconds, as text.
fn quantiles(times: &mut [Duration]) -> String {
    times.sort();
    format!(
        "p50 {:.1} ms, p90 {:.1} ms",
        percentile(times, 0.5).as_secs_f64() * 1e3,
        percentile(times, 0.9).as_secs_f64() * 1e3
    )
}

/// Edit-to-result latency with and without diagnostics.
async fn edit_latency(config: &str, base: &Path) {
    for (label, config) in [
        ("with diagnostics", config.to_string()),
        (
            "without (enabled = false)",
            config.replace("[lsp]\n", "[lsp]\nenabled = false\n"),
        ),
    ] {
        let dir = base.join(label.split(' ').next().unwrap_or("p"));
        project(&dir);
        let daemon = daemon(&config);
        let timed = timed_calls(&daemon, &dir, edits(), "edit").await;
        let with = timed
            .iter()
            .filter(|(_, out)| out.contains("diagnostics"))
            .count();
        let mut times: Vec<Duration> = timed.into_iter().map(|(t, _)| t).collect();
        println!(
            "edit to result, {label}: {} ({} edits, {with} with a diagnostics piece)",
            quantiles(&mut times),
            times.len()
        );
    }
}

/// A session's first diagnostics from a cold server and from a warm one.
async fn cold_and_warm(config: &str, base: &Path) {
    // A new file each time (an existing one would have to be read first).
    let write = |file: &str, content: &str| {
        vec![
            anthropic::tool("write", json!({"path": file, "content": content})),
            anthropic::text("Done."),
        ]
    };
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for round in 0..COLD_STARTS {
        let dir = base.join(format!("cold{round}"));
        project(&dir);
        let daemon = daemon(config);
        let broken = CLEAN.replace("x: int = 1", "x: int = \"s\"");
        for (times, file) in [(&mut cold, "first.py"), (&mut warm, "second.py")] {
            let timed = timed_calls(&daemon, &dir, write(file, &broken), "write").await;
            let (time, output) = &timed[0];
            assert!(output.contains("diagnostics (pyright)"), "{output}");
            times.push(*time);
        }
    }
    println!(
        "first diagnostics of a session: cold server {} ; warm server (second session) {}",
        quantiles(&mut cold),
        quantiles(&mut warm)
    );
}

/// The daemon's memory before any server and with three running, theirs apart.
async fn memory(config: &str, base: &Path) {
    let daemon = daemon(config);
    let idle = rss(daemon.pid());
    for n in 0..3 {
        let dir = base.join(format!("memory{n}"));
        project(&dir);
        let broken = CLEAN.replace("x: int = 1", "x: int = \"s\"");
        let script = vec![
            anthropic::tool("write", json!({"path": "new.py", "content": broken})),
            anthropic::text("Done."),
        ];
        let timed = timed_calls(&daemon, &dir, script, "write").await;
        assert!(timed[0].1.contains("diagnostics"), "{}", timed[0].1);
    }
    let servers: u64 = descendants(daemon.pid()).into_iter().map(rss).sum();
    println!(
        "daemon RSS: {:.1} MiB before any server, {:.1} MiB with three; the three servers (with their sandbox helpers) {:.1} MiB",
        idle as f64 / 1048576.0,
        rss(daemon.pid()) as f64 / 1048576.0,
        servers as f64 / 1048576.0
    );
}

#[tokio::main]
async fn main() {
    let Some(pyright) = pyright_or_skip() else {
        return;
    };
    let config = pyright_config(&pyright, 15000, 600);
    let base = tempfile::tempdir().expect("a temporary directory");
    let base = base.path().canonicalize().expect("a real path");
    edit_latency(&config, &base).await;
    cold_and_warm(&config, &base).await;
    memory(&config, &base).await;
}
