//! What people coming from other agents type in chat: `@file`, `/model`, `/clear`, `/init`,
//! `/cost`, `/help` (which lists exactly what Tab completes), completion of values and
//! paths, and `chat --continue`.

use serde_json::Value;
use tests::Daemon;
use tests::model_server::{ModelServer, anthropic};
use tests::pty::Pty;

/// The text of the first user message of a request, its blocks joined.
fn first_user_text(body: &Value) -> String {
    let message = body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .cloned()
        .unwrap_or_default();
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn chat(daemon: &Daemon, server: &ModelServer, cwd: &std::path::Path, args: &[&str]) -> Pty {
    Pty::agentctl(&daemon.home, server, cwd, args, (30, 120))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_at_mention_attaches_the_file_and_tab_completes_its_path() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("README.md"), "Start with: make serve\n").unwrap();
    let server = ModelServer::start(vec![anthropic::text("It says make serve.")]).await;
    let daemon = Daemon::start();
    let pty = chat(&daemon, &server, project.path(), &["chat"]);
    pty.expect("[idle");
    pty.send("what does @READ\t");
    pty.expect("› what does @README.md");
    pty.send("say?\r");
    pty.expect("attached @README.md (23 B)");
    pty.expect("you › what does @README.md say?");
    pty.expect("+ README.md");
    pty.expect("It says make serve.");
    let sent = first_user_text(&server.received()[0].body);
    assert!(
        sent.contains("<file path=\"README.md\">\nStart with: make serve\n"),
        "{sent}"
    );
    // The file's text is not shown in the view, only its path.
    let screen = tests::pty::strip_ansi(&pty.raw());
    assert!(!screen.contains("Start with: make serve"), "{screen}");
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_lists_what_tab_completes_and_values_complete_without_placeholders() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let pty = chat(&daemon, &server, project.path(), &["chat"]);
    pty.expect("[idle");
    pty.send("/help\r");
    for command in [
        "/help",
        "/steer",
        "/queue",
        "/cancel",
        "/allow",
        "/deny",
        "/always",
        "/mode",
        "/model",
        "/cost",
        "/clear",
        "/init",
        "/compact",
        "/diff",
        "/rewind",
        "/resume",
        "/sessions",
        "/detach",
        "/quit",
        "/exit",
    ] {
        pty.expect(command);
    }
    pty.send("/mode pla\t");
    pty.expect("› /mode plan");
    pty.send("\r");
    pty.expect("mode: plan");
    // Nothing completes: nothing is printed.
    pty.send("@nothing-here\t");
    pty.send("\x15/sessions\r");
    pty.expect("turns");
    let screen = tests::pty::strip_ansi(&pty.raw());
    assert!(!screen.to_uppercase().contains("NO RECORDS"), "{screen}");
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_lists_what_the_provider_serves_and_sets_the_next_runs_model() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text("Done.")]).await;
    server.serve_models(&["claude-big", "claude-small"]);
    let daemon = Daemon::start();
    let pty = chat(&daemon, &server, project.path(), &["chat"]);
    pty.expect("[idle");
    pty.send("/model\r");
    pty.expect("claude-big");
    pty.expect("claude-small");
    pty.send("/model claude-s\t");
    pty.expect("› /model claude-small");
    pty.send("\r");
    pty.expect("model: claude-small (from the next run)");
    pty.send("go\r");
    pty.expect("Done.");
    pty.expect("claude-small");
    let asked = server.received();
    assert_eq!(asked[0].body["model"], "claude-small");
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_starts_a_fresh_session_init_asks_for_agents_md_and_cost_shows_the_usage() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .text("First.")
            .usage(1200, 80, 0, 0)
            .build(),
        anthropic::text("Wrote AGENTS.md."),
    ])
    .await;
    let daemon = Daemon::start();
    let pty = chat(&daemon, &server, project.path(), &["chat"]);
    pty.expect("[idle");
    pty.send("hello\r");
    pty.expect("First.");
    pty.expect("completed");
    pty.send("/cost\r");
    pty.expect("last run");
    pty.expect("1,200 in");
    pty.expect("session:");
    pty.send("/clear\r");
    pty.expect("a fresh session: ");
    pty.expect("the last one stays: agentctl attach");
    pty.send("/init\r");
    pty.expect("Wrote AGENTS.md.");
    let asked = server.received();
    let messages = asked[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(
        messages.len(),
        1,
        "the fresh session has no history: {messages:?}"
    );
    assert!(first_user_text(&asked[1].body).contains("AGENTS.md"));
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_continue_joins_the_latest_session_of_the_directory() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text("Remembered.")]).await;
    let daemon = Daemon::start();
    let run = daemon
        .home
        .agentctl_against(&server, project.path(), &["run", "--json", "remember 42"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let events = String::from_utf8_lossy(&run.stdout);
    let first: serde_json::Value = serde_json::from_str(events.lines().next().unwrap()).unwrap();
    let session = first["session"].as_str().unwrap().to_string();
    let pty = chat(&daemon, &server, project.path(), &["chat", "--continue"]);
    pty.expect(&format!("session {session}"));
    pty.expect("you › remember 42");
    pty.expect("Remembered.");
    pty.expect("[idle");
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}
