//! Terminal view figures: the delay from a text piece leaving the model server to its text on
//! the client's screen (a pty), for `run` (markdown on) and `chat` (the line editor), p50/p99;
//! and the client's CPU while a reply streams at 100 pieces a second.
//!
//! The delay includes the daemon's part (receiving, numbering, forwarding), so it bounds the
//! client's own from above.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench terminal`.

use std::time::{Duration, Instant};

use tests::model_server::{ModelServer, Pace, anthropic};
use tests::pty::Pty;
use tests::{Daemon, Home};

const PIECES: usize = 300;

fn pieces() -> Vec<String> {
    (0..PIECES).map(|i| format!("tok{i:04} ")).collect()
}

fn spawn(daemon: &Daemon, server: &ModelServer, dir: &std::path::Path, args: &[&str]) -> Pty {
    Pty::agentctl(&daemon.home, server, dir, args, (50, 200))
}

/// Lets the pieces go one at a time and times each to the screen.
async fn delays(chat: bool) -> Vec<Duration> {
    let dir = tempfile::tempdir().unwrap();
    let pace = Pace::new();
    let server = ModelServer::start(vec![anthropic::deltas(&pieces()).paced(&pace)]).await;
    let daemon = Daemon::start_in(Home::new());
    let pty = if chat {
        let pty = spawn(&daemon, &server, dir.path(), &["--color", "always", "chat"]);
        pty.expect("[idle");
        pty.send("go\r");
        pty
    } else {
        spawn(
            &daemon,
            &server,
            dir.path(),
            &["--color", "always", "run", "go"],
        )
    };
    // The stream's start and its text block's start.
    pace.allow(2);
    let mut times = Vec::new();
    for i in 0..PIECES {
        let start = Instant::now();
        pace.allow(1);
        pty.expect(&format!("tok{i:04}"));
        times.push(start.elapsed());
    }
    pace.allow(10);
    times.sort();
    times
}

/// The client's CPU time over a reply streamed at 100 pieces a second.
async fn cpu_at_100_per_second() -> (Duration, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let pace = Pace::new();
    let server = ModelServer::start(vec![anthropic::deltas(&pieces()).paced(&pace)]).await;
    let daemon = Daemon::start_in(Home::new());
    let pty = spawn(&daemon, &server, dir.path(), &["--color", "always", "chat"]);
    pty.expect("[idle");
    pty.send("go\r");
    pace.allow(2);
    let before = tests::process_cpu(pty.pid());
    let start = Instant::now();
    let mut every = tokio::time::interval(Duration::from_millis(10));
    for _ in 0..PIECES {
        every.tick().await;
        pace.allow(1);
    }
    pty.expect(&format!("tok{:04}", PIECES - 1));
    let wall = start.elapsed();
    (tests::process_cpu(pty.pid()) - before, wall)
}

#[tokio::main]
async fn main() {
    for (name, chat) in [("run", false), ("chat", true)] {
        let times = delays(chat).await;
        println!(
            "{name}: piece to screen p50 {:?}, p99 {:?}, max {:?} ({PIECES} pieces)",
            tests::percentile(&times, 0.5),
            tests::percentile(&times, 0.99),
            times.last().unwrap()
        );
    }
    let (cpu, wall) = cpu_at_100_per_second().await;
    println!(
        "chat at 100 pieces/s: client CPU {cpu:?} over {wall:?} ({:.1}% of a core)",
        cpu.as_secs_f64() * 100.0 / wall.as_secs_f64()
    );
}
