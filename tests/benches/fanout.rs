//! Fan-out of one session's events: the latency from the scripted server sending a text delta
//! to attached clients receiving it (1 and 50 clients, p50/p99), and how many events per second
//! one session delivers to 50 clients.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench fanout`.

use std::time::{Duration, Instant};

use agentctl::client::{Client, Incoming};
use protocol::{Event, Request, SessionId};
use tests::model_server::{ModelServer, Pace, anthropic};
use tests::{Daemon, create_session, percentile, run_options, start_run, subscribe};
use tokio::sync::mpsc::UnboundedReceiver;

const PACED_DELTAS: usize = 300;
const BULK_DELTAS: usize = 20_000;

async fn attach(
    daemon: &Daemon,
    session: &SessionId,
    n: usize,
) -> Vec<(Client, UnboundedReceiver<Incoming>)> {
    let mut clients = Vec::new();
    for _ in 0..n {
        let mut client = daemon.client().await;
        subscribe(&client, session, 0).await;
        let incoming = client.take_incoming().unwrap();
        clients.push((client, incoming));
    }
    clients
}

async fn latency(clients: usize) -> (Duration, Duration) {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let pace = Pace::new();
    let server = ModelServer::start(vec![
        anthropic::many_deltas(PACED_DELTAS, "token ").paced(&pace),
    ])
    .await;
    let driver = daemon.client().await;
    let session = create_session(&driver, project.path()).await.id;
    let mut attached = attach(&daemon, &session, clients).await;
    start_run(&driver, &session, "go", run_options(&server)).await;
    pace.allow(2);
    let mut samples = Vec::with_capacity(PACED_DELTAS * clients);
    for _ in 0..PACED_DELTAS {
        let sent = Instant::now();
        pace.allow(1);
        for (_, incoming) in attached.iter_mut() {
            loop {
                match incoming.recv().await {
                    Some(Incoming::Event(e)) if matches!(e.event, Event::TextDelta { .. }) => break,
                    Some(_) => {}
                    None => panic!("client closed"),
                }
            }
            samples.push(sent.elapsed());
        }
    }
    pace.allow(10);
    samples.sort();
    (percentile(&samples, 0.5), percentile(&samples, 0.99))
}

async fn throughput(clients: usize) -> (u64, Duration, usize) {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::many_deltas(BULK_DELTAS, "t")]).await;
    let driver = daemon.client().await;
    let session = create_session(&driver, project.path()).await.id;
    let attached = attach(&daemon, &session, clients).await;
    let started = Instant::now();
    start_run(&driver, &session, "go", run_options(&server)).await;
    let mut tasks = tokio::task::JoinSet::new();
    for (client, mut incoming) in attached {
        let session = session.clone();
        tasks.spawn(async move {
            let (mut last, mut lags) = (0, 0);
            loop {
                match incoming.recv().await {
                    Some(Incoming::Event(e)) => {
                        if e.seq <= last {
                            continue;
                        }
                        last = e.seq;
                        if matches!(e.event, Event::RunFinished { .. }) {
                            return (last, lags);
                        }
                    }
                    Some(Incoming::Lagged { .. }) => {
                        lags += 1;
                        client
                            .request(Request::Subscribe {
                                session: session.clone(),
                                from_seq: last,
                            })
                            .await
                            .unwrap();
                    }
                    Some(Incoming::ReplayDone { .. }) => {}
                    _ => panic!("client closed"),
                }
            }
        });
    }
    let mut events = 0;
    let mut lags = 0;
    while let Some(result) = tasks.join_next().await {
        let (seen, lagged) = result.unwrap();
        events = seen;
        lags += lagged;
    }
    (events, started.elapsed(), lags)
}

#[tokio::main]
async fn main() {
    for clients in [1, 50] {
        let (p50, p99) = latency(clients).await;
        println!("delta latency, {clients:>2} client(s): p50 {p50:?}, p99 {p99:?}");
    }
    let (events, took, lags) = throughput(50).await;
    let per_client = events as f64 / took.as_secs_f64();
    println!(
        "fan-out: {events} events to 50 clients in {took:?}: {per_client:.0} events/s per client, {:.0} deliveries/s in all ({lags} lag recoveries)",
        per_client * 50.0
    );
}
