//! What a user meets in the first hour, on the daemon's side: a session is titled from its
//! first message; a tool call's time does not count the wait for permission; a run that could
//! not begin for lack of an API key leaves no empty session; an ambiguous id prefix lists the
//! sessions it starts; a rewind after a restart knows what the agent left, and says plainly
//! when it left files alone.

use std::path::Path;

use agentctl::client::{Client, Incoming};
use protocol::{Decision, ErrorCode, Event, Reply, Request, SessionId, SessionInfo, StopReason};
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{
    CmdOutput, Daemon, Home, TestEnv, WAIT, agentctl_output, asking_options, next_event,
    run_options, session_in, start_run, subscribe, until_finished,
};
use tokio::sync::mpsc::UnboundedReceiver;

/// Every session of the daemon's listing.
async fn listed(client: &Client) -> Vec<SessionInfo> {
    match client
        .request(Request::ListSessions { after: None })
        .await
        .unwrap()
    {
        Reply::Sessions { sessions, .. } => sessions,
        other => panic!("unexpected reply {other:?}"),
    }
}

/// A client following every session's summary, past the summaries of the sessions there are.
async fn watching_summaries(daemon: &Daemon) -> (Client, UnboundedReceiver<Incoming>) {
    let mut client = daemon.client().await;
    let mut incoming = client.take_incoming().unwrap();
    let reply = client.request(Request::SubscribeSummaries).await.unwrap();
    assert_eq!(reply, Reply::Done);
    loop {
        if let Incoming::SummariesReady { .. } = next_incoming(&mut incoming).await {
            return (client, incoming);
        }
    }
}

async fn next_incoming(incoming: &mut UnboundedReceiver<Incoming>) -> Incoming {
    tokio::time::timeout(WAIT, incoming.recv())
        .await
        .expect("something arrives in time")
        .expect("the connection is open")
}

fn ok(out: CmdOutput) -> String {
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    out.stdout
}

#[tokio::test]
async fn a_session_created_without_a_title_takes_it_from_its_first_message_for_good() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text("On it."), anthropic::text("Yes.")]).await;
    let mut daemon = Daemon::start();
    let (_watcher, mut summaries) = watching_summaries(&daemon).await;
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    assert_eq!(listed(&client).await[0].title, None);

    let first = "\n   \n  Fix the flaky login test on CI  \nIt fails one time in ten.";
    start_run(&client, &session, first, run_options(&server)).await;
    until_finished(&mut incoming).await;
    start_run(
        &client,
        &session,
        "And the signup test?",
        run_options(&server),
    )
    .await;
    until_finished(&mut incoming).await;
    let title = Some("Fix the flaky login test on CI".to_string());
    assert_eq!(listed(&client).await[0].title, title);
    // The board shows it too.
    loop {
        if let Incoming::Summary(summary) = next_incoming(&mut summaries).await
            && summary.info.title == title
        {
            break;
        }
    }

    drop(client);
    assert!(daemon.terminate());
    daemon.restart();
    let client = daemon.client().await;
    assert_eq!(listed(&client).await[0].title, title, "kept in meta.json");
}

#[tokio::test]
async fn a_tool_calls_time_does_not_count_the_wait_for_permission() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", json!({"command": "echo hello"})),
            anthropic::text("Said hello."),
        ])
        .start()
        .await;
    env.start_run_with("say hello", asking_options(&env.server))
        .await;
    let request = loop {
        if let Event::PermissionRequested { request, .. } =
            next_event(&mut env.incoming).await.event
        {
            break request;
        }
    };
    // The user takes a while to decide: that time is theirs, not the tool's.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    env.client
        .request(Request::Answer {
            session: env.session.clone(),
            request,
            decision: Decision::Allow,
        })
        .await
        .unwrap();
    let duration = loop {
        if let Event::ToolResult {
            duration_ms,
            output,
            ..
        } = next_event(&mut env.incoming).await.event
        {
            assert!(output.contains("hello"), "{output}");
            break duration_ms;
        }
    };
    assert!(
        duration < 1000,
        "`echo hello` took {duration} ms: the wait for permission was counted"
    );
}

