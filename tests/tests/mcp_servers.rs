//! MCP server processes across sessions and over the daemon's life
//! (docs/architecture.md#mcp-servers): one shared process per `daemon`-scope server, one per
//! session for `session` scope, none left behind; permissions of MCP calls; config changes while
//! the daemon runs.

use protocol::{Event, Reply, Request};
use serde_json::json;
use tests::mcp::{McpSetup, started_pid, stdio_entry};
use tests::model_server::anthropic;
use tests::{session_in, start_run, tool_results, until_finished};

#[tokio::test]
async fn seven_sessions_share_one_daemon_scope_server() {
    let mut script = Vec::new();
    for _ in 0..7 {
        script.push(anthropic::tool("mcp__t__pid", json!({})));
        script.push(anthropic::text("done"));
    }
    let t = McpSetup::start(|events| stdio_entry("t", events, ""), script, &[]).await;
    let mut pids = Vec::new();
    for _ in 0..7 {
        let (client, session, mut incoming) = session_in(&t.daemon, t.project.path()).await;
        start_run(&client, &session, "pid?", t.options()).await;
        let run = until_finished(&mut incoming).await;
        pids.push(tool_results(&run)[0].2.clone());
    }
    let pid = started_pid(&t.events.until("started").await);
    assert!(pids.iter().all(|p| *p == pid.to_string()), "{pids:?}");
    let more: Vec<String> = t
        .events
        .pending()
        .into_iter()
        .filter(|e| e.starts_with("started"))
        .collect();
    assert!(more.is_empty(), "{more:?}");
    let listed = t.mcp_list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["pid"], pid);
    assert_eq!(listed[0]["scope"], "daemon");
}

#[tokio::test]
async fn session_scope_servers_are_one_per_session_and_go_with_their_session() {
    let mut script = Vec::new();
    for _ in 0..3 {
        script.push(
            anthropic::reply()
                .tool("mcp__t__pid", json!({}))
                .tool("mcp__t__env", json!({"name": "CLIENT_VAR"}))
                .tool("mcp__t__env", json!({"name": "CLIENT_TOKEN"}))
                .build(),
        );
        script.push(anthropic::text("done"));
    }
    let t = McpSetup::start(
        |events| stdio_entry("t", events, "scope = \"session\""),
        script,
        &[],
    )
    .await;
    let mut sessions = Vec::new();
    for i in 0..3 {
        let reply = t
            .client
            .request(Request::CreateSession(protocol::CreateSession {
                cwd: t.project.path().to_string_lossy().into_owned(),
                model: None,
                provider: None,
                mode: None,
                max_turns: None,
                title: None,
                env: vec![
                    ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
                    ("CLIENT_VAR".into(), format!("client {i}")),
                    ("CLIENT_TOKEN".into(), "secret".into()),
                ],
                worktree: false,
            }))
            .await
            .unwrap();
        let Reply::SessionCreated(info) = reply else {
            panic!("{reply:?}")
        };
        let mut watcher = t.daemon.client().await;
        tests::subscribe(&watcher, &info.id, 0).await;
        let mut incoming = watcher.take_incoming().unwrap();
        start_run(&watcher, &info.id, "pid?", t.options()).await;
        let run = until_finished(&mut incoming).await;
        let results = tool_results(&run);
        let pid: i32 = results[0].2.parse().unwrap();
        assert_eq!(results[1].2, format!("client {i}"));
        assert_eq!(results[2].2, "(unset)", "secrets stay out");
        sessions.push((info.id, pid));
    }
    let pids: std::collections::HashSet<i32> = sessions.iter().map(|(_, p)| *p).collect();
    assert_eq!(pids.len(), 3);
    let listed = t.mcp_list();
    assert_eq!(listed.len(), 3);
    assert!(
        listed
            .iter()
            .all(|s| s["scope"] == "session" && s["session"].is_string())
    );
    for (session, pid) in sessions {
        t.client
            .request(Request::DeleteSession {
                session,
                force: false,
            })
            .await
            .unwrap();
        assert!(
            tests::group_is_gone(pid).await,
            "server {pid} outlived its session"
        );
    }
}

#[tokio::test]
async fn no_server_outlives_the_daemon() {
    // The server leaves a child in its process group and one in a group of its own: both go.
    let spawn = || {
        anthropic::reply()
            .tool("mcp__t__spawn_child", json!({}))
            .tool("mcp__t__spawn_detached", json!({}))
            .build()
    };
    let mut t = McpSetup::start(
        |events| stdio_entry("t", events, ""),
        vec![
            spawn(),
            anthropic::text("done"),
            spawn(),
            anthropic::text("done"),
        ],
        &[],
    )
    .await;
    let run = t.run("spawn").await;
    let pid = started_pid(&t.events.until("started").await);
    let results = tool_results(&run);
    let child: i32 = results[0].2.parse().unwrap();
    let detached: i32 = results[1].2.parse().unwrap();
    assert_eq!(
        tests::process_group(child),
        Some(pid),
        "the server leads its own group"
    );
    assert_eq!(tests::process_group(detached), Some(detached));
    let stopped = t.daemon.home.run_agentctl(&["daemon", "stop"]);
    assert!(stopped.status.success(), "{stopped:?}");
    t.daemon.wait_exit();
    assert!(
        tests::group_is_gone(pid).await,
        "server {pid} outlived `daemon stop`"
    );
    assert!(
        tests::group_is_gone(detached).await,
        "the server's detached child outlived `daemon stop`"
    );

    // A daemon killed outright leaves its server to the next one, which stops it.
    t.daemon.restart();
    let (client, session, mut incoming) = session_in(&t.daemon, t.project.path()).await;
    start_run(&client, &session, "spawn", t.options()).await;
    let run = until_finished(&mut incoming).await;
    let pid = started_pid(&t.events.until("started").await);
    let detached: i32 = tool_results(&run)[1].2.parse().unwrap();
    t.daemon.kill();
    assert!(tests::live_members(pid));
    t.daemon.restart();
    assert!(
        tests::group_is_gone(pid).await,
        "server {pid} outlived a killed daemon"
    );
    assert!(
        tests::group_is_gone(detached).await,
        "the detached child outlived a killed daemon"
    );
}

