//! The human view on a real terminal: changes shown as colored diffs, and colors that follow
//! `--color` and `NO_COLOR`.

use serde_json::json;
use tests::Daemon;
use tests::model_server::{ModelServer, anthropic};
use tests::pty::Pty;

fn run_on_pty(daemon: &Daemon, server: &ModelServer, cwd: &std::path::Path, args: &[&str]) -> Pty {
    Pty::agentctl(&daemon.home, server, cwd, args, (40, 120))
}

async fn edit_script() -> ModelServer {
    ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "m.rs"})),
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
    // The bottom region moves the cursor, but nothing is colored or styled.
    let raw = String::from_utf8_lossy(&pty.raw()).into_owned();
    let styled: Vec<&str> = raw
        .split("\x1b[")
        .skip(1)
        .filter_map(|rest| {
            let end = rest.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
            (rest[end..].starts_with('m')).then(|| &rest[..end])
        })
        .collect();
    assert!(
        styled.is_empty(),
        "styles under NO_COLOR: {styled:?}\n{raw}"
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

/// A command that prints a line, then waits for `go` to appear, then prints another.
fn waiting_command() -> serde_json::Value {
    json!({"command": "printf 'step-%s\\n' one; while [ ! -e go ]; do sleep 0.02; done; echo step-two"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_command_shows_its_time_and_last_output_line() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("bash", waiting_command()),
        anthropic::text("Built."),
    ])
    .await;
    let daemon = Daemon::start();
    let pty = run_on_pty(&daemon, &server, project.path(), &["run", "--yes", "build"]);
    // The spinner line: elapsed seconds, then the output's last line, while the command runs.
    pty.expect("s  step-one");
    assert!(!project.path().join("go").exists());
    std::fs::write(project.path().join("go"), "").unwrap();
    pty.expect("✓");
    pty.expect("Built.");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test]
async fn command_output_streams_as_events_that_the_result_folds() {
    use protocol::{Event, Request};
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("bash", waiting_command()),
        anthropic::text("Done."),
    ])
    .await;
    let mut daemon = Daemon::start();
    let (client, session, mut incoming) =
        tests::session_with_mode(&daemon, project.path(), protocol::Mode::Bypass).await;
    tests::start_run(&client, &session, "go", tests::run_options(&server)).await;
    let events = tests::events_until(
        &mut incoming,
        |e| matches!(e, Event::ToolOutput { text, .. } if text.contains("step-one")),
    )
    .await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.event, Event::ToolResult { .. }))
    );
    std::fs::write(project.path().join("go"), "").unwrap();
    let rest = tests::until_finished(&mut incoming).await;
    let result = rest
        .iter()
        .find_map(|e| match &e.event {
            Event::ToolResult { output, .. } => Some(output.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        result.contains("step-one") && result.contains("step-two"),
        "{result}"
    );
    // A replay, also after a restart, has the result and not the pieces; no seq is used twice.
    daemon.kill();
    daemon.restart();
    let client = daemon.client().await;
    let history = match client
        .request(Request::GetHistory {
            session: session.clone(),
            from_seq: 0,
        })
        .await
        .unwrap()
    {
        protocol::Reply::History { events, .. } => events,
        other => panic!("{other:?}"),
    };
    assert!(
        !history
            .iter()
            .any(|e| matches!(e.event, Event::ToolOutput { .. }))
    );
    assert!(
        history
            .iter()
            .any(|e| matches!(e.event, Event::ToolResult { .. }))
    );
    let seqs: Vec<u64> = history.iter().map(|e| e.seq).collect();
    let mut sorted = seqs.clone();
    sorted.dedup();
    assert_eq!(seqs, sorted, "seqs strictly increase");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markdown_renders_headings_emphasis_and_highlighted_code_blocks() {
    let project = tempfile::tempdir().unwrap();
    let reply = "# Plan\n\nUse **care** and `cargo test`.\n\n```rust\nfn main() {}\n```\nDone.";
    let server = ModelServer::start(vec![anthropic::text(reply)]).await;
    let daemon = Daemon::start();
    let pty = run_on_pty(
        &daemon,
        &server,
        project.path(),
        &["--color", "always", "run", "explain"],
    );
    pty.expect("completed");
    assert_eq!(pty.wait(), Some(0));
    let screen = pty.screen(40, 120);
    assert!(screen.contains("Plan\n"), "{screen}");
    assert!(!screen.contains("# Plan"), "{screen}");
    assert!(screen.contains("Use care and cargo test."), "{screen}");
    assert!(screen.contains("  fn main() {}"), "{screen}");
    assert!(
        !screen.contains("```"),
        "the fences are not shown:\n{screen}"
    );
    assert!(screen.contains("Done."), "{screen}");
    let raw = String::from_utf8_lossy(&pty.raw()).into_owned();
    assert!(raw.contains("\x1b[38;2;"), "the code is highlighted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_colors_the_reply_stays_as_written() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text("**as is**\n```\ncode\n```")]).await;
    let daemon = Daemon::start();
    let pty = run_on_pty(&daemon, &server, project.path(), &["run", "explain"]);
    pty.expect("completed");
    assert_eq!(pty.wait(), Some(0));
    let screen = pty.screen(40, 120);
    assert!(screen.contains("**as is**\n```\ncode\n```"), "{screen}");
}

#[tokio::test]
async fn the_cost_is_shown_when_the_models_price_is_known() {
    let project = tempfile::tempdir().unwrap();
    let reply = || {
        anthropic::reply()
            .text("Priced.")
            .usage(100_000, 10_000, 0, 0)
            .build()
    };
    let server = ModelServer::start(vec![reply(), reply(), reply()]).await;
    let home = tests::Home::with_config("[prices.\"local-*\"]\ninput = 1.0\noutput = 2.0\n");
    let daemon = Daemon::start_in(home);
    let p = project.path();
    // Built-in table: 100k in × $3 + 10k out × $15 per million.
    let out = tests::agentctl_output(
        &daemon,
        &server,
        p,
        &["run", "--model", "claude-sonnet-4-5", "hi"],
    )
    .await;
    assert!(out.stderr.contains("· $0.4500"), "{}", out.stderr);
    // The config's own entry.
    let out = tests::agentctl_output(
        &daemon,
        &server,
        p,
        &["run", "--json", "--model", "local-coder", "hi"],
    )
    .await;
    let usage = out
        .stdout
        .lines()
        .find(|l| l.contains("\"type\":\"usage\""))
        .unwrap();
    assert!(usage.contains("\"cost_usd\":0.12"), "{usage}");
    // Unknown: no cost.
    let out =
        tests::agentctl_output(&daemon, &server, p, &["run", "--model", "mystery", "hi"]).await;
    assert!(out.stderr.contains("completed"), "{}", out.stderr);
    assert!(!out.stderr.contains('$'), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_subagents_each_have_a_live_line_with_what_they_do() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .tool(
                "task",
                json!({"description": "first job", "prompt": "LIVE-ONE"}),
            )
            .tool(
                "task",
                json!({"description": "second job", "prompt": "LIVE-TWO"}),
            )
            .build(),
        anthropic::text("Both done."),
    ])
    .await;
    for marker in ["LIVE-ONE", "LIVE-TWO"] {
        server.route(
            marker,
            vec![
                anthropic::tool("bash", waiting_command()),
                anthropic::text(&format!("{marker} finished")),
            ],
        );
    }
    let daemon = Daemon::start();
    let pty = run_on_pty(&daemon, &server, project.path(), &["run", "--yes", "split"]);
    // While both run: one line each, with the command it runs now.
    pty.expect("first job · bash");
    pty.expect("second job · bash");
    std::fs::write(project.path().join("go"), "").unwrap();
    pty.expect("Both done.");
    assert_eq!(pty.wait(), Some(0));
    let screen = pty.screen(40, 120);
    assert!(screen.contains("subagent"), "{screen}");
    assert!(screen.contains("completed · 2 turns"), "{screen}");
    // The live lines gave way: none is left on the screen.
    assert!(!screen.contains("· bash"), "{screen}");
}
