//! Clients that survive the daemon: `run`, `sessions --watch`, the board and `acp` reach the
//! daemon again after a `daemon restart` (or a crash: then they start one), follow their
//! sessions from where they were and go on; they give up, saying how to follow the run, only
//! when the daemon stays away (`AGENTCTL_RECONNECT_SECS`). And a `run` interrupted at its
//! permission question gives the terminal back cooked.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{PromptRequest, StopReason};
use protocol::{Event, SessionEvent, SessionId};
use serde_json::{Value, json};
use tests::acp::{agent_text, new_session, with_editor};
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::pty::Pty;
use tests::shown::read_into;
use tests::{Daemon, Home, WAIT, titled};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A model that first reads `notes.txt` (the run shows the call), then holds its next reply
/// before any text until `gate` opens (the daemon's restart cuts it); the resumed run's reply
/// is the answer.
async fn held_then_answered(gate: &Gate, cwd: &Path) -> ModelServer {
    std::fs::write(cwd.join("notes.txt"), "notes\n").unwrap();
    ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "notes.txt"})),
        anthropic::text("never shown").hold_after(2, gate),
        anthropic::text("the whole answer"),
    ])
    .await
}

/// Waits until `run` follows its session, in the middle of its second model call.
async fn mid_reply(run: &mut Run, server: &ModelServer) {
    run.shows("notes.txt").await;
    server.wait_for_requests(2).await;
}