#[tokio::test]
async fn permission_is_asked_refused_and_allowed_by_rules_and_the_allow_list() {
    let mut t = McpSetup::start(
        |events| {
            format!(
                "[permissions]\nallow = [\"mcp:t/ec*\"]\ndeny = [\"mcp:t/fail\"]\n\n{}{}",
                stdio_entry("t", events, ""),
                stdio_entry("listed", events, "allow = [\"pid\"]"),
            )
        },
        vec![
            anthropic::tool("mcp__t__echo", json!({"text": "by rule"})),
            anthropic::tool("mcp__listed__pid", json!({})),
            anthropic::tool("mcp__t__fail", json!({"text": "x"})),
            anthropic::tool("mcp__t__structured", json!({"a": 2, "b": 2})),
            anthropic::tool("mcp__t__structured", json!({"a": 1, "b": 1})),
            anthropic::text("done"),
            anthropic::tool("mcp__t__image", json!({})),
            anthropic::text("done"),
        ],
        &[],
    )
    .await;
    let mut options = tests::run_options(&t.model);
    options.deny_unanswered = false;
    start_run(&t.client, &t.session, "ask me", options).await;
    // Two asks: the first allowed, the second denied.
    let mut run = Vec::new();
    for decision in [protocol::Decision::Allow, protocol::Decision::Deny] {
        let asked = tests::events_until(&mut t.incoming, |e| {
            matches!(e, Event::PermissionRequested { .. })
        })
        .await;
        run.extend(asked.iter().cloned());
        let Some(Event::PermissionRequested {
            request,
            tool,
            summary,
            args,
            ..
        }) = asked.last().map(|e| e.event.clone())
        else {
            unreachable!()
        };
        assert_eq!(tool, "mcp__t__structured");
        assert!(summary.contains("t/structured"), "{summary}");
        assert!(args.contains("\"a\""), "{args}");
        t.client
            .request(Request::Answer {
                session: t.session.clone(),
                request,
                decision,
            })
            .await
            .unwrap();
    }
    run.extend(until_finished(&mut t.incoming).await);
    let results = tool_results(&run);
    // The echo allowed by a rule, the pid by the server's allow list, the fail refused by a
    // deny rule, the first sum allowed by the user and the second denied.
    assert_eq!(
        results[0],
        ("mcp__t__echo".into(), false, "echo: by rule".into())
    );
    assert_eq!(results[1].0, "mcp__listed__pid");
    assert!(!results[1].1);
    assert_eq!(
        results[2],
        (
            "mcp__t__fail".into(),
            true,
            "denied by the permission rule `mcp:t/fail` in config.toml".into()
        )
    );
    assert_eq!(
        results[3],
        ("mcp__t__structured".into(), false, "{\"sum\":4.0}".into())
    );
    assert_eq!(
        results[4],
        (
            "mcp__t__structured".into(),
            true,
            "denied: the user did not allow this call".into()
        )
    );

    // Nobody to ask: denied, saying how to allow it.
    let options = tests::run_options(&t.model);
    let run = t.run_with("unattended", options).await;
    let (_, is_error, output) = &tool_results(&run)[0];
    assert!(*is_error);
    assert!(output.contains("--allow mcp"), "{output}");
}

#[tokio::test]
async fn a_changed_entry_restarts_its_server_and_a_removed_one_is_stopped() {
    let mut t = McpSetup::start(
        |events| stdio_entry("t", events, ""),
        vec![
            anthropic::tool("mcp__t__pid", json!({})),
            anthropic::text("done"),
            anthropic::tool("mcp__t__env", json!({"name": "FLAVOUR"})),
            anthropic::text("done"),
            anthropic::tool("mcp__t__pid", json!({})),
            anthropic::text("done"),
        ],
        &[],
    )
    .await;
    let config_file = t.daemon.paths().config_file();
    t.run("pid?").await;
    let first = started_pid(&t.events.until("started").await);

    let changed = stdio_entry("t", &t.events, "")
        .replace("MCP_TEST_EVENTS =", "FLAVOUR = \"new\", MCP_TEST_EVENTS =");
    std::fs::write(&config_file, format!("retry_base_ms = 5\n{changed}")).unwrap();
    tests::wait_for_config(&t.client, 2).await;
    assert!(
        tests::group_is_gone(first).await,
        "the old server was not stopped"
    );
    let run = t.run("flavour?").await;
    assert_eq!(tool_results(&run)[0].2, "new");
    let second = started_pid(&t.events.until("started").await);
    assert_ne!(first, second);

    std::fs::write(&config_file, "retry_base_ms = 5\n").unwrap();
    tests::wait_for_config(&t.client, 3).await;
    assert!(
        tests::group_is_gone(second).await,
        "the removed server was not stopped"
    );
    assert!(t.mcp_list().is_empty());
    let run = t.run("pid?").await;
    let (_, is_error, output) = &tool_results(&run)[0];
    assert!(*is_error && output.contains("unknown tool"), "{output}");
}
