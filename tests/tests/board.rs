//! `agentctl board` on a real terminal (docs/architecture.md#the-board): sessions in their groups
//! with what they ask or do, keys that answer, cancel, filter and attach, the bell for a new
//! request, the terminal given back.

use std::path::Path;

use agentctl::client::{Client, Incoming};
use protocol::{Event, Reply, Request, SessionId};
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::pty::Pty;
use tests::{Daemon, asking_options, next_event, run_options, start_run, titled, until_event_of};
use tokio::sync::mpsc::UnboundedReceiver;

const SIZE: (u16, u16) = (24, 80);

fn board(
    daemon: &Daemon,
    server: &ModelServer,
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Pty {
    let mut command = daemon.home.agentctl_against(server, cwd, args);
    command.env("TERM", "xterm-256color");
    for (k, v) in env {
        command.env(k, v);
    }
    Pty::spawn(command, SIZE.0, SIZE.1)
}

/// Three sessions: one asking to run a command, one running a long command, one done.
struct Three {
    daemon: Daemon,
    server: ModelServer,
    project: tempfile::TempDir,
    client: Client,
    incoming: UnboundedReceiver<Incoming>,
    asker: SessionId,
    runner: SessionId,
    finished: SessionId,
}

async fn three() -> Three {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Vec::new()).await;
    server.route(
        "ASK-PROMPT",
        vec![
            anthropic::tool("bash", json!({"command": "echo answered > answered.txt"})),
            anthropic::text("asked and done"),
        ],
    );
    server.route(
        "RUN-PROMPT",
        vec![
            anthropic::tool("bash", json!({"command": "sleep 30"})),
            anthropic::text("slept"),
        ],
    );
    server.route("DONE-PROMPT", vec![anthropic::text("all done here")]);
    let daemon = Daemon::start();
    let mut client = daemon.client().await;
    let asker = titled(&client, project.path(), "asker").await;
    let runner = titled(&client, project.path(), "runner").await;
    let finished = titled(&client, project.path(), "finished").await;
    let mut incoming = client.take_incoming().unwrap();
    start_run(&client, &finished, "DONE-PROMPT", run_options(&server)).await;
    until_event_of(&mut incoming, &finished, |e| {
        matches!(e, Event::RunFinished { .. })
    })
    .await;
    start_run(&client, &runner, "RUN-PROMPT", run_options(&server)).await;
    until_event_of(
        &mut incoming,
        &runner,
        |e| matches!(e, Event::ToolCall(c) if c.name == "bash"),
    )
    .await;
    start_run(&client, &asker, "ASK-PROMPT", asking_options(&server)).await;
    until_event_of(&mut incoming, &asker, |e| {
        matches!(e, Event::PermissionRequested { .. })
    })
    .await;
    Three {
        daemon,
        server,
        project,
        client,
        incoming,
        asker,
        runner,
        finished,
    }
}

