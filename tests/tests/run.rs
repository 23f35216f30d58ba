//! `agentctl run` end to end: the real daemon, the real client, and a scripted model server
//! speaking Anthropic's streaming format over real HTTP.

use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home};

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn run(
    daemon: &Daemon,
    server: &ModelServer,
    cwd: &std::path::Path,
    args: &[&str],
) -> Output {
    let output = daemon
        .home
        .agentctl_with(server, cwd, args)
        .output()
        .await
        .unwrap();
    Output {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[tokio::test]
async fn a_two_turn_run_reads_a_file_and_answers() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("README.md"),
        "# App\n\nStart it with `npm run dev`.\n",
    )
    .unwrap();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .text("Let me read it.")
            .tool("read", json!({"path": "README.md"}))
            .build(),
        anthropic::text("Start it with `npm run dev`."),
    ])
    .await;
    let daemon = Daemon::start_in(Home::new());
    let out = run(
        &daemon,
        &server,
        project.path(),
        &[
            "run",
            "Read README.md and tell me how to start this project",
        ],
    )
    .await;
    assert_eq!(
        out.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    assert!(out.stdout.contains("Let me read it."), "{}", out.stdout);
    assert!(out.stdout.contains("read README.md ✓"), "{}", out.stdout);
    assert!(
        out.stdout.contains("Start it with `npm run dev`."),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("completed · 2 turns"), "{}", out.stdout);

    let requests = server.received();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some("test-key"));
    let second = &requests[1].body["messages"];
    assert_eq!(second[1]["role"], "assistant");
    assert_eq!(second[1]["content"][1]["type"], "tool_use");
    assert_eq!(second[2]["content"][0]["type"], "tool_result");
    assert!(
        second[2]["content"][0]["content"]
            .as_str()
            .unwrap()
            .contains("npm run dev")
    );
}
