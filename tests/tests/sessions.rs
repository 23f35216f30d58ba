//! Sessions: created, listed, subscribed to by several clients, deleted.

use protocol::{ErrorCode, Event, Mode, Reply, Request, SessionId};
use tests::{Daemon, create_session, next_event, subscribe};

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn sessions_are_created_listed_and_deleted_with_agentctl() {
    let daemon = Daemon::start();
    let home = &daemon.home;
    let workdir = tempfile::tempdir().unwrap();
    let cwd = workdir.path().canonicalize().unwrap();

    let created = home
        .agentctl(&["new", "--title", "fix tests"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert!(created.status.success());
    let id = stdout(&created).trim().to_string();
    assert!(SessionId::is_well_formed(&id), "{id}");

    let table = stdout(&home.run_agentctl(&["sessions"]));
    let row = table.lines().find(|l| l.starts_with(&id)).expect("listed");
    assert!(
        row.contains("idle")
            && row.contains(&cwd.display().to_string())
            && row.contains("fix tests"),
        "{row}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&stdout(&home.run_agentctl(&["sessions", "--json"]))).unwrap();
    assert_eq!(json[0]["id"], id.as_str());
    assert_eq!(json[0]["cwd"], cwd.display().to_string());
    assert_eq!(json[0]["state"], "idle");
    assert_eq!(json[0]["turns"], 0);

    let removed = home.run_agentctl(&["rm", &id]);
    assert!(removed.status.success());
    assert!(stdout(&home.run_agentctl(&["sessions"])).contains("no sessions"));

    let again = home.run_agentctl(&["rm", &id]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains(&format!("no session `{id}`")));
}

#[tokio::test]
async fn sessions_are_listed_newest_first() {
    let daemon = Daemon::start();
    let client = daemon.client().await;
    let dir = std::env::temp_dir();
    let first = create_session(&client, &dir).await;
    let second = create_session(&client, &dir).await;
    let list = client.list_sessions().await.unwrap().sessions;
    let ids: Vec<_> = list.iter().map(|s| s.id.clone()).collect();
    assert_eq!(ids, vec![second.id, first.id]);
}

#[tokio::test]
async fn a_session_can_be_named_by_an_unambiguous_prefix() {
    let daemon = Daemon::start();
    let client = daemon.client().await;
    let info = create_session(&client, &std::env::temp_dir()).await;
    let prefix = SessionId(info.id.0[..5].to_string());
    let reply = client
        .request(Request::GetHistory {
            session: prefix,
            from_seq: 0,
        })
        .await
        .unwrap();
    assert!(matches!(reply, Reply::History { session, .. } if session.id == info.id));
}

#[tokio::test]
async fn a_session_needs_an_existing_absolute_directory() {
    let daemon = Daemon::start();
    let client = daemon.client().await;
    for cwd in ["relative/dir", "/no/such/directory/anywhere"] {
        let err = client
            .request(Request::CreateSession(protocol::CreateSession::in_dir(cwd)))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::InvalidRequest), "{err}");
        assert!(err.to_string().contains(cwd), "{err}");
    }
}

#[tokio::test]
async fn two_clients_receive_the_same_events_in_the_same_order() {
    let daemon = Daemon::start();
    let driver = daemon.client().await;
    let session = create_session(&driver, &std::env::temp_dir()).await.id;
    let mut a = daemon.client().await;
    let mut b = daemon.client().await;
    subscribe(&a, &session, 0).await;
    subscribe(&b, &session, 0).await;
    let mut a_events = a.take_incoming().unwrap();
    let mut b_events = b.take_incoming().unwrap();

    let modes = [Mode::Plan, Mode::AcceptEdits, Mode::Default, Mode::Bypass];
    for i in 0..40 {
        let mode = modes[i % modes.len()];
        driver
            .request(Request::SetMode {
                session: session.clone(),
                mode,
            })
            .await
            .unwrap();
    }
    let mut seen_a = Vec::new();
    let mut seen_b = Vec::new();
    for _ in 0..40 {
        seen_a.push(next_event(&mut a_events).await);
        seen_b.push(next_event(&mut b_events).await);
    }
    assert_eq!(seen_a, seen_b);
    let seqs: Vec<u64> = seen_a.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=40).collect::<Vec<_>>(),
        "strictly increasing, no gaps"
    );
    assert_eq!(seen_a[0].event, Event::ModeChanged { mode: Mode::Plan });
}

