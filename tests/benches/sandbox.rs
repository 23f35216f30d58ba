//! Sandbox figure: the time the sandbox set-up (the helper, no-new-privs, a user and network
//! namespace, Landlock) adds to a trivial command, `bash -c true`, median of many.
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
    let tmp = std::env::temp_dir();
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
            cmd.arg("--write")
                .arg(&tmp)
                .args(["--", "bash", "-c", "true"]);
            cmd
        })
    };
    let (isolated, networked) = (confined(false), confined(true));
    println!(
        "`bash -c true`: {plain:?} plain, {isolated:?} sandboxed without network (+{:?}), {networked:?} sandboxed with network (+{:?}); medians of {RUNS}",
        isolated.saturating_sub(plain),
        networked.saturating_sub(plain)
    );
}
