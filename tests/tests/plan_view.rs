//! The plan as a person sees it (docs/architecture.md#the-plan): chat draws it as a short block
//! above the status line that changes in place, so no old copy of it is left in the terminal's
//! history; the finished plan goes up once; attach shows the same lines; the board counts it;
//! a plain stream prints it once per change.

use serde_json::{Value, json};
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::pty::Pty;
use tests::{Daemon, agentctl_output};

/// The arguments of a `todo` call over three steps, the first `done` of them done and the
/// next in progress.
fn plan(done: usize) -> Value {
    let steps = ["read the code", "fix the bug", "run the tests"];
    let items: Vec<Value> = steps
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let status = match i.cmp(&done) {
                std::cmp::Ordering::Less => "done",
                std::cmp::Ordering::Equal => "in_progress",
                std::cmp::Ordering::Greater => "pending",
            };
            json!({"text": text, "status": status})
        })
        .collect();
    json!({ "items": items })
}

/// The lines from the user's message to the run's footer, as a person reads them.
fn conversation(lines: &[String]) -> Vec<String> {
    let start = lines
        .iter()
        .position(|l| l.starts_with("you › plan it"))
        .unwrap_or_else(|| panic!("no user message in:\n{}", lines.join("\n")));
    let end = lines
        .iter()
        .position(|l| l.starts_with("— completed"))
        .unwrap_or_else(|| panic!("no footer in:\n{}", lines.join("\n")));
    lines[start..=end].to_vec()
}

