//! The interactive client on a real pseudo-terminal: send, queue while running, Esc to cancel
//! (returned messages come back into the input line), and detach with the session going on.

use protocol::SessionState;
use tests::Daemon;
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::pty::Pty;

fn chat(daemon: &Daemon, server: &ModelServer, cwd: &std::path::Path, args: &[&str]) -> Pty {
    Pty::agentctl(&daemon.home, server, cwd, args, (30, 120))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_sends_queues_cancels_with_esc_and_detaches() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::text("Working on it.\nStill going").hold_after(5, &gate),
        anthropic::text("Second answer."),
    ])
    .await;
    let daemon = Daemon::start();
    let pty = chat(&daemon, &server, project.path(), &["chat"]);
    pty.expect("Ctrl+D detaches");
    pty.expect("[idle");

    pty.send("hello agent\r");
    pty.expect("you › hello agent");
    pty.expect("Working on it.");
    server.wait_for_requests(1).await;

    // Typed while the run goes: queued as a follow-up.
    pty.send("and then this\r");
    pty.expect("(queued as a follow-up: and then this)");
    pty.expect("queued 0/1");

    // Esc cancels; the queued message comes back into the input line.
    pty.send("\x1b");
    pty.expect("cancelled");
    pty.expect("› and then this");

    // Enter sends it as a new run.
    pty.send("\r");
    pty.expect("you › and then this");
    pty.expect("Second answer.");
    pty.expect("completed");

    // Ctrl+D detaches; the session lives on in the daemon.
    pty.send("\x04");
    pty.expect("detached; the session goes on: agentctl attach ");
    assert_eq!(pty.wait(), Some(0));
    let client = daemon.client().await;
    let sessions = client.list_sessions().await.unwrap().sessions;
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].state, SessionState::Idle);
    assert_eq!(sessions[0].turns, 1);
    gate.release();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_replays_the_session_and_answers_a_pending_request() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("bash", serde_json::json!({"command": "echo from-bash"})),
        anthropic::text("The command ran."),
    ])
    .await;
    let daemon = Daemon::start();
    let started = daemon
        .home
        .agentctl_with(
            &server,
            project.path(),
            &["run", "--detach", "run a command"],
        )
        .output()
        .await
        .unwrap();
    let id = String::from_utf8_lossy(&started.stdout).trim().to_string();
    let pty = chat(&daemon, &server, project.path(), &["attach", &id]);
    pty.expect("run a command");
    pty.expect("permission needed (1): run `echo from-bash`");
    pty.expect("approve 1");
    pty.send("y\r");
    pty.expect("permission 1: allow by agentctl");
    pty.expect("The command ran.");
    // Ctrl+C twice detaches.
    pty.send("\x03");
    pty.expect("Ctrl+C again to detach");
    pty.send("\x03");
    pty.expect("detached");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_answers_a_permission_request_and_other_keys_get_a_hint() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("bash", serde_json::json!({"command": "echo one-key-ok"})),
        anthropic::text("Ran it."),
        anthropic::text("Second message."),
    ])
    .await;
    let daemon = Daemon::start();
    let pty = chat(&daemon, &server, project.path(), &["chat"]);
    pty.expect("[idle");
    pty.send("run something\r");
    pty.expect("approve 1");
    // Keys answer once the question has been shown a moment (typing under way is text).
    pty.expect("y/n/a]");
    pty.send("x");
    pty.expect("press y (allow), n (deny) or a (always allow); Esc cancels the run");
    // `y` alone answers: no Enter.
    pty.send("y");
    pty.expect("permission 1: allow by agentctl");
    pty.expect("Ran it.");
    pty.expect("completed");
    // Without a pending request, the same keys are text again.
    pty.send("yes and more\r");
    pty.expect("you › yes and more");
    pty.expect("Second message.");
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_on_a_terminal_takes_one_key_per_permission_request() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("bash", serde_json::json!({"command": "echo first-ran"})),
        anthropic::tool("bash", serde_json::json!({"command": "echo second-ran"})),
        anthropic::text("Both asked."),
    ])
    .await;
    let daemon = Daemon::start();
    let pty = chat(&daemon, &server, project.path(), &["run", "two commands"]);
    pty.expect("allow? [y]es / [n]o / [a]lways: ");
    pty.send("q");
    pty.expect("press y (allow), n (deny) or a (always allow)");
    pty.send("y");
    pty.expect("first-ran");
    pty.expect("permission needed (2)");
    // A key typed before the question is not its answer: wait for the question.
    pty.expect("allow? [y]es / [n]o / [a]lways: ");
    pty.send("n");
    pty.expect("permission 2: deny by");
    pty.expect("Both asked.");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_shows_a_reply_while_its_first_line_is_still_streaming() {
    let project = tempfile::tempdir().unwrap();
    let pace = tests::model_server::Pace::new();
    let server = ModelServer::start(vec![
        anthropic::many_deltas(3, "streamed-piece ").paced(&pace),
    ])
    .await;
    let daemon = Daemon::start();
    let pty = chat(&daemon, &server, project.path(), &["chat"]);
    pty.expect("[idle");
    pty.send("talk slowly\r");
    // The stream start, the block start, and the first piece: no newline has come yet.
    pace.allow(3);
    pty.expect("streamed-piece");
    let screen = tests::pty::strip_ansi(&pty.raw());
    assert!(!screen.contains("completed"), "{screen}");
    pace.allow(100);
    pty.expect("completed");
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_completes_slash_commands_and_a_trailing_backslash_continues_the_line() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text("Two lines read.")]).await;
    let daemon = Daemon::start();
    let pty = chat(&daemon, &server, project.path(), &["chat"]);
    pty.expect("[idle");
    pty.send("/rew\t");
    // The only match completes at once; Enter sends it.
    pty.expect("› /rewind");
    pty.send("\r");
    pty.expect("no run of this session has changed files yet");
    pty.send("first line\\\r");
    pty.send("second line\r");
    pty.expect("Two lines read.");
    let sent = server.received()[0].body["messages"][0]["content"].to_string();
    assert!(sent.contains("first line\\nsecond line"), "{sent}");
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_command_completes_with_tab_and_expands_in_chat() {
    let project = tempfile::tempdir().unwrap();
    let commands = project.path().join(".agents/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("greet.md"),
        "---\ndescription: Greet someone.\nargument-hint: NAME\n---\nSay hello to $1.\n",
    )
    .unwrap();
    std::fs::write(
        commands.join("grow.md"),
        "---\ndescription: Grow something.\n---\nGrow it.\n",
    )
    .unwrap();
    let server = ModelServer::start(vec![anthropic::text("Hello, world!")]).await;
    let daemon = Daemon::start();
    let pty = chat(&daemon, &server, project.path(), &["chat"]);
    pty.expect("[idle");
    // Two commands start with /g: Tab completes as far as they agree, then shows them both.
    pty.send("/g\t");
    pty.expect("› /gr");
    pty.send("\t");
    pty.expect("Greet someone.");
    pty.expect("Grow something.");
    // Typing goes on; one command is left, and Tab completes it at once.
    pty.send("e\t");
    pty.expect("› /greet");
    pty.send("world\r");
    pty.expect("Hello, world!");
    let sent = server.received()[0].body["messages"][0]["content"].to_string();
    assert!(sent.contains("Say hello to world."), "{sent}");
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}
