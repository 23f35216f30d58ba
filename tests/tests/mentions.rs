//! `@path` in a prompt given to `run` (or `steer`, `queue`) attaches that file, as in chat:
//! the model gets its text, the user is told on stderr.

use std::process::Stdio;

use tests::Daemon;
use tests::model_server::{ModelServer, anthropic};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_prompt_attaches_the_files_it_mentions() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("notes.txt"), "buy oat milk\n").unwrap();
    let server = ModelServer::start(vec![anthropic::text("Oat milk.")]).await;
    let out = daemon
        .home
        .agentctl_against(
            &server,
            project.path(),
            &["run", "what do @notes.txt say? mail me@example.com"],
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("attached @notes.txt (13 B)"), "{stderr}");
    let sent = server.received()[0].body["messages"][0]["content"].to_string();
    assert!(
        sent.contains("<file path=\\\"notes.txt\\\">\\nbuy oat milk\\n"),
        "{sent}"
    );
    assert!(sent.contains("me@example.com"), "{sent}");
    // The view shows the path, not the text.
    assert!(!stderr.contains("buy oat milk"), "{stderr}");
}