/// The session id chat announced.
fn session_of(lines: &[String]) -> String {
    lines
        .iter()
        .find_map(|l| l.strip_prefix("session "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("chat names its session")
        .to_string()
}

async fn the_plan_changes_in_place_in_chat_and_reads_the_same_in_attach((rows, cols): (u16, u16)) {
    let project = tempfile::tempdir().unwrap();
    let (second, third) = (Gate::new(), Gate::new());
    let server = ModelServer::start(vec![
        anthropic::tool("todo", plan(0)),
        anthropic::tool("todo", plan(1)).hold_after(0, &second),
        anthropic::tool("todo", plan(3)).hold_after(0, &third),
        anthropic::text("all done"),
    ])
    .await;
    let daemon = Daemon::start();
    let args = ["--color", "always", "chat"];
    let pty = Pty::agentctl(&daemon.home, &server, project.path(), &args, (rows, cols));
    pty.expect("[idle");
    pty.send("plan it\r");
    let screen = pty.expect_screen(rows, cols, "Plan 0/3");
    assert!(
        screen.contains("▶ read the code") && screen.contains("☐ run the tests"),
        "{screen}"
    );
    server.wait_for_requests(2).await;
    second.release();
    let screen = pty.expect_screen(rows, cols, "Plan 1/3");
    assert!(screen.contains("✓ read the code") && screen.contains("▶ fix the bug"));
    assert!(
        !screen.contains("Plan 0/3"),
        "the old block is still shown:\n{screen}"
    );
    server.wait_for_requests(3).await;
    third.release();
    pty.expect("completed");
    pty.expect("[idle");
    let lines = pty.transcript(rows, cols);
    let chat = conversation(&lines);
    let session = session_of(&lines);
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));

    // Only the finished plan went up into the history, once, after its call's line.
    let text = chat.join("\n");
    let headings: Vec<&String> = chat.iter().filter(|l| l.starts_with("Plan ")).collect();
    assert_eq!(headings, ["Plan 3/3"], "{text}");
    for step in ["✓ read the code", "✓ fix the bug", "✓ run the tests"] {
        assert_eq!(text.matches(step).count(), 1, "{step:?} in:\n{text}");
    }
    let call = chat
        .iter()
        .rposition(|l| l.contains("todo 3/3 done"))
        .unwrap();
    let heading = chat.iter().position(|l| l == "Plan 3/3").unwrap();
    assert!(call < heading, "{text}");

    // attach replays the session into the same lines.
    let cwd = tempfile::tempdir().unwrap();
    let args = ["--color", "always", "attach", &session];
    let pty = Pty::agentctl(&daemon.home, &server, cwd.path(), &args, (rows, cols));
    pty.expect("completed");
    pty.expect("[idle");
    let attached = conversation(&pty.transcript(rows, cols));
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
    assert_eq!(chat, attached, "chat and attach differ at {cols} columns");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_changes_in_place_in_chat_and_attach_at_80_columns() {
    the_plan_changes_in_place_in_chat_and_reads_the_same_in_attach((24, 80)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_changes_in_place_in_chat_and_attach_at_120_columns() {
    the_plan_changes_in_place_in_chat_and_reads_the_same_in_attach((35, 120)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_during_a_run_shows_the_plan_as_it_stands() {
    let project = tempfile::tempdir().unwrap();
    let held = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::tool("todo", plan(1)),
        anthropic::text("done").hold_after(0, &held),
    ])
    .await;
    let daemon = Daemon::start();
    let run = daemon
        .home
        .agentctl_with(&server, project.path(), &["run", "--detach", "plan it"])
        .output()
        .await
        .unwrap();
    let session = String::from_utf8_lossy(&run.stdout).trim().to_string();
    server.wait_for_requests(2).await;
    let size = (24, 80);
    let pty = Pty::agentctl(
        &daemon.home,
        &server,
        project.path(),
        &["attach", &session],
        size,
    );
    let screen = pty.expect_screen(size.0, size.1, "Plan 1/3");
    assert!(screen.contains("▶ fix the bug"), "{screen}");
    held.release();
    pty.expect("completed");
    // The run ended with a step left: the block stays above the status line.
    let screen = pty.expect_screen(size.0, size.1, "[idle");
    assert!(screen.contains("Plan 1/3"), "{screen}");
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_counts_the_steps_done() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("todo", plan(1)),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start();
    let out = agentctl_output(&daemon, &server, project.path(), &["run", "plan it"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let size = (24, 80);
    let mut command = daemon
        .home
        .agentctl_against(&server, project.path(), &["board"]);
    command.env("TERM", "xterm-256color");
    let board = Pty::spawn(command, size.0, size.1);
    let screen = board.expect_screen(size.0, size.1, "plan 1/3");
    assert!(screen.contains("plan it"), "{screen}");
    board.send("q");
    assert_eq!(board.wait(), Some(0));

    // The same count for scripts.
    use tokio::io::AsyncBufReadExt;
    let mut watch =
        daemon
            .home
            .agentctl_with(&server, project.path(), &["sessions", "--watch", "--json"]);
    watch.stdout(std::process::Stdio::piped());
    let mut child = watch.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(tests::WAIT, lines.next_line())
        .await
        .expect("a line in time")
        .unwrap()
        .expect("a line");
    let summary: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(summary["plan"], json!({"done": 1, "total": 3}), "{line}");
    child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_stream_prints_the_plan_once_then_a_line_per_change() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("todo", plan(0)),
        anthropic::tool("todo", plan(1)),
        anthropic::tool("todo", plan(3)),
        anthropic::text("all done"),
    ])
    .await;
    let daemon = Daemon::start();
    let out = agentctl_output(&daemon, &server, project.path(), &["run", "plan it"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "all done\n");
    let shown = out.stderr;
    let block = "Plan 0/3\n  ▶ read the code\n  ☐ fix the bug\n  ☐ run the tests\n";
    let at = shown
        .find(block)
        .unwrap_or_else(|| panic!("no block in:\n{shown}"));
    assert!(
        shown[..at].contains("todo 0/3 done ✓"),
        "the call's line comes first:\n{shown}"
    );
    assert!(shown.contains("\nPlan 1/3 · ▶ fix the bug\n"), "{shown}");
    assert!(
        shown.contains("\nPlan 3/3 · ✓ every step done\n"),
        "{shown}"
    );
    assert_eq!(shown.matches("read the code").count(), 1, "{shown}");
}
