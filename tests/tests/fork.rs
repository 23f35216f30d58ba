//! `agentctl fork` (docs/architecture.md#checkpoints-fork-and-worktrees): a new session with a copy
//! of the history up to a turn, never cutting a tool call from its result, independent from then
//! on.

use serde_json::{Value, json};
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, agentctl_output};

fn events(json_lines: &str) -> Vec<Value> {
    json_lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect()
}

#[tokio::test]
async fn a_fork_at_a_turn_with_tool_calls_keeps_them_with_their_results() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::write(p.join("a.txt"), "alpha\n").unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "a.txt"})),
        anthropic::tool("bash", json!({"command": "echo second-turn"})),
        anthropic::text("third turn"),
        anthropic::text("the fork goes on"),
    ])
    .await;
    let daemon = Daemon::start_in(Home::new());
    let run = agentctl_output(&daemon, &server, p, &["run", "--yes", "--json", "look"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let id = events(&run.stdout)[0]["session"]
        .as_str()
        .unwrap()
        .to_string();

    let too_far = agentctl_output(&daemon, &server, p, &["fork", &id, "--turn", "9"]).await;
    assert_eq!(too_far.code, Some(1));
    assert!(
        too_far.stderr.contains("there is no turn 9"),
        "{}",
        too_far.stderr
    );

    let fork = agentctl_output(&daemon, &server, p, &["fork", &id, "--turn", "1"]).await;
    assert_eq!(fork.code, Some(0), "{}", fork.stderr);
    let forked = fork.stdout.trim().to_string();
    assert_ne!(forked, id);
    let shown = agentctl_output(&daemon, &server, p, &["show", &forked, "--json"]).await;
    let kinds: Vec<String> = events(&shown.stdout)
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert!(kinds.contains(&"tool_result".to_string()), "{kinds:?}");
    assert!(!shown.stdout.contains("second-turn"), "{}", shown.stdout);
    assert_eq!(kinds.last().unwrap(), "run_finished", "{kinds:?}");

    // The fork runs on its own: the model sees the first turn, its result, and the new message.
    let out = agentctl_output(&daemon, &server, p, &["run", "--session", &forked, "next"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let sent = server.received().last().unwrap().body["messages"].clone();
    let text = sent.to_string();
    assert!(
        text.contains("tool_result") && text.contains("alpha"),
        "{text}"
    );
    assert!(
        !text.contains("second-turn") && !text.contains("third turn"),
        "{text}"
    );
    assert!(text.contains("next"), "{text}");

    let listing = agentctl_output(&daemon, &server, p, &["sessions", "--json"]).await;
    let sessions: Value = serde_json::from_str(&listing.stdout).unwrap();
    let find = |id: &str| {
        sessions
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(find(&id)["turns"], 3, "the original is untouched");
    assert_eq!(find(&forked)["turns"], 2);
    assert_eq!(find(&forked)["title"], "fork of look");

    // Without --turn, the fork has everything.
    let whole = agentctl_output(&daemon, &server, p, &["fork", &id]).await;
    assert!(whole.stderr.contains("with 3 turns"), "{}", whole.stderr);
}
