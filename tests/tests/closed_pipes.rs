//! `agentctl … | head -1`: a reader that goes away after one line ends `agentctl` quietly, as
//! it ends any Unix tool (by `SIGPIPE`), never with a panic (exit 101).

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Stdio};

use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home};

/// Reads one line of `child`'s output, closes the pipe as `head -1` does, and waits for the
/// child to end; its status and what it said on stderr.
fn first_line_then_close(mut child: Child) -> (String, std::process::ExitStatus, String) {
    let mut out = BufReader::new(child.stdout.take().expect("stdout is piped"));
    let mut line = String::new();
    out.read_line(&mut line).expect("a line");
    drop(out);
    // Waited for on a thread, so that a child that never notices is a failure, not a hang.
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let output = ended
        .recv_timeout(tests::WAIT)
        .expect("agentctl ends once its reader has left")
        .expect("agentctl ends");
    (
        line,
        output.status,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn assert_quiet_end(what: &str, status: std::process::ExitStatus, stderr: &str) {
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    assert_ne!(status.code(), Some(101), "{what} panicked: {stderr}");
    assert!(
        status.success() || status.signal() == Some(libc::SIGPIPE) || status.code() == Some(141),
        "{what}: {status:?} {stderr}"
    );
}

#[test]
fn completions_end_quietly_when_the_reader_leaves() {
    let home = Home::new();
    let child = home
        .agentctl(&["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (line, status, stderr) = first_line_then_close(child);
    assert!(line.starts_with("_agentctl"), "{line}");
    assert_quiet_end("completions", status, &stderr);
}

#[test]
fn sessions_watch_ends_as_soon_as_the_reader_leaves() {
    let daemon = Daemon::start();
    // Nothing changes after the first line: the closed pipe alone must end it.
    let child = daemon
        .home
        .agentctl(&["sessions", "--watch", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (line, status, stderr) = first_line_then_close(child);
    assert!(line.contains("\"ready\""), "{line}");
    assert_quiet_end("sessions --watch", status, &stderr);
}

#[tokio::test]
async fn a_json_run_ends_quietly_when_the_reader_leaves() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text(&"a long answer ".repeat(2000))]).await;
    let child = daemon
        .home
        .agentctl_against(&server, project.path(), &["run", "--json", "say something"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (line, status, stderr) = tokio::task::spawn_blocking(move || first_line_then_close(child))
        .await
        .unwrap();
    assert!(line.starts_with('{'), "{line}");
    assert_quiet_end("run --json", status, &stderr);
}
