//! `agentctl run` end to end: the real daemon, the real client, and a scripted model server
//! speaking Anthropic's streaming format over real HTTP.

use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, agentctl_output};

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
    let out = agentctl_output(
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
    // What the agent did goes to stderr; stdout, a pipe here, gets only the answer.
    assert!(out.stderr.contains("Let me read it."), "{}", out.stderr);
    assert!(out.stderr.contains("read README.md ✓"), "{}", out.stderr);
    assert!(out.stderr.contains("completed · 2 turns"), "{}", out.stderr);
    assert_eq!(out.stdout, "Start it with `npm run dev`.\n");

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

#[tokio::test]
async fn the_exit_code_says_how_the_run_ended() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        // --max-turns 1: the first reply asks for a tool, so the run stops at the limit.
        anthropic::tool("glob", json!({"pattern": "*"})),
        // Three replies of unknown tools: the health guard stops the run.
        anthropic::tool("fly", json!({})),
        anthropic::tool("fly", json!({})),
        anthropic::tool("fly", json!({})),
        // A provider error.
        anthropic::error(400, "invalid_request_error", "bad request"),
    ])
    .await;
    let daemon = Daemon::start();
    let limited = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["run", "--max-turns", "1", "go"],
    )
    .await;
    assert_eq!(limited.code, Some(3), "{}", limited.stderr);
    assert!(
        limited.stderr.contains("stopped at the turn limit"),
        "{}",
        limited.stderr
    );
    let guarded = agentctl_output(&daemon, &server, project.path(), &["run", "go"]).await;
    assert_eq!(guarded.code, Some(4), "{}", guarded.stderr);
    let failed = agentctl_output(&daemon, &server, project.path(), &["run", "go"]).await;
    assert_eq!(failed.code, Some(1));
    assert!(
        failed
            .stderr
            .contains("Anthropic API error 400 (invalid_request_error): bad request"),
        "{}",
        failed.stderr
    );
    let usage = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["run", "--max-turns", "many", "go"],
    )
    .await;
    assert_eq!(usage.code, Some(2));
}

#[tokio::test]
async fn ctrl_c_cancels_a_running_command_and_exits_130() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::tool(
        "bash",
        json!({"command": "echo started; sleep 30"}),
    )])
    .await;
    let daemon = Daemon::start();
    let mut run = tests::json_run::JsonRun::start(&daemon, &server, project.path(), "sleep please");
    // Wait for the bash call to begin, then press Ctrl+C.
    run.until("tool_call").await;
    tests::signal(run.child.id().unwrap(), libc::SIGINT);
    let rest = run.rest().await;
    let status = run.child.wait().await.unwrap();
    assert_eq!(status.code(), Some(130));
    let result = rest
        .iter()
        .find(|e| e["type"] == "tool_result")
        .expect("the call has a result");
    assert_eq!(result["is_error"], true);
    assert!(
        result["output"].as_str().unwrap().contains("interrupted"),
        "{result}"
    );
    let done = rest.last().unwrap();
    assert_eq!(done["type"], "run_finished");
    assert_eq!(done["stop_reason"], "aborted");
}

#[tokio::test]
async fn the_prompt_can_come_from_stdin() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text("Got it.")]).await;
    let daemon = Daemon::start();
    let mut child = daemon
        .home
        .agentctl_with(&server, project.path(), &["run"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use tokio::io::AsyncWriteExt;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"summarise the build\n").await.unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).contains("Got it."));
    let sent = &server.received()[0].body["messages"][0]["content"][0]["text"];
    assert_eq!(sent, "summarise the build\n");
}

#[tokio::test]
async fn json_output_is_one_parsable_event_per_line() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "x\n").unwrap();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .thinking("Look first.")
            .text("Reading.")
            .tool("read", json!({"path": "a.txt"}))
            .build(),
        anthropic::reply()
            .text("Done.")
            .usage(50, 5, 40, 10)
            .build(),
    ])
    .await;
    let daemon = Daemon::start();
    let out = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["run", "--json", "read a"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let events: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for kind in [
        "run_started",
        "user_message",
        "turn_started",
        "thinking_delta",
        "text_delta",
        "assistant_message",
        "tool_call",
        "tool_result",
        "usage",
        "run_finished",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "seq without gaps: {seqs:?}"
    );
    let call = events.iter().find(|e| e["type"] == "tool_call").unwrap();
    assert_eq!(call["args"]["path"], "a.txt");
    let done = events.last().unwrap();
    assert_eq!(done["stop_reason"], "completed");
    assert_eq!(done["usage"]["cache_read"], 40);
    assert_eq!(done["usage"]["input"], 150);
}

#[tokio::test]
async fn allow_flags_permit_writes_and_commands() {
    let project = tempfile::tempdir().unwrap();
    let script = || {
        vec![
            anthropic::reply()
                .tool("write", json!({"path": "w.txt", "content": "w"}))
                .tool("bash", json!({"command": "touch b.txt"}))
                .build(),
            anthropic::text("ok"),
        ]
    };
    let server = ModelServer::start(script()).await;
    let daemon = Daemon::start();
    let denied = agentctl_output(&daemon, &server, project.path(), &["run", "go"]).await;
    assert_eq!(denied.code, Some(0));
    assert!(
        denied
            .stderr
            .contains("denied: run with --allow write to permit file changes"),
        "{}",
        denied.stderr
    );
    assert!(!project.path().join("w.txt").exists());

    server.push(script());
    let partly = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["run", "--allow", "write", "go"],
    )
    .await;
    assert!(
        partly
            .stderr
            .contains("denied: run with --allow bash to permit commands"),
        "{}",
        partly.stderr
    );
    assert!(project.path().join("w.txt").exists() && !project.path().join("b.txt").exists());

    server.push(script());
    let all = agentctl_output(&daemon, &server, project.path(), &["run", "--yes", "go"]).await;
    assert_eq!(all.code, Some(0));
    assert!(project.path().join("b.txt").exists(), "{}", all.stderr);
}

#[tokio::test]
async fn a_missing_api_key_is_one_clear_line() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let out = daemon
        .home
        .agentctl_with(&server, project.path(), &["run", "hello"])
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("✗ ANTHROPIC_API_KEY is not set. Export your API key"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "no answer, nothing on stdout");
}