#[tokio::test]
async fn a_run_without_an_api_key_leaves_no_empty_session_behind() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let (_watcher, mut summaries) = watching_summaries(&daemon).await;
    let out = daemon
        .home
        .agentctl_with(&server, project.path(), &["run", "hi"])
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("ANTHROPIC_API_KEY is not set"), "{said}");
    // No pointer to a session that is not kept.
    assert!(!said.contains("agentctl attach"), "{said}");
    loop {
        if let Incoming::SummaryRemoved { .. } = next_incoming(&mut summaries).await {
            break;
        }
    }
    let sessions = agentctl_output(&daemon, &server, project.path(), &["sessions"]).await;
    assert!(ok(sessions).contains("no sessions"));
    assert!(server.received().is_empty());
}

#[tokio::test]
async fn a_session_a_client_still_follows_is_kept_after_its_run_failed_for_lack_of_a_key() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let (_watcher, mut summaries) = watching_summaries(&daemon).await;
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let mut options = run_options(&server);
    options.env = vec![("ANTHROPIC_API_KEY".into(), String::new())];
    start_run(&client, &session, "hi", options).await;
    let events = until_finished(&mut incoming).await;
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Error);
    // A chat that is still open keeps its session: the user may go on in it.
    let other = daemon.client().await;
    assert_eq!(listed(&other).await.len(), 1);

    drop(client);
    let removed = loop {
        if let Incoming::SummaryRemoved { session } = next_incoming(&mut summaries).await {
            break session;
        }
    };
    assert_eq!(removed, session);
    assert!(listed(&other).await.is_empty());
}

/// Sessions `ids` in `cwd`, stored before the daemon starts, titled "task N".
fn stored_sessions(home: &Home, cwd: &Path, ids: &[String]) {
    use agentd::store::{Meta, SessionStore};
    let sessions = home.paths().sessions_dir();
    for (n, id) in ids.iter().enumerate() {
        let mut meta = Meta::new(id, &cwd.to_string_lossy());
        meta.title = Some(format!("task {}", n + 1));
        meta.created_ms = 1_700_000_000_000 + n as u64;
        SessionStore::create(&sessions, &meta, &[], false).unwrap();
    }
}

