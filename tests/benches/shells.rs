//! Background shell figures (docs/architecture.md#background-shells): eight shells of one
//! session, each printing about 10 MB/s for 10 s through the real daemon, and nobody looking:
//! the daemon's CPU time while it reads them, and its resident memory before, during and after,
//! which the rings (1 MiB per shell) must bound.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench shells`.

use std::time::{Duration, Instant};

use protocol::{Event, Reply, Request};
use serde_json::json;
use tests::model_server::anthropic;
use tests::{TestEnv, peak_rss, process_cpu, rss};

/// Shells at once (the default limit).
const SHELLS: usize = 8;

/// Prints 100 KiB of lines every 10 ms for 10 s (about 10 MB/s), paced by the clock.
const WRITER: &str = r#"import sys, time
chunk = (b"x" * 1023 + b"\n") * 100
out = sys.stdout.buffer
start = time.monotonic()
for i in range(1000):
    out.write(chunk)
    out.flush()
    delay = start + (i + 1) * 0.01 - time.monotonic()
    if delay > 0:
        time.sleep(delay)
"#;

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

#[tokio::main]
async fn main() {
    let mut reply = anthropic::reply();
    for _ in 0..SHELLS {
        reply = reply.tool(
            "bash",
            json!({"command": "exec python3 writer.py", "background": true}),
        );
    }
    let mut env = TestEnv::builder()
        .file("writer.py", WRITER)
        .model(vec![
            anthropic::text("Warm."),
            reply.build(),
            anthropic::text("Eight shells print."),
        ])
        .start()
        .await;
    // A first run sets up what every run uses (the provider's client, the session's state):
    // what comes after it is the shells' own cost.
    env.run("warm up").await;
    let pid = env.daemon.pid();
    let (cpu_before, rss_before) = (process_cpu(pid), rss(pid));
    let start = Instant::now();
    env.run("start the writers").await;

    // Nobody looks at the output; the daemon's memory is sampled until every shell ended.
    let mut ended = 0;
    let mut samples = Vec::new();
    while ended < SHELLS {
        match tokio::time::timeout(Duration::from_millis(250), env.incoming.recv()).await {
            Ok(Some(agentctl::client::Incoming::Event(event))) => {
                if let Event::ShellEnded { end, .. } = &event.event {
                    assert_eq!(end, &protocol::ShellEnd::Exited { code: 0 });
                    ended += 1;
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => panic!("the daemon went away"),
            Err(_) => samples.push(rss(pid)),
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the shells did not end"
        );
    }
    let elapsed = start.elapsed();
    let cpu = process_cpu(pid) - cpu_before;
    let (rss_after, peak) = (rss(pid), peak_rss(pid));
    let Reply::Shells(list) = env
        .client
        .request(Request::Shells {
            session: env.session.clone(),
        })
        .await
        .unwrap()
    else {
        panic!("Shells answered with something else")
    };
    let printed: u64 = list.iter().map(|s| s.bytes).sum();
    let first = samples.first().copied().unwrap_or(0);
    samples.sort_unstable();
    let during = samples.last().copied().unwrap_or(0);
    let median = samples.get(samples.len() / 2).copied().unwrap_or(0);

    println!(
        "{SHELLS} shells printed {:.0} MiB in {:.1} s ({:.1} MB/s each)",
        mib(printed),
        elapsed.as_secs_f64(),
        printed as f64 / 1e6 / SHELLS as f64 / elapsed.as_secs_f64()
    );
    println!(
        "daemon CPU: {:.2} s in {:.1} s ({:.0} ms/s, {:.2} ms per MiB read)",
        cpu.as_secs_f64(),
        elapsed.as_secs_f64(),
        cpu.as_secs_f64() * 1000.0 / elapsed.as_secs_f64(),
        cpu.as_secs_f64() * 1000.0 / mib(printed)
    );
    println!(
        "daemon RSS: before {:.1} MiB, during first {:.1} / median {:.1} / max {:.1} MiB ({} samples), after {:.1} MiB, peak {:.1} MiB; rings {} MiB",
        mib(rss_before),
        mib(first),
        mib(median),
        mib(during),
        samples.len(),
        mib(rss_after),
        mib(peak),
        SHELLS
    );
}
