//! Checkpoint figures (SPEC §13) on a 10,000-file tree: the time to record the first
//! checkpoint of a directory (every file hashed) and a later one (stat data says what changed),
//! the shadow store's size on disk, the time of a diff and of a rewind, and what checkpoints add
//! to a whole run through the daemon.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench checkpoints`.

use std::path::Path;
use std::time::{Duration, Instant};

use agentd::checkpoint::CheckpointConfig;
use agentd::checkpoint::{Checkpoints, Point};
use protocol::RunId;
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, agentctl_output};

const FILES: usize = 10_000;

/// A source tree: 100 directories of 100 files of about 1 kB each, and ignored build output.
fn tree(root: &Path) {
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    for d in 0..FILES / 100 {
        let dir = root.join(format!("src/m{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            let text = format!(
                "// module {d} file {f}\n{}",
                "fn item() -> u32 { 42 }\n".repeat(40)
            );
            std::fs::write(dir.join(format!("f{f:03}.rs")), text).unwrap();
        }
    }
    std::fs::create_dir_all(root.join("target")).unwrap();
    for f in 0..1000 {
        std::fs::write(root.join(format!("target/o{f}")), "object").unwrap();
    }
}

fn du(path: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(path).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            du(&entry.path())
        } else {
            use std::os::unix::fs::MetadataExt;
            meta.blocks() * 512
        };
    }
    total
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

fn library() {
    let limits = CheckpointConfig::default();
    let base = tempfile::tempdir().unwrap();
    let work = base.path().join("work");
    std::fs::create_dir(&work).unwrap();
    tree(&work);
    // A user's files are older than the checkpoint: files written in the same second as the
    // store's index would be hashed again (git's "racily clean" entries).
    std::thread::sleep(Duration::from_millis(1100));
    let store = base.path().join("store");
    let checkpoints = Checkpoints::new(&store, "bench", work.clone());
    let (_, first) = timed(|| checkpoints.record(RunId(1), Point::Start, &limits).unwrap());
    let first_disk = du(&store);
    for f in 0..10 {
        std::fs::write(work.join(format!("src/m{f:03}/f000.rs")), "changed\n").unwrap();
    }
    std::fs::write(work.join("src/new.rs"), "new\n").unwrap();
    let (_, second) = timed(|| checkpoints.record(RunId(1), Point::End, &limits).unwrap());
    let (_, unchanged) = timed(|| checkpoints.record(RunId(2), Point::Start, &limits).unwrap());
    for f in 0..10 {
        std::fs::write(work.join(format!("src/m{f:03}/f001.rs")), "again\n").unwrap();
    }
    checkpoints.record(RunId(2), Point::End, &limits).unwrap();
    let second_disk = du(&store);
    let (diff, diff_time) = timed(|| checkpoints.diff(Some(RunId(2)), &limits).unwrap());
    assert_eq!(diff.files.len(), 10);
    let (report, rewind) = timed(|| {
        checkpoints
            .rewind(Some(RunId(1)), false, false, &limits)
            .unwrap()
    });
    assert_eq!(report.restored.len(), 20);
    assert_eq!(report.removed.len(), 1);
    println!("{FILES} files of ~1 kB (+1,000 ignored), library calls:");
    println!(
        "  first checkpoint (all hashed)        {first:?}, store {:.1} MiB",
        first_disk as f64 / 1048576.0
    );
    println!("  next checkpoint, nothing changed     {unchanged:?}");
    println!(
        "  next checkpoint, 11 files changed    {second:?}, store {:.1} MiB after 4 checkpoints",
        second_disk as f64 / 1048576.0
    );
    println!("  diff of a run (10 files)             {diff_time:?}");
    println!("  rewind of two runs (21 files)        {rewind:?}");
}

/// The wall time of `runs` runs that each run one `bash` command in the tree.
async fn runs_through_the_daemon(checkpoints: bool, runs: usize) -> Duration {
    let base = tempfile::tempdir().unwrap();
    tree(base.path());
    std::thread::sleep(Duration::from_millis(1100));
    let mut script = Vec::new();
    for i in 0..runs {
        script.push(anthropic::tool(
            "bash",
            json!({"command": format!("echo {i} > src/m000/f000.rs")}),
        ));
        script.push(anthropic::text("done"));
    }
    let server = ModelServer::start(script).await;
    let config = format!("[checkpoints]\nenabled = {checkpoints}\n");
    let daemon = Daemon::start_in(Home::with_config(&config));
    let new = agentctl_output(&daemon, &server, base.path(), &["new"]).await;
    let id = new.stdout.trim().to_string();
    let mut times = Vec::new();
    for _ in 0..runs {
        let (out, time) = {
            let start = Instant::now();
            let out = agentctl_output(
                &daemon,
                &server,
                base.path(),
                &["run", "--session", &id, "--yes", "go"],
            )
            .await;
            (out, start.elapsed())
        };
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        times.push(time);
    }
    // The first run records the whole tree; the rest only what changed.
    println!(
        "  checkpoints {}: first run {:?}, later runs median {:?}",
        if checkpoints { "on " } else { "off" },
        times[0],
        {
            let mut rest = times[1..].to_vec();
            rest.sort();
            tests::percentile(&rest, 0.5)
        }
    );
    times[0]
}

#[tokio::main]
async fn main() {
    library();
    println!("whole runs (agentctl run, one bash call) in the same tree:");
    runs_through_the_daemon(false, 6).await;
    runs_through_the_daemon(true, 6).await;
}
