//! A chat (or attach) on a terminal survives `daemon restart`: it says so in one line, follows
//! its session again from where it was, and shows the run that went on to its one answer.

use tests::model_server::{Gate, ModelServer, anthropic};
use tests::pty::Pty;
use tests::{Daemon, WAIT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_goes_on_across_a_daemon_restart_and_shows_the_one_answer() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    // The first reply is held after its first line until the restart cuts it; the resumed
    // run's reply is the answer.
    let server = ModelServer::start(vec![
        anthropic::reply()
            .text("warming up\n")
            .build()
            .hold_after(5, &gate),
        anthropic::text("the whole answer"),
    ])
    .await;
    let daemon = Daemon::start();
    let pty = Pty::agentctl(&daemon.home, &server, project.path(), &["chat"], (30, 100));
    pty.expect("[idle");
    pty.send("go\r");
    pty.expect("warming");
    let restart = daemon
        .home
        .agentctl_with(&server, project.path(), &["daemon", "restart"])
        .output();
    let restarted = tokio::time::timeout(WAIT, restart)
        .await
        .expect("the restart ends")
        .unwrap();
    assert_eq!(restarted.status.code(), Some(0), "{restarted:?}");
    gate.release();
    pty.expect("the daemon is back; following the session again");
    pty.expect("the whole answer");
    pty.expect("completed");
    pty.expect("[idle");
    let lines = pty.transcript(30, 100);
    let answers = lines
        .iter()
        .filter(|l| l.contains("the whole answer"))
        .count();
    assert_eq!(answers, 1, "{}", lines.join("\n"));
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}
