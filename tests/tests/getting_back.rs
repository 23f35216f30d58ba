//! Getting back to a session without its id: `-` and `--last` name the latest session of the
//! current directory, `resume` offers them newest first (a list to pick from on a terminal),
//! and `sessions` shows the number of a request waiting for an answer.

use std::path::Path;

use protocol::Event;
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::pty::Pty;
use tests::{Daemon, asking_options, run_options, start_run, titled, until_event_of};

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `agentctl ARGS` in `cwd` against `server`, to completion, with stdin closed.
fn agentctl(
    daemon: &Daemon,
    server: &ModelServer,
    cwd: &Path,
    args: &[&str],
) -> std::process::Output {
    daemon
        .home
        .agentctl_against(server, cwd, args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("agentctl runs")
}

/// The first line of `agentctl show`: "session ID · …".
fn shown_session(output: &std::process::Output) -> String {
    let text = stdout(output);
    let first = text.lines().next().unwrap_or_default().to_string();
    first
        .strip_prefix("session ")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no session line in {text}\n{}", stderr(output)))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_and_diff_take_dash_and_last_for_the_latest_session_here() {
    let daemon = Daemon::start();
    let server = ModelServer::start(Vec::new()).await;
    server.route(
        "WRITE-PROMPT",
        vec![
            anthropic::tool("write", json!({"path": "notes.txt", "content": "kept\n"})),
            anthropic::text("written"),
        ],
    );
    let project = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let mut client = daemon.client().await;
    // Created first, but the last to do something.
    let worked = titled(&client, project.path(), "worked").await;
    let _newer = titled(&client, project.path(), "created later").await;
    let mut incoming = client.take_incoming().unwrap();
    start_run(&client, &worked, "WRITE-PROMPT", run_options(&server)).await;
    until_event_of(&mut incoming, &worked, |e| {
        matches!(e, Event::RunFinished { .. })
    })
    .await;
    // The latest session of another directory is not this one's.
    let _other = titled(&client, elsewhere.path(), "elsewhere").await;

    for args in [["show", "-"], ["show", "--last"]] {
        let shown = agentctl(&daemon, &server, project.path(), &args);
        assert!(shown.status.success(), "{}", stderr(&shown));
        assert_eq!(shown_session(&shown), worked.as_str(), "{args:?}");
    }
    for args in [["diff", "-"], ["diff", "--last"]] {
        let diff = agentctl(&daemon, &server, project.path(), &args);
        assert!(diff.status.success(), "{}", stderr(&diff));
        assert!(
            stdout(&diff).contains("+kept"),
            "{args:?}: {}",
            stdout(&diff)
        );
    }

    // A directory without sessions says so, and how to go on.
    let empty = tempfile::tempdir().unwrap();
    let none = agentctl(&daemon, &server, empty.path(), &["show", "-"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(stderr(&none).contains("no session in"), "{}", stderr(&none));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_without_a_terminal_lists_the_sessions_here_newest_first() {
    let daemon = Daemon::start();
    let server = ModelServer::start(vec![anthropic::text("done")]).await;
    let project = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let mut client = daemon.client().await;
    let older = titled(&client, project.path(), "the older one").await;
    let _newer = titled(&client, project.path(), "the newer one").await;
    let _other = titled(&client, elsewhere.path(), "another directory").await;
    let mut incoming = client.take_incoming().unwrap();
    // The older session becomes the latest by its activity.
    start_run(&client, &older, "go", run_options(&server)).await;
    until_event_of(&mut incoming, &older, |e| {
        matches!(e, Event::RunFinished { .. })
    })
    .await;

    let listed = agentctl(&daemon, &server, project.path(), &["resume"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let text = stdout(&listed);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains("TITLE") && lines[0].contains("MODEL"),
        "{text}"
    );
    assert!(lines[1].starts_with(older.as_str()), "{text}");
    assert!(
        lines[1].contains("the older one") && lines[1].contains("sonnet-4-5"),
        "{text}"
    );
    assert!(lines[2].contains("the newer one"), "{text}");
    assert!(!text.contains("another directory"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_on_a_terminal_attaches_the_session_picked() {
    let daemon = Daemon::start();
    let server = ModelServer::start(Vec::new()).await;
    let project = tempfile::tempdir().unwrap();
    let client = daemon.client().await;
    let first = titled(&client, project.path(), "first-session").await;
    let _second = titled(&client, project.path(), "second-session").await;

    let (rows, cols) = (24, 100);
    let pty = Pty::agentctl(
        &daemon.home,
        &server,
        project.path(),
        &["resume"],
        (rows, cols),
    );
    let screen = pty.expect_screen(rows, cols, "first-session");
    let second_at = screen.find("second-session").expect("both are offered");
    assert!(
        second_at < screen.find("first-session").unwrap(),
        "{screen}"
    );
    // Down to the older one, and Enter.
    pty.send("\x1b[B\r");
    pty.expect(&format!("session {first}"));
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_shows_the_number_of_a_pending_request_to_approve() {
    let daemon = Daemon::start();
    let server = ModelServer::start(Vec::new()).await;
    server.route(
        "ASK-PROMPT",
        vec![
            anthropic::tool("bash", json!({"command": "echo answered > answered.txt"})),
            anthropic::text("asked and done"),
        ],
    );
    let project = tempfile::tempdir().unwrap();
    let mut client = daemon.client().await;
    let asker = titled(&client, project.path(), "asker").await;
    let mut incoming = client.take_incoming().unwrap();
    start_run(&client, &asker, "ASK-PROMPT", asking_options(&server)).await;
    until_event_of(&mut incoming, &asker, |e| {
        matches!(e, Event::PermissionRequested { .. })
    })
    .await;

    let table = stdout(&agentctl(&daemon, &server, project.path(), &["sessions"]));
    let line = table
        .lines()
        .find(|l| l.contains("awaiting approval #1"))
        .unwrap_or_else(|| panic!("no pending request shown:\n{table}"));
    assert!(line.starts_with(asker.as_str()), "{line}");
    assert!(
        line.contains("#1: bash run `echo answered > answered.txt`"),
        "{line}"
    );
    assert!(
        line.contains(&format!("agentctl approve {asker} 1")),
        "{line}"
    );

    let json: serde_json::Value = serde_json::from_str(&stdout(&agentctl(
        &daemon,
        &server,
        project.path(),
        &["sessions", "--json"],
    )))
    .unwrap();
    assert_eq!(json[0]["pending"][0]["request"], 1, "{json}");
    assert_eq!(json[0]["pending"][0]["tool"], "bash", "{json}");

    // The number as shown, for the latest session here.
    let approved = agentctl(
        &daemon,
        &server,
        project.path(),
        &["approve", "--last", "1"],
    );
    assert!(approved.status.success(), "{}", stderr(&approved));
    until_event_of(&mut incoming, &asker, |e| {
        matches!(e, Event::RunFinished { .. })
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(project.path().join("answered.txt")).unwrap(),
        "answered\n"
    );
}
