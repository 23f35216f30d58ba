//! `agentctl run … | tool`: standard output gets only the answer (or, with `--json`, only the
//! events); what the agent did, the token lines, the footer and the session id go to standard
//! error, as `codex exec` and `claude -p` do. A reader that leaves early ends `run` quietly.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;

use serde_json::json;
use tests::Daemon;
use tests::model_server::{ModelServer, anthropic};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_piped_run_writes_only_the_answer_to_stdout() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .text("Let me look.")
            .tool("bash", json!({"command": "echo looked"}))
            .build(),
        anthropic::text("The answer is 42.\nOn two lines."),
    ])
    .await;
    let out = daemon
        .home
        .agentctl_against(&server, project.path(), &["run", "--yes", "what is it?"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout, "The answer is 42.\nOn two lines.\n",
        "stderr:\n{stderr}"
    );
    // Everything else went to stderr: the tool line, the footer, the session.
    assert!(stderr.contains("bash echo looked"), "{stderr}");
    assert!(stderr.contains("completed · 2 turns"), "{stderr}");
    assert!(stderr.contains("agentctl attach"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_piped_json_run_writes_only_events_to_stdout() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text("Fine.")]).await;
    let out = daemon
        .home
        .agentctl_against(&server, project.path(), &["run", "--json", "hi"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        let event: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not an event ({e}): {line:?}"));
        assert!(event["type"].is_string(), "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_run_ends_quietly_when_its_reader_leaves() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let answer: String = (0..5000)
        .map(|i| format!("line {i} of the answer\n"))
        .collect();
    let server = ModelServer::start(vec![anthropic::text(&answer)]).await;
    // Its stderr (the whole reply as it streams) goes to a file, read at the end.
    let errors = tempfile::NamedTempFile::new().unwrap();
    let mut child = daemon
        .home
        .agentctl_against(&server, project.path(), &["run", "say a lot"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(errors.reopen().unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let output = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        assert_eq!(line, "line 0 of the answer\n");
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let stderr = std::fs::read_to_string(errors.path()).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        output.status.success()
            || output.status.signal() == Some(libc::SIGPIPE)
            || output.status.code() == Some(141),
        "{:?} {stderr}",
        output.status
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_command_shows_the_end_of_its_output() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let script = "for i in $(seq 1 30); do echo out$i; done; echo 'error: the real cause'; exit 3";
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": script})),
        anthropic::text("It failed."),
    ])
    .await;
    let out = daemon
        .home
        .agentctl_against(&server, project.path(), &["run", "--yes", "build it"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error: the real cause"), "{stderr}");
    assert!(stderr.contains("out30"), "{stderr}");
    assert!(stderr.contains("lines above"), "{stderr}");
    assert!(!stderr.contains("out1\n"), "{stderr}");
}
