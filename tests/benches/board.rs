//! Board figures (docs/architecture.md#the-board): the daemon's CPU per second with a board open
//! over 1,000 sessions of which 20 are running and streaming (against the same load without a
//! board), the board client's own CPU and memory, and the time from a permission request to the
//! board showing it.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench board`.

use std::time::{Duration, Instant};

use protocol::{Event, SessionId};
use serde_json::json;
use tests::model_server::{ModelServer, Pace, Scripted, anthropic};
use tests::pty::Pty;
use tests::{
    Daemon, Home, asking_options, next_event, percentile, process_cpu, rss, run_options, start_run,
    titled, write_session,
};

const STORED: usize = 980;
const RUNNING: usize = 20;
/// Stream events each running session sends per second.
const EVENTS_PER_SECOND: usize = 20;
const WINDOW: Duration = Duration::from_secs(10);
const ASKS: usize = 20;

/// One turn: ten text deltas, then a cheap tool call.
fn turn() -> Scripted {
    let mut reply = anthropic::reply();
    for _ in 0..10 {
        reply = reply.text("working on it ");
    }
    reply.tool("glob", json!({"pattern": "nothing-*"})).build()
}

/// The daemon's CPU time per second of wall time over `WINDOW`.
fn cpu_per_second(pid: u32) -> Duration {
    let (cpu, wall) = (process_cpu(pid), Instant::now());
    std::thread::sleep(WINDOW);
    (process_cpu(pid) - cpu).div_f64(wall.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() {
    let home = Home::new();
    for i in 0..STORED {
        write_session(&home, &format!("{i:08x}"), 20);
    }
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Vec::new()).await;
    let pace = Pace::new();
    let daemon = Daemon::start_with(home, &[]);
    let mut client = daemon.client().await;
    for i in 0..RUNNING {
        let marker = format!("STREAM-{i}:");
        let replies = (0..400).map(|_| turn().paced(&pace)).collect();
        server.route(&marker, replies);
        let session = titled(&client, project.path(), &format!("streamer {i}")).await;
        start_run(
            &client,
            &session,
            &format!("{marker} go"),
            run_options(&server),
        )
        .await;
    }
    let _ = client.take_incoming();
    // The streams go on at their pace for the rest of the benchmark.
    let ticker = {
        let pace = pace.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(50));
            loop {
                tick.tick().await;
                pace.allow(RUNNING * EVENTS_PER_SECOND / 20);
            }
        })
    };
    std::thread::sleep(Duration::from_secs(2));
    let without = cpu_per_second(daemon.pid());

    let (rows, cols) = (50, 160);
    let mut command = daemon
        .home
        .agentctl_against(&server, project.path(), &["board"]);
    command.env("TERM", "xterm-256color");
    let board = Pty::spawn(command, rows, cols);
    board.expect_screen(rows, cols, "WORKING (20)");
    // What the board shows, kept up to date byte by byte.
    let mut screen = vt100::Parser::new(
        std::num::NonZeroU16::new(rows).unwrap(),
        std::num::NonZeroU16::new(cols).unwrap(),
        0,
    );
    let backlog = board.raw();
    screen.process(&backlog);
    let mut seen = backlog.len();
    let board_cpu = process_cpu(board.pid());
    let started = Instant::now();
    let with = cpu_per_second(daemon.pid());
    let board_per_second =
        (process_cpu(board.pid()) - board_cpu).div_f64(started.elapsed().as_secs_f64());
    let board_rss = rss(board.pid());

    // From a request to the board showing it.
    let mut asker = daemon.client().await;
    let mut incoming = asker.take_incoming().unwrap();
    let mut samples = Vec::new();
    for i in 0..ASKS {
        let marker = format!("ASK-{i}:");
        let title = format!("asker-{i}-here");
        server.route(
            &marker,
            vec![anthropic::tool(
                "bash",
                json!({"command": format!("echo {i}")}),
            )],
        );
        let session: SessionId = titled(&asker, project.path(), &title).await;
        start_run(
            &asker,
            &session,
            &format!("{marker} go"),
            asking_options(&server),
        )
        .await;
        let asked = loop {
            let event = next_event(&mut incoming).await;
            if event.session == session && matches!(event.event, Event::PermissionRequested { .. })
            {
                break Instant::now();
            }
        };
        // Everything before the request, then what the board writes until its line shows.
        let shown = |screen: &vt100::Parser| {
            screen
                .screen()
                .contents()
                .lines()
                .any(|l| l.contains(&title) && l.contains("asks:"))
        };
        while !shown(&screen) {
            let more = board.output_after(seen);
            assert!(!more.is_empty(), "the request did not show");
            seen += more.len();
            screen.process(&more);
        }
        samples.push(asked.elapsed());
        asker
            .request(protocol::Request::Cancel { session })
            .await
            .unwrap();
    }
    samples.sort();
    ticker.abort();
    println!(
        "board over {} sessions, {RUNNING} running ({} stream events/s each):",
        STORED + RUNNING + ASKS,
        EVENTS_PER_SECOND
    );
    println!(
        "  daemon CPU without a board: {:.1} ms/s",
        without.as_secs_f64() * 1e3
    );
    println!(
        "  daemon CPU with the board:  {:.1} ms/s",
        with.as_secs_f64() * 1e3
    );
    println!(
        "  board client: {:.1} ms CPU/s, RSS {:.1} MiB",
        board_per_second.as_secs_f64() * 1e3,
        board_rss as f64 / 1048576.0
    );
    println!(
        "  permission request → on the board: p50 {:.1} ms, p99 {:.1} ms (after the client saw it)",
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3
    );
}
