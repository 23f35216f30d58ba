//! Checkpoint figures (docs/architecture.md#checkpoints-fork-and-worktrees) on generated git trees
//! of 10,000 and 100,000 files, each against git itself on the same tree:
//! - the daemon CPU that checkpoints add to a run with one `bash` call, where nothing else
//!   changes, against one `git status --porcelain --untracked-files=all`;
//! - a second session's first checkpointed run in the same directory, against the same;
//! - the first checkpoint ever of the tree, against `git add -A && git write-tree` in a fresh
//!   repository;
//! - (10,000 files) library calls: later checkpoints, a diff, a rewind, the store's size.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench checkpoints`.

use std::path::Path;
use std::time::{Duration, Instant};

use agentd::checkpoint::CheckpointConfig;
use agentd::checkpoint::{Checkpoints, Point};
use protocol::RunId;
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, agentctl_output, children_cpu, process_cpu};

/// A source tree of `files` files of about 1 kB in directories of 100, ignored build output,
/// committed to git.
fn tree(root: &Path, files: usize) {
    plain_tree(root, files);
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "tree"]);
}

/// The same tree, without git.
fn plain_tree(root: &Path, files: usize) {
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    let body = "fn item() -> u32 { 42 }\n".repeat(40);
    for d in 0..files / 100 {
        let dir = root.join(format!("src/m{d:04}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(
                dir.join(format!("f{f:03}.rs")),
                format!("// {d} {f}\n{body}"),
            )
            .unwrap();
        }
    }
    std::fs::create_dir_all(root.join("target")).unwrap();
    for f in 0..1000 {
        std::fs::write(root.join(format!("target/o{f}")), "object").unwrap();
    }
}

fn git(dir: &Path, args: &[&str]) -> Duration {
    let before = children_cpu();
    let status = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "-c",
            "gc.auto=0",
        ])
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
    children_cpu() - before
}

/// CPU time of this process so far (the library calls run in it).
fn own_cpu() -> Duration {
    tests::process_cpu(std::process::id())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
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

/// One `git status` on `dir`, median CPU of 5.
fn git_status(dir: &Path) -> Duration {
    median(
        (0..5)
            .map(|_| git(dir, &["status", "--porcelain", "--untracked-files=all"]))
            .collect(),
    )
}

fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.2}x", a.as_secs_f64() / b.as_secs_f64().max(1e-9))
}

/// Library calls on a tree of `files`: the first checkpoint against git's own first record.
fn first_checkpoint(files: usize) {
    let limits = CheckpointConfig {
        max_files: 200_000,
        ..CheckpointConfig::default()
    };
    let base = tempfile::tempdir().unwrap();
    let work = base.path().join("work");
    std::fs::create_dir(&work).unwrap();
    tree(&work, files);
    let fresh = base.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    plain_tree(&fresh, files);
    git(&fresh, &["init", "-q"]);
    let git_first = git(&fresh, &["add", "-A"]) + git(&fresh, &["write-tree"]);
    // The user's files are older than the store's cache: files written in the same second
    // would be hashed again (git's racily clean rule).
    std::thread::sleep(Duration::from_millis(1100));
    let stores = base.path().join("stores");
    let checkpoints = Checkpoints::new(&stores, "bench", work.clone());
    let (cpu, start) = (own_cpu(), Instant::now());
    checkpoints.record(RunId(1), Point::Start, &limits).unwrap();
    let (first_cpu, first_wall) = (own_cpu() - cpu, start.elapsed());
    let (cpu, start) = (own_cpu(), Instant::now());
    checkpoints.record(RunId(1), Point::End, &limits).unwrap();
    let (again_cpu, again_wall) = (own_cpu() - cpu, start.elapsed());
    let status = git_status(&work);
    println!("{files} files of ~1 kB (+1,000 ignored), library calls:");
    println!(
        "  first checkpoint ever      {first_cpu:?} CPU ({first_wall:?} wall), store {:.1} MiB; git add -A && git write-tree in a fresh repository {git_first:?} CPU: {}",
        du(checkpoints.store()) as f64 / 1048576.0,
        ratio(first_cpu, git_first)
    );
    println!(
        "  next, nothing changed      {again_cpu:?} CPU ({again_wall:?} wall); git status {status:?} CPU: {}",
        ratio(again_cpu, status)
    );
    if files <= 10_000 {
        later_library_calls(&checkpoints, &work, &limits);
    }
}

