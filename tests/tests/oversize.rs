//! A message too large to answer is refused before anything is sent, with both sizes: over
//! the frame limit by the client, over the model's context window by the daemon. Nothing is
//! left behind.

use std::io::Write;
use std::process::Stdio;

use tests::Daemon;
use tests::model_server::{ModelServer, anthropic};

/// `agentctl run` with `prompt` on stdin; its exit code and stderr.
fn run_with_stdin(daemon: &Daemon, server: &ModelServer, prompt: &[u8]) -> (Option<i32>, String) {
    let project = tempfile::tempdir().unwrap();
    let mut child = daemon
        .home
        .agentctl_against(server, project.path(), &["run", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let prompt = prompt.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&prompt);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn sessions(daemon: &Daemon) -> usize {
    daemon
        .client()
        .await
        .list_sessions()
        .await
        .unwrap()
        .sessions
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_over_the_frame_limit_is_refused_by_the_client_with_both_sizes() {
    let server = ModelServer::start(vec![anthropic::text("never")]).await;
    let daemon = Daemon::start();
    let prompt = "x".repeat(25 * 1024 * 1024);
    let (code, stderr) = run_with_stdin(&daemon, &server, prompt.as_bytes());
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("the message is 25.0 MiB"), "{stderr}");
    assert!(stderr.contains("at most 15.8 MiB"), "{stderr}");
    assert!(!stderr.contains("frame of"), "{stderr}");
    assert!(server.received().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_over_the_models_window_is_refused_before_sending_with_both_sizes() {
    let server = ModelServer::start(vec![anthropic::text("never")]).await;
    let daemon = Daemon::start();
    // About 500,000 tokens against a 200,000-token window.
    let prompt = "word ".repeat(400_000);
    let (code, stderr) = run_with_stdin(&daemon, &server, prompt.as_bytes());
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("the message is about 500,000 tokens"),
        "{stderr}"
    );
    assert!(
        stderr.contains("context window is 200,000 tokens"),
        "{stderr}"
    );
    assert!(server.received().is_empty(), "it was sent");
    assert_eq!(
        sessions(&daemon).await,
        0,
        "an empty session was left behind"
    );
}
