//! Sessions and listings of any size (docs/architecture.md#state-on-disk): nothing a client asks
//! for is ever one frame larger than the frame limit; histories, replays and listings come in
//! pages. Strings a client sets are bounded, with a clear error.

use protocol::{CreateSession, ErrorCode, Event, Request};
use serde_json::Value;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, agentctl_output, run_options, session_in, start_run, until_finished};

#[tokio::test]
async fn a_session_over_16_mib_shows_attaches_and_continues() {
    const PROMPT: usize = 9 * 1024 * 1024;
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::text("first"),
        anthropic::text("second"),
        anthropic::text("third"),
    ])
    .await;
    // A window that takes 9 MiB messages (a larger one is refused before it is sent).
    let home = tests::Home::with_config("context_window = 100000000\n");
    let daemon = Daemon::start_in(home);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    for (i, mark) in ["A", "B"].iter().enumerate() {
        let prompt = mark.repeat(PROMPT);
        start_run(&client, &session, &prompt, run_options(&server)).await;
        let events = until_finished(&mut incoming).await;
        assert_eq!(
            tests::stop_and_error(&events).0,
            protocol::StopReason::Completed,
            "run {i}"
        );
    }
    // show, as JSON and as text.
    let shown = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["show", &session.0, "--json"],
    )
    .await;
    assert_eq!(shown.code, Some(0), "{}", shown.stderr);
    let prompts: Vec<usize> = shown
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "user_message")
        .map(|e| e["text"].as_str().unwrap_or_default().len())
        .collect();
    assert_eq!(prompts, [PROMPT, PROMPT]);
    let shown = agentctl_output(&daemon, &server, project.path(), &["show", &session.0]).await;
    assert_eq!(shown.code, Some(0), "{}", shown.stderr);
    assert!(shown.stdout.len() > 2 * PROMPT, "{}", shown.stdout.len());
    // attach: a replay from the start.
    let mut watcher = daemon.client().await;
    tests::subscribe(&watcher, &session, 0).await;
    let mut replay = watcher.take_incoming().unwrap();
    let mut seen = 0;
    while seen < 2 {
        if let Event::UserMessage { text, .. } = tests::next_event(&mut replay).await.event {
            assert_eq!(text.len(), PROMPT);
            seen += 1;
        }
    }
    // run --session.
    let ran = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["run", "--session", &session.0, "and now?"],
    )
    .await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(ran.stdout.contains("third"), "{}", ran.stdout);
    let last = server.received().last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(last, 5);
}

#[tokio::test]
async fn a_listing_over_16_mib_is_paged_and_an_overlong_title_is_refused() {
    const SESSIONS: usize = 4000;
    let daemon = Daemon::start_in(Home::with_config("durability = \"flush\"\n"));
    // A deep directory: every listing entry carries about 4 kB.
    let root = tempfile::tempdir().unwrap();
    let mut deep = root.path().to_path_buf();
    for i in 0..15 {
        deep.push(format!("{i:02}{}", "d".repeat(248)));
    }
    std::fs::create_dir_all(&deep).unwrap();
    let client = daemon.client().await;
    let create = |title: String| {
        Request::CreateSession(CreateSession {
            cwd: deep.to_string_lossy().into_owned(),
            model: None,
            provider: None,
            mode: None,
            max_turns: None,
            title: Some(title),
            env: Vec::new(),
            worktree: false,
        })
    };
    let too_long = client.request(create("t".repeat(501))).await.unwrap_err();
    assert_eq!(too_long.code(), Some(ErrorCode::InvalidRequest));
    assert!(
        too_long
            .to_string()
            .contains("the title is 501 characters long; at most 500"),
        "{too_long}"
    );
    for i in 0..SESSIONS {
        client
            .request(create(format!("{i:04}{}", "t".repeat(496))))
            .await
            .unwrap();
    }
    let listing = client.list_sessions().await.unwrap();
    assert_eq!(listing.sessions.len(), SESSIONS);
    let bytes: usize = listing
        .sessions
        .iter()
        .map(|s| s.cwd.len() + s.title.as_ref().map_or(0, String::len))
        .sum();
    assert!(bytes > 16 * 1024 * 1024, "only {bytes} bytes listed");
    // Each once, across the pages.
    let mut titles: Vec<&str> = listing
        .sessions
        .iter()
        .map(|s| {
            s.title
                .as_deref()
                .unwrap_or_default()
                .get(..4)
                .unwrap_or_default()
        })
        .collect();
    titles.sort();
    let expected: Vec<String> = (0..SESSIONS).map(|i| format!("{i:04}")).collect();
    assert_eq!(titles, expected);
    let server = ModelServer::start(vec![]).await;
    let listed = agentctl_output(&daemon, &server, root.path(), &["sessions", "--json"]).await;
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    let rows: Vec<Value> = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows.len(), SESSIONS);
}