fn later_library_calls(checkpoints: &Checkpoints, work: &Path, limits: &CheckpointConfig) {
    for f in 0..10 {
        std::fs::write(work.join(format!("src/m{f:04}/f000.rs")), "changed\n").unwrap();
    }
    std::fs::write(work.join("src/new.rs"), "new\n").unwrap();
    let start = Instant::now();
    checkpoints.record(RunId(2), Point::Start, limits).unwrap();
    let changed = start.elapsed();
    for f in 0..10 {
        std::fs::write(work.join(format!("src/m{f:04}/f001.rs")), "again\n").unwrap();
    }
    checkpoints.record(RunId(2), Point::End, limits).unwrap();
    let start = Instant::now();
    let diff = checkpoints.diff(Some(RunId(2)), limits).unwrap();
    let diff_time = start.elapsed();
    assert_eq!(diff.files.len(), 10);
    let start = Instant::now();
    let report = checkpoints
        .rewind(Some(RunId(2)), false, false, limits)
        .unwrap();
    let rewind = start.elapsed();
    assert_eq!(report.restored.len(), 10);
    println!("  next, 11 files changed     {changed:?} wall");
    println!("  diff of a run (10 files)   {diff_time:?}; rewind of it {rewind:?}");
}

/// Daemon CPU of runs with one `bash` call that changes one file, checkpoints on or off; the
/// first run of a second session in the same directory too.
async fn through_the_daemon(files: usize, runs: usize) {
    let base = tempfile::tempdir().unwrap();
    tree(base.path(), files);
    std::thread::sleep(Duration::from_millis(1100));
    let status = git_status(base.path());
    let mut medians = Vec::new();
    for checkpoints in [false, true] {
        let server = ModelServer::start(vec![]).await;
        let config = format!("[checkpoints]\nenabled = {checkpoints}\nmax_files = 200000\n");
        let daemon = Daemon::start_in(Home::with_config(&config));
        let mut per_run = Vec::new();
        let mut second_session = Duration::ZERO;
        let new = agentctl_output(&daemon, &server, base.path(), &["new"]).await;
        let id = new.stdout.trim().to_string();
        for i in 0..=runs {
            server.push(vec![
                anthropic::tool(
                    "bash",
                    json!({"command": format!("echo {i} > src/m0000/f000.rs")}),
                ),
                anthropic::text("done"),
            ]);
            // The last run is a second session's first.
            let mut args = vec!["run", "--yes", "go"];
            if i < runs {
                args.splice(1..1, ["--session", id.as_str()]);
            }
            let before = process_cpu(daemon.pid());
            let out = agentctl_output(&daemon, &server, base.path(), &args).await;
            assert_eq!(out.code, Some(0), "{}", out.stderr);
            let used = process_cpu(daemon.pid()) - before;
            // The first run of all records the whole tree; it is the first checkpoint above.
            match i {
                0 => {}
                i if i == runs => second_session = used,
                _ => per_run.push(used),
            }
        }
        // /proc counts CPU in ticks of 10 ms: the mean over the runs, not a median of each.
        let mean = per_run.iter().sum::<Duration>() / per_run.len().max(1) as u32;
        medians.push((mean, second_session));
    }
    let (off, off_second) = medians[0];
    let (on, on_second) = medians[1];
    let added = on.saturating_sub(off);
    let added_second = on_second.saturating_sub(off_second);
    println!("{files} files, runs with one bash call through the daemon (mean of {runs}):");
    println!(
        "  daemon CPU per run: {off:?} checkpoints off, {on:?} on; added {added:?}; git status {status:?}: {}",
        ratio(added, status)
    );
    println!(
        "  a second session's first checkpointed run adds {added_second:?}: {}",
        ratio(added_second, status)
    );
}

#[tokio::main]
async fn main() {
    first_checkpoint(10_000);
    through_the_daemon(10_000, 20).await;
    if std::env::var_os("CHECKPOINTS_BENCH_SMALL").is_none() {
        first_checkpoint(100_000);
        through_the_daemon(100_000, 4).await;
    }
}