/// `agentctl daemon restart`, the provider's address in its environment (the new daemon takes
/// it from whoever starts it).
async fn restart_daemon(home: &Home, server: &ModelServer, cwd: &Path) {
    let out = home
        .agentctl_with(server, cwd, &["daemon", "restart"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// `agentctl run` with its output read as it comes.
struct Run {
    child: Child,
    /// Stdout and stderr so far, together.
    shown: watch::Receiver<String>,
    readers: [JoinHandle<String>; 2],
}

/// How a `run` ended.
struct RunEnd {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// `agentctl run "think hard"` in `cwd`, with `env` besides the fixture's.
    fn start(home: &Home, server: &ModelServer, cwd: &Path, env: &[(&str, &str)]) -> Run {
        let mut command = home.agentctl_with(server, cwd, &["run", "think hard"]);
        command.envs(env.iter().copied());
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, shown) = watch::channel(String::new());
        let stdout = read_into(child.stdout.take().unwrap(), tx.clone());
        let stderr = read_into(child.stderr.take().unwrap(), tx);
        Run {
            child,
            shown,
            readers: [stdout, stderr],
        }
    }

    /// Waits until the run has shown `what` (it follows its session then).
    async fn shows(&mut self, what: &str) {
        let shown = tokio::time::timeout(WAIT, self.shown.wait_for(|s| s.contains(what)))
            .await
            .is_ok_and(|seen| seen.is_ok());
        if !shown {
            panic!("`{what}` not shown: {}", self.shown.borrow().clone());
        }
    }

    async fn end(self) -> RunEnd {
        let mut child = self.child;
        let status = tokio::time::timeout(WAIT, child.wait())
            .await
            .expect("agentctl ends within the wait")
            .unwrap();
        let [stdout, stderr] = self.readers;
        RunEnd {
            code: status.code(),
            stdout: stdout.await.unwrap(),
            stderr: stderr.await.unwrap(),
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The session `run` named in its last line on stderr: "session ID · agentctl attach ID".
fn footer_session(stderr: &str) -> SessionId {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("session ") && l.contains(" · agentctl attach "))
        .unwrap_or_else(|| panic!("no session line on stderr:\n{stderr}"));
    let (_, id) = line.rsplit_once("agentctl attach ").unwrap();
    SessionId(id.trim().to_string())
}

async fn history(daemon: &Daemon, session: &SessionId) -> Vec<SessionEvent> {
    daemon.client().await.history(session).await.unwrap().1
}

fn count(events: &[SessionEvent], what: impl Fn(&Event) -> bool) -> usize {
    events.iter().filter(|e| what(&e.event)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreground_run_goes_on_across_a_daemon_restart_and_answers_once() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = held_then_answered(&gate, project.path()).await;
    let daemon = Daemon::start();
    let mut run = Run::start(&daemon.home, &server, project.path(), &[]);
    mid_reply(&mut run, &server).await;
    restart_daemon(&daemon.home, &server, project.path()).await;
    gate.release();

    let RunEnd {
        code,
        stdout,
        stderr,
    } = run.end().await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(stdout.matches("the whole answer").count(), 1, "{stdout}");
    assert!(!stdout.contains("never shown"), "{stdout}");
    assert!(
        stderr.contains("agentctl: the daemon restarted; following session"),
        "{stderr}"
    );
    // How to attach goes to stderr, never into the answer on stdout.
    let session = footer_session(&stderr);
    assert!(!stdout.contains("agentctl attach"), "{stdout}");
    let events = history(&daemon, &session).await;
    assert_eq!(count(&events, |e| matches!(e, Event::RunResumed { .. })), 1);
    assert_eq!(
        count(
            &events,
            |e| matches!(e, Event::AssistantMessage { text, .. } if !text.is_empty())
        ),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_on_a_terminal_says_in_one_line_that_it_follows_again() {
    const SIZE: (u16, u16) = (30, 120);
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = held_then_answered(&gate, project.path()).await;
    let daemon = Daemon::start();
    let pty = Pty::agentctl(
        &daemon.home,
        &server,
        project.path(),
        &["run", "think hard"],
        SIZE,
    );
    pty.expect("notes.txt");
    server.wait_for_requests(2).await;
    restart_daemon(&daemon.home, &server, project.path()).await;
    gate.release();

    assert_eq!(pty.wait(), Some(0));
    let screen = pty.screen(SIZE.0, SIZE.1);
    let said: Vec<&str> = screen
        .lines()
        .filter(|l| l.starts_with("agentctl: the daemon"))
        .collect();
    assert_eq!(said.len(), 1, "{screen}");
    assert!(said[0].contains("restarted; following session"), "{screen}");
    assert_eq!(screen.matches("the whole answer").count(), 1, "{screen}");
    assert!(pty.cooked());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_daemon_died_starts_a_new_one_and_goes_on() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = held_then_answered(&gate, project.path()).await;
    let mut daemon = Daemon::start();
    let mut run = Run::start(&daemon.home, &server, project.path(), &[]);
    mid_reply(&mut run, &server).await;
    // Nobody restarts it: the client starts one, as commands do, with the provider's address
    // from its own environment.
    daemon.kill();
    gate.release();

    let RunEnd {
        code,
        stdout,
        stderr,
    } = run.end().await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(stdout.matches("the whole answer").count(), 1, "{stdout}");
    assert!(
        stderr.contains("agentctl: the daemon came back; following session"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_gives_up_when_the_daemon_stays_away_and_says_how_to_follow_it() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = held_then_answered(&gate, project.path()).await;
    let mut daemon = Daemon::start();
    let mut run = Run::start(
        &daemon.home,
        &server,
        project.path(),
        &[("AGENTCTL_RECONNECT_SECS", "1")],
    );
    mid_reply(&mut run, &server).await;
    // A stop on purpose: whoever stopped it is in charge, the client does not start one.
    let stop = daemon.home.run_agentctl(&["daemon", "stop"]);
    assert_eq!(stop.status.code(), Some(0), "{}", text(&stop.stderr));
    gate.release();

    let RunEnd { code, stderr, .. } = run.end().await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("lost the daemon before the run ended"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the daemon did not come back within 1 s"),
        "{stderr}"
    );
    assert!(!daemon.paths().socket.exists(), "no daemon was started");
    daemon.wait_exit();
    daemon.restart();
    let sessions = daemon
        .client()
        .await
        .list_sessions()
        .await
        .unwrap()
        .sessions;
    assert_eq!(sessions.len(), 1);
    assert!(
        stderr.contains(&format!(
            "follow it with `agentctl attach {}`",
            sessions[0].id
        )),
        "{stderr}"
    );
}

/// The JSON lines of a `sessions --watch --json`.
struct Watch {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Watch {
    fn start(home: &Home, server: &ModelServer, cwd: &Path) -> Watch {
        let mut child = home
            .agentctl_with(server, cwd, &["sessions", "--watch", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        Watch {
            child,
            lines: BufReader::new(stdout).lines(),
        }
    }

    /// Lines until one matches `done`; returns that one.
    async fn until(&mut self, done: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = tokio::time::timeout(WAIT, self.lines.next_line())
                .await
                .expect("a line within the wait")
                .unwrap()
                .expect("the watch goes on");
            let value: Value = serde_json::from_str(&line).unwrap();
            if done(&value) {
                return value;
            }
        }
    }

    /// Ends the watch; returns what it said on stderr.
    async fn stop(mut self) -> String {
        self.child.start_kill().unwrap();
        text(&self.child.wait_with_output().await.unwrap().stderr)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_watch_goes_on_across_a_restart_and_shows_what_changed() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Vec::new()).await;
    let daemon = Daemon::start();
    titled(&daemon.client().await, project.path(), "before").await;
    let mut watch = Watch::start(&daemon.home, &server, project.path());
    watch.until(|v| v["ready"] == true).await;

    restart_daemon(&daemon.home, &server, project.path()).await;
    let back = watch.until(|v| v["reconnected"] == true).await;
    assert_eq!(back["sessions"], 1);
    titled(&daemon.client().await, project.path(), "after").await;
    watch.until(|v| v["title"] == "after").await;
    let stderr = watch.stop().await;
    assert!(
        stderr.contains("agentctl: the daemon is back; watching every session again"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_goes_on_across_a_restart_and_shows_the_new_state() {
    const SIZE: (u16, u16) = (24, 100);
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Vec::new()).await;
    let daemon = Daemon::start();
    titled(&daemon.client().await, project.path(), "before").await;
    let board = Pty::agentctl(&daemon.home, &server, project.path(), &["board"], SIZE);
    board.expect_screen(SIZE.0, SIZE.1, "before");

    restart_daemon(&daemon.home, &server, project.path()).await;
    board.expect_screen(
        SIZE.0,
        SIZE.1,
        "the daemon restarted; every session is shown again",
    );
    titled(&daemon.client().await, project.path(), "after").await;
    board.expect_screen(SIZE.0, SIZE.1, "after");
    board.send("q");
    assert_eq!(board.wait(), Some(0));
    assert!(board.cooked(), "the terminal was left in raw mode");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_prompt_is_answered_by_the_run_that_went_on_across_a_restart() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = Arc::new(held_then_answered(&gate, project.path()).await);
    let daemon = Daemon::start();
    let restart = daemon
        .home
        .agentctl_with(&server, project.path(), &["daemon", "restart"]);
    let (model, cwd) = (server.clone(), project.path().to_path_buf());
    let (text, mut child) = with_editor(
        &daemon.home,
        &server,
        project.path(),
        async move |cx, mut got, _| {
            let session = new_session(&cx, &cwd).await;
            let prompt = cx.send_request(PromptRequest::new(session, vec!["think hard".into()]));
            model.wait_for_requests(2).await;
            let mut restart = restart;
            let restarted = restart.output().await.unwrap();
            assert_eq!(restarted.status.code(), Some(0));
            gate.release();
            let answer = prompt.block_task().await.unwrap();
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
            agent_text(&got.drain())
        },
    )
    .await;
    assert!(text.contains("the whole answer"), "{text}");
    let _ = child.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_the_permission_question_leaves_the_terminal_cooked() {
    const SIZE: (u16, u16) = (30, 120);
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "echo never-ran"})),
        anthropic::text("never asked"),
    ])
    .await;
    let daemon = Daemon::start();
    let pty = Pty::agentctl(
        &daemon.home,
        &server,
        project.path(),
        &["run", "run a command"],
        SIZE,
    );
    pty.expect("allow? [y]es / [n]o / [a]lways: ");
    // Ctrl+C cancels the run; the second leaves, whichever comes first.
    pty.send("\x03\x03");
    assert_eq!(pty.wait(), Some(130));
    assert!(pty.cooked(), "the terminal was left in raw mode");
    let screen = pty.screen(SIZE.0, SIZE.1);
    // Every line starts at the left edge: nothing was written with the terminal raw.
    assert!(
        screen.lines().any(|l| l.starts_with("cancelling…")),
        "{screen}"
    );
    assert!(
        screen
            .lines()
            .any(|l| l.starts_with("session ") && l.contains(" · agentctl attach ")),
        "{screen}"
    );
    assert!(!project.path().join("never-ran").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_starting_the_daemon_at_once_all_use_the_one_that_won() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Vec::new()).await;
    let home = Home::new();
    let start = || {
        home.agentctl_with(&server, project.path(), &["daemon", "start"])
            .output()
    };
    let outs = futures::future::join_all((0..4).map(|_| start())).await;
    let pids: Vec<String> = outs
        .iter()
        .map(|out| {
            let out = out.as_ref().unwrap();
            let stdout = text(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
            let (_, rest) = stdout.split_once("(pid ").expect("a pid");
            rest.split(')').next().unwrap().to_string()
        })
        .collect();
    assert!(pids.iter().all(|pid| *pid == pids[0]), "{pids:?}");
}
