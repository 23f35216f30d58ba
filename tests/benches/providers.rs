//! Provider figures: how fast each provider's stream decoding runs over a recorded stream
//! (MB/s), and the CPU the daemon spends per streamed token in a real run (scripted server, one
//! attached client).
//!
//! Run with `cargo build --release && cargo bench -p tests --bench providers`.

use std::time::Instant;

use agentctl::client::Incoming;
use agentd::provider::stream::decode;
use agentd::provider::{anthropic, openai};
use serde_json::{Value, json};
use tests::model_server::{self, ModelServer, Scripted};
use tests::{Daemon, create_session, process_cpu, run_options, start_run, subscribe};

const DELTAS: usize = 50_000;

fn body(events: &[model_server::SseFrame]) -> Vec<u8> {
    model_server::sse_bytes(events).into_bytes()
}

fn anthropic_stream() -> Vec<u8> {
    match model_server::anthropic::many_deltas(DELTAS, "word ") {
        Scripted::Stream { events, .. } => body(&events),
        _ => unreachable!(),
    }
}

fn openai_stream() -> Vec<u8> {
    let chunk = |delta: Value, finish: Value| model_server::SseFrame {
        event: String::new(),
        data: json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for _ in 0..DELTAS {
        events.push(chunk(json!({"content": "word "}), Value::Null));
    }
    events.push(chunk(json!({}), json!("stop")));
    events.push(model_server::SseFrame {
        event: String::new(),
        data: Value::String("[DONE]".into()),
    });
    body(&events)
}

fn throughput(name: &str, bytes: &[u8], parse: impl Fn(&[u8]) -> usize) {
    let mut times = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let text_len = parse(bytes);
        times.push(start.elapsed());
        assert_eq!(text_len, DELTAS * 5);
    }
    times.sort();
    let median = times[times.len() / 2];
    println!(
        "{name:<18} {:>6.1} MB/s ({} KiB, {DELTAS} deltas, median {median:?})",
        bytes.len() as f64 / median.as_secs_f64() / 1e6,
        bytes.len() / 1024
    );
}

#[tokio::main]
async fn main() {
    throughput("anthropic decode", &anthropic_stream(), |b| {
        decode(anthropic::ReplyBuilder::default(), b, &mut |_| {})
            .unwrap()
            .text()
            .len()
    });
    throughput("openai decode", &openai_stream(), |b| {
        decode(openai::ReplyBuilder::default(), b, &mut |_| {})
            .unwrap()
            .text()
            .len()
    });

    // The daemon's cost per streamed token: a long reply streamed to one attached client.
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let mut client = daemon.client().await;
    let session = create_session(&client, project.path()).await.id;
    subscribe(&client, &session, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    let mut per_token = Vec::new();
    for _ in 0..3 {
        server.push(vec![model_server::anthropic::many_deltas(DELTAS, "word ")]);
        let before = process_cpu(daemon.pid());
        let start = Instant::now();
        start_run(&client, &session, "go", run_options(&server)).await;
        // Relay until the run ends; a client that falls behind resubscribes, as agentctl does.
        let mut last = 0;
        loop {
            match incoming.recv().await.expect("events") {
                Incoming::Event(event) => {
                    last = last.max(event.seq);
                    if matches!(event.event, protocol::Event::RunFinished { .. }) {
                        break;
                    }
                }
                Incoming::Lagged { .. } => {
                    client
                        .request(protocol::Request::Subscribe {
                            session: session.clone(),
                            from_seq: last,
                        })
                        .await
                        .unwrap();
                }
                Incoming::ReplayDone { .. }
                | Incoming::Summary(_)
                | Incoming::SummariesReady { .. }
                | Incoming::SummaryRemoved { .. } => {}
                Incoming::Closed(reason) => panic!("closed: {reason:?}"),
            }
        }
        let wall = start.elapsed();
        let cpu = process_cpu(daemon.pid()) - before;
        per_token.push((cpu / DELTAS as u32, wall));
    }
    per_token.sort();
    let (cpu, wall) = per_token[1];
    println!(
        "daemon CPU per streamed token: {cpu:?} ({DELTAS} tokens relayed in {wall:?}, persisted and sent to 1 client)"
    );
}
