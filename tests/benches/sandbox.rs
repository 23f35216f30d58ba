//! Sandbox figure: the time the sandbox set-up (the helper, user, mount, PID and network
//! namespaces, a private /tmp, a protected `.git`, a hidden socket directory, a first process
//! that reaps, Landlock) adds to a trivial command, `bash -c true`, median of many.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench sandbox`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn median_of(runs: usize, mut make: impl FnMut() -> Command) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let status = make()
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("the command runs");
            assert!(status.success());
            start.elapsed()
        })
        .collect();
    times.sort();
    tests::percentile(&times, 0.5)
}

fn main() {
    const RUNS: usize = 300;
    let helper = tests::binary("agentd");
    let base = tempfile::tempdir().unwrap();
    let (project, tmp, hidden) = (
        base.path().join("p"),
        base.path().join("t"),
        base.path().join("h"),
    );
    for dir in [&project, &tmp, &hidden, &project.join(".git")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let plain = median_of(RUNS, || {
        let mut cmd = Command::new("bash");
        cmd.args(["-c", "true"]);
        cmd
    });
    let confined = |network: bool| {
        median_of(RUNS, || {
            let mut cmd = Command::new(&helper);
            cmd.arg("__sandbox");
            if network {
                cmd.arg("--network");
            }
            cmd.arg("--tmp")
                .arg(&tmp)
                .arg("--write")
                .arg(&project)
                .arg("--protect")
                .arg(project.join(".git"))
                .arg("--hide")
                .arg(&hidden)
                .args(["--", "bash", "-c", "true"])
                .current_dir(&project);
            cmd
        })
    };
    let (isolated, networked) = (confined(false), confined(true));
    // The look for git directories before a call and after it, on a 10,000-file tree.
    for d in 0..100 {
        let dir = project.join(format!("src/m{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f:03}.rs")), "fn f() {}\n").unwrap();
        }
    }
    let sandbox = agentd::sandbox::Sandbox {
        policy: agentd::sandbox::Policy {
            writable: vec![project.clone()],
            tmp: Some(tmp.clone()),
            ..Default::default()
        },
        search: vec![project.clone()],
        home: None,
        path_var: None,
    };
    let mut guard_times: Vec<Duration> = (0..30)
        .map(|_| {
            let start = Instant::now();
            let (_, guard) = sandbox.prepare().unwrap();
            assert!(guard.after().is_empty());
            start.elapsed()
        })
        .collect();
    guard_times.sort();
    println!(
        "git directories looked for before and after a call, 10,000-file tree: median {:?} of 30",
        tests::percentile(&guard_times, 0.5)
    );
    println!(
        "`bash -c true`: {plain:?} plain, {isolated:?} sandboxed without network (+{:?}), {networked:?} sandboxed with network (+{:?}); medians of {RUNS}",
        isolated.saturating_sub(plain),
        networked.saturating_sub(plain)
    );
}
