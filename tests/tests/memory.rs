//! Memory follows what is live (docs/architecture.md#state-on-disk): idle sessions are unloaded, at
//! most `max_loaded_sessions` idle ones stay loaded, and a session that loads from a large log
//! delays only its own clients.

use agentd::store::{Meta, Record, SessionStore};
use protocol::{Event, Reply, Request, SessionId};
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, create_session, run_options, start_run, subscribe, until_finished};

async fn status(client: &agentctl::client::Client) -> protocol::DaemonStatus {
    match client.request(Request::Status).await.unwrap() {
        Reply::Status(status) => status,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn hundreds_of_used_sessions_stay_within_a_memory_bound_and_all_still_show_and_continue() {
    const SESSIONS: usize = 300;
    const PROMPT: usize = 200_000;
    let home = Home::with_config("durability = \"flush\"\nmax_loaded_sessions = 16\n");
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start_in(home);
    let mut client = daemon.client().await;
    let mut incoming = client.take_incoming().unwrap();
    let mut ids = Vec::new();
    for i in 0..SESSIONS {
        server.push(vec![anthropic::text(&format!("answer {i}"))]);
        let session = create_session(&client, project.path()).await.id;
        subscribe(&client, &session, 0).await;
        let prompt = format!("{i:05}{}", "x".repeat(PROMPT));
        start_run(&client, &session, &prompt, run_options(&server)).await;
        until_finished(&mut incoming).await;
        client
            .request(Request::Unsubscribe {
                session: session.clone(),
            })
            .await
            .unwrap();
        ids.push(session);
    }
    let used = status(&client).await;
    assert!(used.loaded <= 17, "{} sessions loaded", used.loaded);
    let rss = used.rss_bytes.unwrap_or(0);
    assert!(
        rss < 96 * 1024 * 1024,
        "{} MiB resident after {SESSIONS} sessions of {} kB",
        rss >> 20,
        PROMPT / 1000
    );
    // Every one of them still shows its history and takes another run.
    for (i, session) in ids.iter().enumerate() {
        let (_, history) = client.history(session).await.unwrap();
        let prompt = history.iter().find_map(|e| match &e.event {
            Event::UserMessage { text, .. } => Some(text.clone()),
            _ => None,
        });
        assert_eq!(
            prompt.map(|p| (p.len(), p.get(..5).unwrap_or_default().to_string())),
            Some((PROMPT + 5, format!("{i:05}")))
        );
        server.push(vec![anthropic::text("again")]);
        subscribe(&client, session, u64::MAX).await;
        start_run(&client, session, "continue", run_options(&server)).await;
        let events = until_finished(&mut incoming).await;
        assert_eq!(
            tests::stop_and_error(&events).0,
            protocol::StopReason::Completed
        );
        client
            .request(Request::Unsubscribe {
                session: session.clone(),
            })
            .await
            .unwrap();
    }
    assert!(status(&client).await.loaded <= 17);
}

#[tokio::test]
async fn an_idle_session_is_unloaded_and_loads_again_on_use() {
    let home = Home::with_config("session_idle_unload_secs = 1\n");
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text("one"), anthropic::text("two")]).await;
    let daemon = Daemon::start_in(home);
    let mut client = daemon.client().await;
    let mut incoming = client.take_incoming().unwrap();
    let session = create_session(&client, project.path()).await.id;
    subscribe(&client, &session, 0).await;
    start_run(&client, &session, "first", run_options(&server)).await;
    until_finished(&mut incoming).await;
    // Subscribed: it stays loaded however long it is idle.
    assert_eq!(status(&client).await.loaded, 1);
    client
        .request(Request::Unsubscribe {
            session: session.clone(),
        })
        .await
        .unwrap();
    // Nothing runs and nobody listens: within a couple of sweeps it is unloaded.
    let unloaded = async {
        while status(&client).await.loaded > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(tests::WAIT, unloaded)
        .await
        .expect("the idle session is unloaded");
    // Nothing was lost: it loads again, shows its history and runs.
    let (_, history) = client.history(&session).await.unwrap();
    assert!(
        history
            .iter()
            .any(|e| matches!(&e.event, Event::AssistantMessage { text, .. } if text == "one"))
    );
    subscribe(&client, &session, u64::MAX).await;
    start_run(&client, &session, "second", run_options(&server)).await;
    let events = until_finished(&mut incoming).await;
    assert_eq!(
        tests::stop_and_error(&events).0,
        protocol::StopReason::Completed
    );
    let messages = &server.received()[1].body["messages"];
    assert_eq!(messages.as_array().unwrap().len(), 3, "{messages}");
}

/// Writes a session whose log holds `records` events of about 600 bytes.
fn large_session(home: &Home, id: &str, records: u64) {
    let sessions = home.paths().sessions_dir();
    let meta = Meta::new(id, "/");
    SessionStore::create(&sessions, &meta, &[], false).unwrap();
    let mut store = SessionStore::open(&sessions.join(id)).unwrap();
    for seq in 1..=records {
        let record = Record::Event {
            seq,
            time_ms: seq,
            event: Event::Error {
                message: "y".repeat(600),
            },
        };
        store.append(&record).unwrap();
    }
}

#[tokio::test]
async fn a_session_loading_from_a_large_log_does_not_delay_other_clients() {
    let home = Home::new();
    large_session(&home, "big00001", 150_000);
    let daemon = Daemon::start_in(home);
    let loader = daemon.client().await;
    let loading = tokio::spawn(async move {
        let reply = loader
            .request(Request::Subscribe {
                session: SessionId("big00001".into()),
                from_seq: 0,
            })
            .await;
        (reply, loader)
    });
    let other = daemon.client().await;
    let listed = other.list_sessions().await.unwrap();
    assert_eq!(listed.sessions.len(), 1);
    status(&other).await;
    assert!(
        !loading.is_finished(),
        "the listing waited for the large session to load"
    );
    let (reply, _loader) = loading.await.unwrap();
    assert!(matches!(reply, Ok(Reply::Subscribed(_))), "{reply:?}");
}
