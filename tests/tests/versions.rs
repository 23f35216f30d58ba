//! Version skew between `agentctl` and a long-running daemon: the client says so with the fix,
//! and `agentctl daemon restart` switches the daemon over, keeping sessions and refusing to cut
//! runs short unless forced.

use agentctl::client::frames as frame;
use protocol::{ClientFrame, PROTOCOL_VERSION, Reply, ServerFrame, Welcome};
use serde_json::json;
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::{Daemon, run_options, session_in, start_run};

/// A daemon of another version: answers the handshake and then every request with an empty
/// session list.
async fn fake_daemon(listener: tokio::net::UnixListener, version: &str) {
    let (mut stream, _) = listener.accept().await.unwrap();
    let Ok(Some(ClientFrame::Hello(_))) = frame::read_frame(&mut stream).await else {
        return;
    };
    let welcome = ServerFrame::Welcome(Welcome {
        protocol_version: PROTOCOL_VERSION,
        daemon_version: version.to_string(),
        pid: 1,
    });
    frame::write_frame(&mut stream, &welcome).await.unwrap();
    while let Ok(Some(ClientFrame::Request { id, .. })) = frame::read_frame(&mut stream).await {
        let reply = ServerFrame::Reply {
            id,
            result: Ok(Reply::Sessions {
                sessions: Vec::new(),
                next: None,
                unreadable: Vec::new(),
            }),
        };
        frame::write_frame(&mut stream, &reply).await.unwrap();
    }
}

#[tokio::test]
async fn a_daemon_of_another_version_is_named_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("agentd.sock");
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    let fake = tokio::spawn(fake_daemon(listener, "0.0.9"));
    let home = tests::Home::new();
    let output = tokio::process::Command::from(home.agentctl(&["sessions"]))
        .env("AGENTD_SOCKET", &socket)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the running daemon is agentd 0.0.9, this is agentctl {}",
            env!("CARGO_PKG_VERSION")
        )) && stderr.contains("agentctl daemon restart"),
        "{stderr}"
    );
    fake.await.unwrap();
}

#[tokio::test]
async fn a_restart_keeps_sessions_and_refuses_to_cut_runs_short_unless_forced() {
    let project = tempfile::tempdir().unwrap();
    let held = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .text("a long answer")
            .build()
            .hold_after(4, &held),
    ])
    .await;
    let daemon = Daemon::start();
    let old_pid = daemon.pid();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "think", run_options(&server)).await;
    tests::events_until(&mut incoming, |e| {
        matches!(e, protocol::Event::TextDelta { .. })
    })
    .await;

    let refused = daemon.home.run_agentctl(&["daemon", "restart"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("1 of the daemon's runs are going") && stderr.contains("--force"),
        "{stderr}"
    );
    let status = daemon.home.run_agentctl(&["daemon", "status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status
            .lines()
            .any(|l| l.split_whitespace().eq(["pid", &old_pid.to_string()])),
        "the daemon was stopped anyway: {status}"
    );

    drop(client);
    let forced = daemon.home.run_agentctl(&["daemon", "restart", "--force"]);
    let stdout = String::from_utf8_lossy(&forced.stdout);
    assert_eq!(
        forced.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&forced.stderr)
    );
    assert!(
        stdout.contains(&format!("agentd restarted (pid {old_pid} → ")),
        "{stdout}"
    );

    // The session is still there, its interrupted run closed as after a crash.
    let shown = daemon.home.run_agentctl(&["show", &session.0, "--json"]);
    let text = String::from_utf8_lossy(&shown.stdout);
    let finished: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "run_finished")
        .collect();
    assert_eq!(finished.len(), 1, "{text}");
    assert_eq!(finished[0]["stop_reason"], json!("error"));
    assert_eq!(
        finished[0]["error"],
        json!("the daemon stopped during this run")
    );
    held.release();
}
