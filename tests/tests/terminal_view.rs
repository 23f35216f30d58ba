//! The human view on a real terminal: changes shown as colored diffs, and colors that follow
//! `--color` and `NO_COLOR`.

use serde_json::json;
use tests::Daemon;
use tests::model_server::{ModelServer, anthropic};
use tests::pty::Pty;

fn run_on_pty(daemon: &Daemon, server: &ModelServer, cwd: &std::path::Path, args: &[&str]) -> Pty {
    let mut command = daemon.home.agentctl(args);
    command
        .current_dir(cwd)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("TERM", "xterm-256color");
    Pty::spawn(command, 40, 120)
}

async fn edit_script() -> ModelServer {
    ModelServer::start(vec![
        anthropic::tool(
            "edit",
            json!({"path": "m.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}),
        ),
        anthropic::tool(
            "write",
            json!({"path": "new.md", "content": "# Notes\nfirst line\n"}),
        ),
        anthropic::text("Changed."),
    ])
    .await
}

fn project() -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("m.rs"),
        "fn main() {\n    let x = 1;\n}\n",
    )
    .unwrap();
    project
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_and_writes_show_their_diff_without_colors_under_no_color() {
    let project = project();
    let server = edit_script().await;
    let daemon = Daemon::start();
    // The fixture sets NO_COLOR=1.
    let pty = run_on_pty(
        &daemon,
        &server,
        project.path(),
        &["run", "--yes", "change it"],
    );
    pty.expect("edit m.rs");
    pty.expect("@@ -1,3 +1,3 @@");
    pty.expect("-    let x = 1;");
    pty.expect("+    let x = 2;");
    pty.expect("write new.md");
    pty.expect("+# Notes");
    pty.expect("+first line");
    pty.expect("Changed.");
    assert_eq!(pty.wait(), Some(0));
    let raw = pty.raw();
    assert!(
        !raw.windows(2).any(|w| w == b"\x1b["),
        "escape codes under NO_COLOR:\n{}",
        String::from_utf8_lossy(&raw)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn color_always_colors_added_and_removed_lines() {
    let project = project();
    let server = edit_script().await;
    let daemon = Daemon::start();
    let pty = run_on_pty(
        &daemon,
        &server,
        project.path(),
        &["--color", "always", "run", "--yes", "go"],
    );
    pty.expect("Changed.");
    assert_eq!(pty.wait(), Some(0));
    let raw = String::from_utf8_lossy(&pty.raw()).into_owned();
    assert!(raw.contains("\x1b[31m-    let x = 1;\x1b[0m"), "{raw:?}");
    assert!(raw.contains("\x1b[32m+    let x = 2;\x1b[0m"), "{raw:?}");
    // `--color never` wins over a terminal.
    let out = daemon.home.run_agentctl(&["--color", "never", "sessions"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\x1b'));
}
