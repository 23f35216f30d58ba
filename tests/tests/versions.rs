//! Version skew between `agentctl` and a long-running daemon: the client says so with the fix,
//! and `agentctl daemon restart` switches the daemon over, keeping sessions and refusing to cut
//! runs short unless forced.

use agentctl::client::frames as frame;
use protocol::{ClientFrame, PROTOCOL_VERSION, Reply, ServerFrame, Welcome};
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
async fn a_restart_during_a_run_keeps_the_session_and_the_run_goes_on() {
    restart_during_a_run(false).await;
}

#[tokio::test]
async fn a_client_still_attached_through_a_restart_does_not_disturb_the_run() {
    // Its connection ends with the old daemon; the run is resumed once, in the new one.
    restart_during_a_run(true).await;
}

/// Restarts the daemon while a run streams; `stay` keeps the first client connected through
/// the restart.
async fn restart_during_a_run(stay: bool) {
    let project = tempfile::tempdir().unwrap();
    let held = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .text("a long answer")
            .build()
            .hold_after(4, &held),
        anthropic::text("the whole answer"),
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
    let first = stay.then_some(client);

    // The new daemon takes the provider from the environment of whoever starts it.
    let restarted = daemon
        .home
        .agentctl(&["daemon", "restart"])
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .output()
        .unwrap();
    drop(first);
    let stdout = String::from_utf8_lossy(&restarted.stdout);
    assert_eq!(
        restarted.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&restarted.stderr)
    );
    assert!(
        stdout.contains("1 run(s) going: they go on in the new daemon"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("agentd restarted (pid {old_pid} → ")),
        "{stdout}"
    );
    held.release();

    // The session is still there and its run finishes in the new daemon, resumed once.
    let client = agentctl::client::Client::connect(&daemon.paths().socket, "test")
        .await
        .unwrap();
    let mut client = client;
    tests::subscribe(&client, &session, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    let events = tests::until_finished(&mut incoming).await;
    let resumed = events
        .iter()
        .filter(|e| {
            matches!(
                e.event,
                protocol::Event::RunResumed {
                    reason: protocol::ResumeReason::Restart,
                    ..
                }
            )
        })
        .count();
    assert_eq!(resumed, 1, "{events:#?}");
    let (stop, error) = tests::stop_and_error(&events);
    assert_eq!(stop, protocol::StopReason::Completed, "{error:?}");
    assert_eq!(server.received().len(), 2, "one request in each daemon");
}

/// The README says which protocol version the code speaks ("This is protocol version N"), so
/// that a reader knows which clients and daemons can talk to each other: every number it gives
/// after "protocol version" is the crate's.
#[test]
fn the_readme_states_the_protocol_version_the_code_speaks() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    // Lines may wrap anywhere: compare words, not lines.
    let words: Vec<&str> = readme.split_whitespace().collect();
    let stated: Vec<String> = words
        .windows(3)
        .filter(|w| w[0] == "protocol" && w[1] == "version")
        .map(|w| w[2].chars().take_while(char::is_ascii_digit).collect())
        .filter(|number: &String| !number.is_empty())
        .collect();
    assert!(
        !stated.is_empty(),
        "README.md does not say which protocol version the code speaks"
    );
    for number in stated {
        assert_eq!(
            number,
            PROTOCOL_VERSION.to_string(),
            "README.md says protocol version {number}; the code speaks {PROTOCOL_VERSION}"
        );
    }
}
