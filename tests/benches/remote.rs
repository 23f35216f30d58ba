//! What reaching the daemon over ssh costs (docs/architecture.md#another-machine-over-ssh): one
//! daemon, reached by `agentctl` through its local socket and through `--host` (a real sshd on
//! a loopback port, ssh with a warm ControlMaster, `agentctl bridge` on the other side):
//! `agentctl sessions` latency; the two-turn task of the `run` bench (wall time, and the CPU of
//! the client, the shared ssh connection, sshd with the bridge, and the daemon; the ssh each
//! command starts costs what `ssh HOST true` does); and the latency of a streamed reply's text
//! delta from the scripted server sending it to `agentctl run --json` printing it (p50, p99).
//! Skips, saying what is missing, without sshd.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench remote`.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;
use tests::model_server::{ModelServer, Pace, Scripted, anthropic};
use tests::restart::provider_env;
use tests::sshd::Sshd;
use tests::{Daemon, Home, children_cpu, descendants, percentile, process_cpu};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The host's name in the laptop's `client.toml`.
const HOST: &str = "bench";
/// `agentctl sessions` runs each way.
const LISTINGS: usize = 200;
/// Two-turn runs each way, per round.
const RUNS: usize = 100;
/// Rounds of runs (local, then over ssh), to show the drift of the machine's speed.
const ROUNDS: usize = 2;
/// Deltas timed each way.
const PACED_DELTAS: usize = 300;

/// The two-turn task of the `run` bench: read README.md, then answer.
fn script() -> Vec<Scripted> {
    vec![
        anthropic::reply()
            .text("Let me read it.")
            .tool("read", json!({"path": "README.md"}))
            .build(),
        anthropic::text("Start it with `npm run dev`."),
    ]
}

/// The two ways to the one daemon.
struct Ways {
    daemon: Daemon,
    sshd: Sshd,
    /// The laptop: a home with no daemon whose `client.toml` names the sshd.
    laptop: Home,
    server: ModelServer,
}

impl Ways {
    /// `agentctl ARGS…` in `cwd`: through the daemon's socket, or over ssh (`--host`).
    fn agentctl(&self, remote: bool, cwd: &Path, args: &[&str]) -> tokio::process::Command {
        if !remote {
            return self.daemon.home.agentctl_with(&self.server, cwd, args);
        }
        let mut all = vec!["--host", HOST];
        all.extend_from_slice(args);
        self.laptop.agentctl_with(&self.server, cwd, &all)
    }

    /// CPU used so far by the shared ssh connection (this side) and by sshd's processes
    /// with the bridges they ran (the other side).
    fn ssh_cpu(&self) -> (Duration, Duration) {
        let master = self.sshd.master_pid().map_or(Duration::ZERO, process_cpu);
        let far = descendants(self.sshd.pid())
            .into_iter()
            .map(cpu_with_children)
            .sum();
        (master, far)
    }
}

/// CPU process `pid` used, with that of its children it has waited for (sshd's sessions).
fn cpu_with_children(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<u64> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or("")
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|v| v.parse().ok())
        .collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(fields.iter().sum::<u64>() * 1000 / hz.max(1))
}

/// Runs `command` to its end, which must be a success.
async fn succeed(mut command: tokio::process::Command) {
    let out = command.output().await.expect("agentctl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// p50 and p90 of `times`, in ms.
fn p50_p90(mut times: Vec<Duration>) -> String {
    times.sort();
    format!(
        "median {:.1} ms, p90 {:.1} ms",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.9))
    )
}

/// `d` in milliseconds.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `agentctl sessions` latency each way, interleaved; and `ssh HOST true` over the warm
/// connection, the floor of any command reached over ssh.
async fn listings(ways: &Ways, project: &Path) {
    let (mut local, mut remote, mut bare) = (Vec::new(), Vec::new(), Vec::new());
    let mut bare_cpu = Duration::ZERO;
    for _ in 0..LISTINGS {
        for (over_ssh, times) in [(false, &mut local), (true, &mut remote)] {
            let start = Instant::now();
            succeed(ways.agentctl(over_ssh, project, &["sessions"])).await;
            times.push(start.elapsed());
        }
        let (start, cpu) = (Instant::now(), children_cpu());
        let status = ways.sshd.ssh(&["true"]).status().expect("ssh runs");
        assert!(status.success());
        bare.push(start.elapsed());
        bare_cpu += children_cpu() - cpu;
    }
    println!("`agentctl sessions` ({LISTINGS} each way, 1 session):");
    println!("  local socket                {}", p50_p90(local));
    println!("  --host over ssh             {}", p50_p90(remote));
    println!(
        "  `ssh HOST true` (the floor) {}; its ssh's CPU {:.2} ms",
        p50_p90(bare),
        ms(bare_cpu / LISTINGS as u32)
    );
}