/// The screen's line that shows `text`.
fn line_with<'a>(screen: &'a str, text: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(text))
        .unwrap_or_else(|| panic!("no line with `{text}`:\n{screen}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_groups_sessions_and_its_keys_answer_cancel_filter_and_attach() {
    let mut t = three().await;
    let (rows, cols) = SIZE;
    let pty = board(&t.daemon, &t.server, t.project.path(), &["board"], &[]);
    let screen = pty.expect_screen(rows, cols, "DONE (1)");
    assert!(screen.contains("NEEDS YOU (1)"), "{screen}");
    assert!(screen.contains("WORKING (1)"), "{screen}");
    assert!(
        line_with(&screen, "asker").contains("asks: bash run `echo answered > answered.txt`"),
        "{screen}"
    );
    assert!(
        line_with(&screen, "runner").contains("bash sleep 30"),
        "{screen}"
    );
    assert!(
        line_with(&screen, "finished").contains("completed"),
        "{screen}"
    );
    // It opens with the request selected.
    assert!(line_with(&screen, "asker").contains('▶'), "{screen}");

    // Keys typed within 300 ms of a question are not its answer: this waits the guard out.
    std::thread::sleep(std::time::Duration::from_millis(350));
    pty.send("y");
    until_event_of(&mut t.incoming, &t.asker, |e| {
        matches!(e, Event::RunFinished { .. })
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(t.project.path().join("answered.txt")).unwrap(),
        "answered\n"
    );
    let screen = pty.expect_screen(rows, cols, "DONE (2)");
    assert!(!screen.contains("NEEDS YOU"), "{screen}");

    // `/` filters; `c` cancels the selected session's run.
    pty.send("/runner\r");
    let screen = pty.expect_screen(rows, cols, "filter: runner");
    assert!(!screen.contains("asker"), "{screen}");
    pty.send("c");
    until_event_of(&mut t.incoming, &t.runner, |e| {
        matches!(
            e,
            Event::RunFinished {
                stop_reason: protocol::StopReason::Aborted,
                ..
            }
        )
    })
    .await;
    pty.expect_screen(rows, cols, "aborted");

    // Enter attaches with the chat view; Ctrl+D comes back to the board.
    // A new `/` starts a new filter.
    pty.send("/finished\r");
    pty.expect_screen(rows, cols, "filter: finished");
    pty.send("\r");
    pty.expect("all done here");
    pty.send("\x04");
    pty.wait_screen(rows, cols, |s| {
        s.alternate_screen() && s.contents().contains("agentd board")
    })
    .unwrap_or_else(|s| panic!("the board did not come back:\n{s}"));

    // `q` gives the terminal back as it was.
    pty.send("q");
    assert_eq!(pty.wait(), Some(0));
    let terminal = pty.terminal(rows, cols);
    assert!(!terminal.screen().alternate_screen());
    assert!(!terminal.screen().hide_cursor());
    assert!(pty.cooked(), "the terminal was left in raw mode");
    let _ = (&t.finished, &t.client);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_starts_asking_moves_to_needs_you_and_rings_the_bell() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Vec::new()).await;
    server.route(
        "LATE-ASK",
        vec![
            anthropic::tool("bash", json!({"command": "echo late"})),
            anthropic::text("ok"),
        ],
    );
    let daemon = Daemon::start();
    let mut client = daemon.client().await;
    let late = titled(&client, project.path(), "latecomer").await;
    let mut incoming = client.take_incoming().unwrap();
    let (rows, cols) = SIZE;
    let loud = board(
        &daemon,
        &server,
        project.path(),
        &["board"],
        &[("TERM_PROGRAM", "WezTerm")],
    );
    let quiet = board(
        &daemon,
        &server,
        project.path(),
        &["board", "--quiet"],
        &[("TERM_PROGRAM", "WezTerm")],
    );
    loud.expect_screen(rows, cols, "DONE (1)");
    quiet.expect_screen(rows, cols, "DONE (1)");
    assert!(
        !loud.raw().contains(&0x07),
        "the bell rang before anything asked"
    );

    start_run(&client, &late, "LATE-ASK", asking_options(&server)).await;
    until_event_of(&mut incoming, &late, |e| {
        matches!(e, Event::PermissionRequested { .. })
    })
    .await;
    let screen = loud.expect_screen(rows, cols, "NEEDS YOU (1)");
    assert!(
        line_with(&screen, "latecomer").contains("asks: bash run `echo late`"),
        "{screen}"
    );
    let raw = loud.raw();
    let notice = b"\x07\x1b]9;agentd: latecomer needs you\x07";
    assert!(
        raw.windows(notice.len()).any(|w| w == notice),
        "no bell and notification:\n{}",
        String::from_utf8_lossy(&raw)
    );
    quiet.expect_screen(rows, cols, "NEEDS YOU (1)");
    assert!(!quiet.raw().contains(&0x07), "--quiet rang the bell");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_80_by_24_long_lines_are_cut_not_wrapped_a_resize_redraws_and_colours_follow_no_color() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Vec::new()).await;
    let long = format!("echo {} TAILMARK", "x".repeat(90));
    server.route(
        "LONG-ASK",
        vec![
            anthropic::tool("bash", json!({"command": long})),
            anthropic::text("ok"),
        ],
    );
    let daemon = Daemon::start();
    let mut client = daemon.client().await;
    let title = format!("a title far too long for any column {}", "y".repeat(100));
    let session = titled(&client, project.path(), &title).await;
    let mut incoming = client.take_incoming().unwrap();
    start_run(&client, &session, "LONG-ASK", asking_options(&server)).await;
    until_event_of(&mut incoming, &session, |e| {
        matches!(e, Event::PermissionRequested { .. })
    })
    .await;
    let (rows, cols) = SIZE;

    // The fixture sets NO_COLOR.
    let plain = board(&daemon, &server, project.path(), &["board"], &[]);
    let screen = plain.expect_screen(rows, cols, "NEEDS YOU (1)");
    assert!(!screen.contains("TAILMARK"), "{screen}");
    assert!(line_with(&screen, "a title far").contains('…'), "{screen}");
    let terminal = plain.terminal(rows, cols);
    assert!(
        (0..rows).all(|r| !terminal.screen().row_wrapped(r)),
        "{screen}"
    );
    let raw = plain.raw();
    assert!(
        !raw.windows(6).any(|w| w == b"\x1b[38;5"),
        "colours under NO_COLOR"
    );

    // Wider, the board redraws and shows more of the line.
    plain.resize(rows, 200);
    let screen = plain
        .wait_screen(rows, 200, |s| s.contents().contains("TAILMARK"))
        .unwrap_or_else(|s| {
            panic!(
                "{s}\nraw: {}",
                String::from_utf8_lossy(&plain.raw()).escape_debug()
            )
        });
    assert!(screen.contains("a title far too long"), "{screen}");
    plain.send("q");
    assert_eq!(plain.wait(), Some(0));

    let colored = board(
        &daemon,
        &server,
        project.path(),
        &["--color", "always", "board"],
        &[],
    );
    colored.expect_screen(rows, cols, "NEEDS YOU (1)");
    let raw = colored.raw();
    assert!(
        raw.windows(6).any(|w| w == b"\x1b[38;5"),
        "no colours with --color always:\n{}",
        String::from_utf8_lossy(&raw).escape_debug()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_ends_the_board_and_gives_the_terminal_back() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Vec::new()).await;
    let daemon = Daemon::start();
    let (rows, cols) = SIZE;
    let pty = board(&daemon, &server, project.path(), &["board"], &[]);
    pty.expect_screen(rows, cols, "no sessions");
    // SAFETY: kill sends a signal to a child of ours.
    unsafe { libc::kill(pty.pid() as i32, libc::SIGTERM) };
    assert_eq!(pty.wait(), Some(143));
    assert!(!pty.terminal(rows, cols).screen().alternate_screen());
    assert!(pty.cooked(), "the terminal was left in raw mode");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s_steers_the_selected_run_and_d_deletes_only_when_confirmed() {
    let mut t = three().await;
    let (rows, cols) = SIZE;
    let pty = board(&t.daemon, &t.server, t.project.path(), &["board"], &[]);
    pty.expect_screen(rows, cols, "DONE (1)");
    pty.send("/runner\r");
    pty.expect_screen(rows, cols, "filter: runner");
    pty.send("sfaster please\r");
    until_event_of(&mut t.incoming, &t.runner, |e| {
        matches!(e, Event::QueueChanged { steer, .. } if steer.iter().any(|s| s == "faster please"))
    })
    .await;
    pty.expect_screen(rows, cols, "steered");

    pty.send("/finished\r");
    pty.expect_screen(rows, cols, "filter: finished");
    pty.send("d");
    pty.expect_screen(rows, cols, "and its history? y / n");
    pty.send("n");
    pty.expect_screen(rows, cols, "not deleted");
    pty.send("d");
    pty.expect_screen(rows, cols, "and its history? y / n");
    pty.send("y");
    pty.expect_screen(rows, cols, "no session matches the filter");
    let Reply::Sessions { sessions, .. } = t
        .client
        .request(Request::ListSessions { after: None })
        .await
        .unwrap()
    else {
        panic!()
    };
    assert!(sessions.iter().all(|s| s.id != t.finished));
    assert!(sessions.iter().any(|s| s.id == t.asker));
    pty.send("q");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_that_asks_sits_under_its_parent_and_is_answered_from_there() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Vec::new()).await;
    server.route(
        "PARENT-GO",
        vec![
            anthropic::tool(
                "task",
                json!({"description": "child work", "prompt": "CHILD-ASK: write it"}),
            ),
            anthropic::text("parent done"),
        ],
    );
    server.route(
        "CHILD-ASK",
        vec![
            anthropic::tool("bash", json!({"command": "echo child > child.txt"})),
            anthropic::text("written"),
        ],
    );
    let daemon = Daemon::start();
    let mut client = daemon.client().await;
    let parent = titled(&client, project.path(), "the-parent").await;
    let mut incoming = client.take_incoming().unwrap();
    start_run(&client, &parent, "PARENT-GO", asking_options(&server)).await;
    let child = loop {
        let event = next_event(&mut incoming).await;
        if let Event::PermissionRequested {
            session: Some(child),
            ..
        } = event.event
        {
            break child;
        }
    };
    let (rows, cols) = SIZE;
    let pty = board(&daemon, &server, project.path(), &["board"], &[]);
    let screen = pty.expect_screen(rows, cols, "NEEDS YOU (1)");
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("the-parent"))
        .unwrap_or_else(|| panic!("{screen}"));
    let short = child.as_str().get(..8).unwrap();
    // After the selection marker's two columns, two more of indent.
    let child_line: String = lines[at + 1].chars().skip(2).collect();
    assert!(
        child_line.starts_with(&format!("  {short}")),
        "the child is not indented under its parent:\n{screen}"
    );
    assert!(lines[at + 1].contains("asks: bash"), "{screen}");

    // The parent's row answers the request its child asked.
    pty.send("k");
    pty.wait_screen(rows, cols, |s| {
        s.contents()
            .lines()
            .any(|l| l.starts_with('▶') && l.contains("the-parent"))
    })
    .unwrap_or_else(|s| panic!("the parent is not selected:\n{s}"));
    std::thread::sleep(std::time::Duration::from_millis(350));
    pty.send("y");
    until_event_of(&mut incoming, &parent, |e| {
        matches!(e, Event::RunFinished { .. })
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(project.path().join("child.txt")).unwrap(),
        "child\n"
    );
    pty.send("q");
    assert_eq!(pty.wait(), Some(0));
}
