//! Session storage: the cost of appending one record (written whole, one write per record,
//! p50/p99), the time to load a session of 10,000 records, and the daemon's start time with
//! 1,000 stored sessions.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench store`.

use std::io::{BufRead, BufReader};
use std::time::Instant;

use agentd::store::{Meta, Record, SessionStore};
use tests::percentile;

fn meta(id: &str) -> Meta {
    let mut meta = Meta::new(id, "/work/project");
    meta.title = Some("bench".into());
    meta
}

/// Record `i` of a realistic mix.
fn record(i: u64) -> Record {
    Record::Event {
        seq: i,
        time_ms: i,
        event: tests::sample_event(i),
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    SessionStore::create(dir.path(), &meta("append"), &[], false).unwrap();
    let mut store = SessionStore::open(&dir.path().join("append")).unwrap();
    let mut times = Vec::with_capacity(10_000);
    for i in 1..=10_000 {
        let record = record(i);
        let start = Instant::now();
        store.append(&record).unwrap();
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "append one record, durability = \"flush\" (serialise + one write): p50 {:?}, p99 {:?}",
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    );
    // Every record synced on its own: what grouping saves.
    let mut synced = Vec::with_capacity(500);
    for i in 10_001..=10_500 {
        let record = record(i);
        let start = Instant::now();
        store.append(&record).unwrap();
        store.file().sync_data().unwrap();
        synced.push(start.elapsed());
    }
    synced.sort();
    println!(
        "append one record and fdatasync it: p50 {:?}, p99 {:?}",
        percentile(&synced, 0.5),
        percentile(&synced, 0.99)
    );
    // A burst of 20 records (a turn with tool results) ended by one sync, as the daemon groups.
    let mut bursts = Vec::with_capacity(200);
    let mut i = 10_501;
    for _ in 0..200 {
        let start = Instant::now();
        for _ in 0..20 {
            store.append(&record(i)).unwrap();
            i += 1;
        }
        store.file().sync_data().unwrap();
        bursts.push(start.elapsed());
    }
    bursts.sort();
    println!(
        "20 records and one grouped fdatasync: p50 {:?}, p99 {:?} ({:?} per record)",
        percentile(&bursts, 0.5),
        percentile(&bursts, 0.99),
        percentile(&bursts, 0.5) / 20
    );
    drop(store);

    let log = dir.path().join("append").join("log.jsonl");
    let size = std::fs::metadata(&log).unwrap().len();
    let mut loads = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let mut records = 0;
        agentd::store::read_log(&log, |_| records += 1).unwrap();
        loads.push(start.elapsed());
        assert_eq!(records, i as usize);
    }
    loads.sort();
    println!(
        "load a 14,500-record session ({} KiB): median {:?}",
        size / 1024,
        loads[loads.len() / 2]
    );

    // Daemon start with 1,000 stored sessions: from spawn to its ready line.
    let home = tests::Home::new();
    let sessions = home.paths().sessions_dir();
    for i in 0..1000 {
        SessionStore::create(&sessions, &meta(&format!("s{i:04}")), &[], false).unwrap();
    }
    let mut starts = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let mut child = home.agentd().spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // Ready means listening; the session list is read when the supervisor starts.
        let client_ready = {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let client = agentctl::client::Client::connect(&home.paths().socket, "bench")
                    .await
                    .unwrap();
                let listing = client.list_sessions().await.unwrap();
                assert_eq!(listing.sessions.len(), 1000);
            });
            start.elapsed()
        };
        starts.push(client_ready);
        tests::signal(child.id(), libc::SIGTERM);
        child.wait().unwrap();
    }
    starts.sort();
    println!(
        "daemon start to first session list, 1,000 stored sessions: median {:?}",
        starts[starts.len() / 2]
    );
}
