//! Sandbox figure: the time the sandbox set-up (the helper, user, mount, PID and network
//! namespaces, a private size-limited /tmp, a protected `.git`, a hidden daemon directory, a
//! hidden credential directory and file, resource limits, a first process that reaps and
//! watches the process count, Landlock) adds to a trivial command, `bash -c true`, median of
//! many; and the look around a call (git directories, hard links, PATH directories).
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
    let (project, hidden, home) = (
        base.path().join("p"),
        base.path().join("h"),
        base.path().join("home"),
    );
    for dir in [&project, &hidden, &project.join(".git"), &home.join(".ssh")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(home.join(".netrc"), "machine x\n").unwrap();
    let plain = median_of(RUNS, || {
        let mut cmd = Command::new("bash");
        cmd.args(["-c", "true"]);
        cmd
    });
    let policy = |network: bool| agentd::sandbox::Policy {
        writable: vec![project.clone()],
        readable: Vec::new(),
        protected: vec![project.join(".git")],
        hidden: vec![hidden.clone()],
        secrets: vec![home.join(".ssh"), home.join(".netrc")],
        tmp: true,
        network,
        limits: Default::default(),
    };
    let confined = |network: bool| {
        let args = policy(network).helper_args();
        median_of(RUNS, || {
            let mut cmd = Command::new(&helper);
            cmd.args(&args)
                .args(["bash", "-c", "true"])
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
        policy: policy(false),
        search: vec![project.clone()],
        session_dir: project.clone(),
        home: Some(home.clone()),
        path_var: Some(format!(
            "{}:/usr/bin:/bin",
            project.join(".venv/bin").display()
        )),
        min_free_mb: 0,
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