#[tokio::test]
async fn an_ambiguous_id_prefix_lists_the_sessions_it_starts() {
    let project = tempfile::tempdir().unwrap();
    let home = Home::new();
    let ids: Vec<String> = (1..=12).map(|n| format!("ab0000{n:02}")).collect();
    stored_sessions(&home, project.path(), &ids);
    let daemon = Daemon::start_in(home);
    let client = daemon.client().await;
    let asked = client
        .request(Request::GetHistory {
            session: SessionId("ab00001".into()),
            from_seq: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(asked.code(), Some(ErrorCode::InvalidRequest));
    let message = asked.to_string();
    assert!(message.contains("give more characters"), "{message}");
    for (id, title) in [("ab000010", "task 10"), ("ab000012", "task 12")] {
        let line = message
            .lines()
            .find(|l| l.contains(id))
            .unwrap_or_else(|| panic!("{id} is not listed: {message}"));
        assert!(line.contains(title), "{line}");
        assert!(line.contains(&*project.path().to_string_lossy()), "{line}");
    }
    assert!(!message.contains("ab000009"), "{message}");

    let server = ModelServer::start(vec![]).await;
    let shown = agentctl_output(&daemon, &server, project.path(), &["show", "ab"]).await;
    assert_eq!(shown.code, Some(1));
    let listed = shown
        .stderr
        .lines()
        .filter(|l| l.contains("ab0000"))
        .count();
    assert_eq!(listed, 10, "{}", shown.stderr);
    assert!(shown.stderr.contains("and 2 more"), "{}", shown.stderr);
}

/// `agentctl new` in `cwd`: the new session's id.
async fn new_session(daemon: &Daemon, server: &ModelServer, cwd: &Path) -> String {
    ok(agentctl_output(daemon, server, cwd, &["new"]).await)
        .trim()
        .to_string()
}

/// A run killed with the daemon while its command had rewritten `data.txt` ("old" to "new"),
/// resumed by the next daemon, where `then` is the rest of its script: the daemon, the model
/// server and the session's id, once the run has completed.
async fn run_resumed_after_a_crash(
    p: &Path,
    then: Vec<tests::model_server::Scripted>,
) -> (Daemon, ModelServer, String) {
    std::fs::write(p.join("data.txt"), "old\n").unwrap();
    tests::make_fifo(&p.join("started"));
    let mut script = vec![anthropic::tool(
        "bash",
        json!({"command": "echo new > data.txt; echo $$ > started; sleep 30"}),
    )];
    script.extend(then);
    let server = ModelServer::start(script).await;
    let env = [
        ("ANTHROPIC_BASE_URL", server.url()),
        ("ANTHROPIC_API_KEY", "test-key"),
    ];
    let mut daemon = Daemon::start_with(Home::new(), &env);
    let id = new_session(&daemon, &server, p).await;
    let client = daemon.client().await;
    let session = SessionId(id.clone());
    start_run(&client, &session, "rewrite data.txt", run_options(&server)).await;
    let pgid = tests::read_fifo(&p.join("started")).await;
    daemon.kill();
    // SAFETY: killpg has no memory-safety preconditions.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    daemon.restart();
    let mut client = daemon.client().await;
    subscribe(&client, &session, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    let events = until_finished(&mut incoming).await;
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Completed);
    assert_eq!(
        std::fs::read_to_string(p.join("data.txt")).unwrap(),
        "new\n"
    );
    (daemon, server, id)
}

#[tokio::test]
async fn a_run_resumed_after_a_crash_is_rewound_as_any_other() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    let (daemon, server, id) =
        run_resumed_after_a_crash(p, vec![anthropic::text("Rewrote it.")]).await;

    let report = ok(agentctl_output(&daemon, &server, p, &["rewind", &id, "--yes"]).await);
    assert!(report.contains("restored data.txt"), "{report}");
    assert!(!report.contains("kept data.txt"), "{report}");
    assert!(!report.contains("nothing to undo"), "{report}");
    assert_eq!(
        std::fs::read_to_string(p.join("data.txt")).unwrap(),
        "old\n"
    );
}

#[tokio::test]
async fn a_resumed_run_that_changes_more_is_rewound_to_before_its_first_part() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    let more = anthropic::tool("write", json!({"path": "more.txt", "content": "more\n"}));
    let (daemon, server, id) =
        run_resumed_after_a_crash(p, vec![more, anthropic::text("Wrote more.")]).await;
    assert!(p.join("more.txt").exists());

    let report = ok(agentctl_output(&daemon, &server, p, &["rewind", &id, "--yes"]).await);
    assert!(report.contains("restored data.txt"), "{report}");
    assert!(report.contains("removed more.txt"), "{report}");
    assert_eq!(
        std::fs::read_to_string(p.join("data.txt")).unwrap(),
        "old\n"
    );
    assert!(!p.join("more.txt").exists());
}

#[tokio::test]
async fn a_rewind_that_keeps_files_changed_since_does_not_say_there_was_nothing_to_undo() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::write(p.join("data.txt"), "old\n").unwrap();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .tool("read", json!({"path": "data.txt"}))
            .tool("write", json!({"path": "data.txt", "content": "agent\n"}))
            .build(),
        anthropic::text("Written."),
    ])
    .await;
    let daemon = Daemon::start();
    let id = new_session(&daemon, &server, p).await;
    ok(agentctl_output(
        &daemon,
        &server,
        p,
        &["run", "--session", &id, "--yes", "write"],
    )
    .await);
    std::fs::write(p.join("data.txt"), "mine\n").unwrap();

    let report = ok(agentctl_output(&daemon, &server, p, &["rewind", &id, "--yes"]).await);
    assert!(report.contains("kept data.txt"), "{report}");
    assert!(!report.contains("nothing to undo"), "{report}");
    assert!(
        report.contains("nothing was undone: the files above differ from before run 1"),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(p.join("data.txt")).unwrap(),
        "mine\n"
    );
}