#[tokio::test]
async fn subscribe_replays_after_from_seq_then_streams_live() {
    let daemon = Daemon::start();
    let driver = daemon.client().await;
    let session = create_session(&driver, &std::env::temp_dir()).await.id;
    for mode in [Mode::Plan, Mode::AcceptEdits, Mode::Default] {
        driver
            .request(Request::SetMode {
                session: session.clone(),
                mode,
            })
            .await
            .unwrap();
    }
    let mut late = daemon.client().await;
    let info = subscribe(&late, &session, 1).await;
    assert_eq!(info.last_seq, 3);
    assert_eq!(info.mode, Mode::Default);
    let mut incoming = late.take_incoming().unwrap();
    driver
        .request(Request::SetMode {
            session: session.clone(),
            mode: Mode::Plan,
        })
        .await
        .unwrap();
    let mut seqs = Vec::new();
    for _ in 0..3 {
        seqs.push(next_event(&mut incoming).await.seq);
    }
    assert_eq!(seqs, vec![2, 3, 4], "replayed 2 and 3, then live 4");
}

#[tokio::test]
async fn a_client_that_stops_reading_is_told_it_lagged_and_resumes_without_loss() {
    use agentctl::client::frames as frame;
    use protocol::{ClientFrame, Hello, PROTOCOL_VERSION, RequestId, ServerFrame};
    use tokio::net::UnixStream;

    let daemon = Daemon::start();
    let driver = daemon.client().await;
    let session = create_session(&driver, &std::env::temp_dir()).await.id;

    // A raw client subscribes, then reads nothing while thousands of events happen.
    let mut slow = UnixStream::connect(&daemon.paths().socket).await.unwrap();
    let hello = ClientFrame::Hello(Hello {
        protocol_version: PROTOCOL_VERSION,
        client: "slow".into(),
    });
    frame::write_frame(&mut slow, &hello).await.unwrap();
    let request = ClientFrame::Request {
        id: RequestId(1),
        request: Request::Subscribe {
            session: session.clone(),
            from_seq: 0,
        },
    };
    frame::write_frame(&mut slow, &request).await.unwrap();
    let total = 5000u64;
    for i in 0..total {
        let mode = if i % 2 == 0 {
            Mode::Plan
        } else {
            Mode::Default
        };
        driver
            .request(Request::SetMode {
                session: session.clone(),
                mode,
            })
            .await
            .unwrap();
    }

    // Now it reads: events in order up to some seq, then the lag notice.
    let mut last = 0;
    let lagged_at = loop {
        match frame::read_frame::<ServerFrame, _>(&mut slow)
            .await
            .unwrap()
            .unwrap()
        {
            ServerFrame::Welcome(_)
            | ServerFrame::Reply { .. }
            | ServerFrame::ReplayDone { .. } => {}
            ServerFrame::Event(event) => {
                assert_eq!(event.seq, last + 1);
                last = event.seq;
            }
            ServerFrame::Lagged {
                session: lagged,
                last_seq,
            } => {
                assert_eq!(lagged, session);
                break last_seq;
            }
            ServerFrame::Error(info) => panic!("{info:?}"),
            other @ (ServerFrame::Summary(_)
            | ServerFrame::SummariesReady { .. }
            | ServerFrame::SummaryRemoved { .. }) => panic!("not asked for: {other:?}"),
        }
    };
    assert!(lagged_at < total, "the slow client lagged before the end");
    assert!(last <= lagged_at);

    // Resubscribing from the last seq received delivers the rest without a gap.
    let mut resumed = daemon.client().await;
    subscribe(&resumed, &session, last).await;
    let mut incoming = resumed.take_incoming().unwrap();
    for expected in last + 1..=total {
        assert_eq!(next_event(&mut incoming).await.seq, expected);
    }
}

#[tokio::test]
async fn deleting_a_session_tells_its_subscribers() {
    let daemon = Daemon::start();
    let driver = daemon.client().await;
    let session = create_session(&driver, &std::env::temp_dir()).await.id;
    let mut watcher = daemon.client().await;
    subscribe(&watcher, &session, 0).await;
    let mut incoming = watcher.take_incoming().unwrap();
    driver
        .request(Request::DeleteSession {
            session: session.clone(),
            force: false,
        })
        .await
        .unwrap();
    let event = next_event(&mut incoming).await;
    assert_eq!(event.event, Event::SessionDeleted);
    let err = driver
        .request(Request::GetHistory {
            session,
            from_seq: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::UnknownSession));
}
