//! Harness overhead of `agentctl run` for the two-turn task (read a file, then answer) against
//! a scripted server that answers at once: whole-process wall time and CPU of `agentctl`, the
//! daemon's CPU per run (from /proc), warm (the daemon running) and cold (each run starts the
//! daemon), against the floor: one `curl` process making the same two streamed requests. The
//! warm runs are measured over Anthropic's Messages API and over OpenAI's Responses API
//! (`--provider responses`).
//!
//! Run with `cargo build --release && cargo bench -p tests --bench run`.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use tests::model_server::{ModelServer, Scripted, anthropic, responses};
use tests::{Daemon, Home, children_cpu, process_cpu};

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

/// The same task in the Responses API's format.
fn responses_script() -> Vec<Scripted> {
    vec![
        responses::reply()
            .text("Let me read it.")
            .tool("call_1", "read", json!({"path": "README.md"}))
            .build(),
        responses::text("Start it with `npm run dev`."),
    ]
}

/// What a provider's warm runs cost: each run's wall time, and the mean CPU of `agentctl` and
/// of the daemon per run.
struct Warm {
    walls: Vec<Duration>,
    agentctl_cpu: Duration,
    daemon_cpu: Duration,
}

/// `RUNS` runs of `agentctl ARGS` (with `env`) on the running `daemon`, each answered by
/// `script`, after ten to warm up.
async fn warm_runs(
    daemon: &Daemon,
    server: &ModelServer,
    project: &std::path::Path,
    script: fn() -> Vec<Scripted>,
    args: &[&str],
    env: &[(String, String)],
) -> Warm {
    let run = || {
        let mut command = daemon.home.agentctl_with(server, project, args);
        command.envs(env.iter().map(|(k, v)| (k, v)));
        command
    };
    for _ in 0..10 {
        server.push(script());
        let out = run().output().await.unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut walls = Vec::with_capacity(RUNS);
    let cpu_before = children_cpu();
    let daemon_before = process_cpu(daemon.pid());
    for _ in 0..RUNS {
        server.push(script());
        let start = Instant::now();
        let out = run().output().await.unwrap();
        walls.push(start.elapsed());
        assert!(out.status.success());
    }
    Warm {
        walls,
        agentctl_cpu: (children_cpu() - cpu_before) / RUNS as u32,
        daemon_cpu: (process_cpu(daemon.pid()) - daemon_before) / RUNS as u32,
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Client and daemon CPU of a run that starts the daemon, mean of 20 (each daemon stopped after).
async fn cold_runs(project: &std::path::Path) -> Duration {
    const COLD: usize = 20;
    let server = ModelServer::start(vec![]).await;
    let home = Home::new();
    let mut total = Duration::ZERO;
    for _ in 0..COLD {
        server.push(script());
        let before = children_cpu();
        let out = home
            .agentctl_with(&server, project, &["run", "go"])
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let client = children_cpu() - before;
        let pid: u32 = std::fs::read_to_string(home.paths().pid_file())
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let daemon = process_cpu(pid);
        let stop = home.run_agentctl(&["daemon", "stop"]);
        assert!(stop.status.success());
        total += client + daemon;
    }
    total / COLD as u32
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

    let Warm {
        walls,
        agentctl_cpu,
        daemon_cpu,
    } = warm_runs(
        &daemon,
        &server,
        project.path(),
        script,
        &["run", "go"],
        &[],
    )
    .await;
    let over_responses = warm_runs(
        &daemon,
        &server,
        project.path(),
        responses_script,
        &["run", "--provider", "responses", "--model", "gpt-5", "go"],
        &[("OPENAI_BASE_URL".into(), format!("{}/v1", server.url()))],
    )
    .await;

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
    // The floor: one curl process fetching the same two streamed replies.
    let curl_before = children_cpu();
    let mut curl_walls = Vec::with_capacity(RUNS);
    let url = format!("{}/v1/messages", server.url());
    for _ in 0..RUNS {
        server.push(script());
        let start = Instant::now();
        let status = std::process::Command::new("curl")
            .args([
                "-s",
                "-N",
                "-o",
                "/dev/null",
                "-o",
                "/dev/null",
                "-H",
                "content-type: application/json",
                "-d",
                "{}",
            ])
            .args([&url, &url])
            .status()
            .expect("curl runs");
        curl_walls.push(start.elapsed());
        assert!(status.success());
    }
    let curl_cpu = (children_cpu() - curl_before) / RUNS as u32;
    let cold = cold_runs(project.path()).await;
    let mut spawn = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        tokio::process::Command::new("true").status().await.unwrap();
        spawn.push(start.elapsed());
    }

    let warm = agentctl_cpu + daemon_cpu;
    println!("agentctl run, two-turn task ({RUNS} runs):");
    println!("  wall time          median {:?}", median(walls));
    println!("  agentctl CPU       mean {agentctl_cpu:?} per run");
    println!("  daemon CPU         mean {daemon_cpu:?} per run");
    println!(
        "  warm, client + daemon CPU {warm:?} per run = {:.2}x one curl ({curl_cpu:?} CPU, median wall {:?})",
        warm.as_secs_f64() / curl_cpu.as_secs_f64().max(1e-9),
        median(curl_walls)
    );
    println!(
        "  cold (daemon started by the run), client + daemon CPU {cold:?} per run = {:.2}x one curl",
        cold.as_secs_f64() / curl_cpu.as_secs_f64().max(1e-9)
    );
    println!(
        "  --provider responses: wall time median {:?}, agentctl CPU {:?}, daemon CPU {:?} per run",
        median(over_responses.walls),
        over_responses.agentctl_cpu,
        over_responses.daemon_cpu
    );
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