/// `RUNS` two-turn runs one way: wall times and the CPU per run of each process.
async fn runs(ways: &Ways, project: &Path, over_ssh: bool) {
    // `ssh_cpu` runs `ssh -O check`: before the client's CPU is read, and after.
    let ssh_before = ways.ssh_cpu();
    let before = (children_cpu(), process_cpu(ways.daemon.pid()));
    let mut walls = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        ways.server.push(script());
        let start = Instant::now();
        succeed(ways.agentctl(over_ssh, project, &["run", "go"])).await;
        walls.push(start.elapsed());
    }
    let per_run = |d: Duration| ms(d / RUNS as u32);
    let client = per_run(children_cpu() - before.0);
    let daemon = per_run(process_cpu(ways.daemon.pid()) - before.1);
    let (master, far) = ways.ssh_cpu();
    let (master, far) = (
        master.saturating_sub(ssh_before.0),
        far.saturating_sub(ssh_before.1),
    );
    let label = if over_ssh { "--host   " } else { "local    " };
    let mut line = format!(
        "  {label}wall {}; CPU per run: agentctl {client:.2} ms, daemon {daemon:.2} ms",
        p50_p90(walls)
    );
    if over_ssh {
        line.push_str(&format!(
            ", ssh connection {:.2} ms, sshd + bridge {:.2} ms",
            per_run(master),
            per_run(far)
        ));
    }
    println!("{line}");
}

/// The latency of each of `PACED_DELTAS` text deltas, from the server sending it to
/// `agentctl run --json` printing its line: (p50, p99).
async fn delta_latency(ways: &Ways, project: &Path, over_ssh: bool) -> (Duration, Duration) {
    let pace = Pace::new();
    let asked = ways.server.received().len();
    ways.server.push(vec![
        anthropic::many_deltas(PACED_DELTAS, "token ").paced(&pace),
    ]);
    let mut run = ways
        .agentctl(over_ssh, project, &["run", "--json", "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("agentctl runs");
    let mut lines = BufReader::new(run.stdout.take().expect("piped stdout")).lines();
    ways.server.wait_for_requests(asked + 1).await;
    // The message's start and its text block's start.
    pace.allow(2);
    let mut samples = Vec::with_capacity(PACED_DELTAS);
    for _ in 0..PACED_DELTAS {
        let sent = Instant::now();
        pace.allow(1);
        loop {
            let line = lines
                .next_line()
                .await
                .expect("agentctl's output")
                .expect("the run goes on");
            if line.contains(r#""type":"text_delta""#) {
                break;
            }
        }
        samples.push(sent.elapsed());
    }
    pace.allow(10);
    while lines.next_line().await.ok().flatten().is_some() {}
    assert!(run.wait().await.expect("agentctl ends").success());
    samples.sort();
    (percentile(&samples, 0.5), percentile(&samples, 0.99))
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
    let daemon = Daemon::start_with(Home::new(), &provider_env(&server));
    let Some(sshd) = Sshd::builder(HOST, daemon.home.path())
        .control_master()
        .start()
    else {
        println!("remote bench skipped: no sshd (see the message above)");
        return;
    };
    let laptop = Home::new();
    sshd.register(&laptop);
    let ways = Ways {
        daemon,
        sshd,
        laptop,
        server,
    };
    // The shared connection, made once and kept (ControlPersist) for every later ssh.
    let status = ways.sshd.ssh(&["true"]).status().expect("ssh runs");
    assert!(status.success(), "{}", ways.sshd.log());
    assert!(ways.sshd.master_pid().is_some(), "no shared ssh connection");
    for over_ssh in [false, true] {
        for _ in 0..10 {
            ways.server.push(script());
            succeed(ways.agentctl(over_ssh, project.path(), &["run", "go"])).await;
        }
    }

    listings(&ways, project.path()).await;
    println!("`agentctl run`, the two-turn task ({RUNS} runs each way, {ROUNDS} rounds):");
    for _ in 0..ROUNDS {
        runs(&ways, project.path(), false).await;
        runs(&ways, project.path(), true).await;
    }
    println!("text delta, server sent to `agentctl run --json` printed ({PACED_DELTAS} each way):");
    for over_ssh in [false, true, false, true] {
        let (p50, p99) = delta_latency(&ways, project.path(), over_ssh).await;
        let label = if over_ssh { "--host" } else { "local " };
        println!("  {label}  p50 {p50:?}, p99 {p99:?}");
    }
}
