//! MCP servers as tool sources (SPEC §10): the real daemon, the test MCP server over stdio and
//! Streamable HTTP, and the scripted model calling its tools.

use protocol::{Event, PermissionClass, Reply, Request, StopReason};
use serde_json::{Value, json};
use tests::mcp::{ServerEvents, http_server, started_pid, stdio_entry};
use tests::model_server::{ModelServer, anthropic};
use tests::{
    Daemon, Home, call_order, run_options, session_in, start_run, tool_results, until_finished,
};

/// Run options that also allow MCP calls.
fn mcp_options(server: &ModelServer) -> protocol::RunOptions {
    let mut options = run_options(server);
    options.grants.push(PermissionClass::Mcp);
    options
}

fn home_with(config: &str) -> Home {
    Home::with_config(&format!("retry_base_ms = 5\nretry_max_ms = 20\n{config}"))
}

/// The tool names and the system prompt of a request to the model.
fn offered(request: &Value) -> (Vec<String>, String) {
    let names = request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let system = match &request["system"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    (names, system)
}

async fn mcp_list(home: &Home) -> Vec<Value> {
    let output = home.run_agentctl(&["mcp", "list", "--json"]);
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .cloned()
        .unwrap()
}

#[tokio::test]
async fn tools_are_offered_with_their_schema_and_their_results_reach_the_history() {
    let events = ServerEvents::new();
    let home = home_with(&stdio_entry("t", &events, ""));
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        // Read-only tools share a batch; the others run one by one.
        anthropic::reply()
            .tool("mcp__t__echo", json!({"text": "one"}))
            .tool("mcp__t__echo", json!({"text": "two"}))
            .build(),
        anthropic::reply()
            .tool("mcp__t__fail", json!({"text": "x"}))
            .tool("mcp__t__structured", json!({"a": 1, "b": 2}))
            .tool("mcp__t__image", json!({}))
            .build(),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_in(home);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "use the server", mcp_options(&model)).await;
    let run = until_finished(&mut incoming).await;
    assert_eq!(tests::stop_and_error(&run).0, StopReason::Completed);

    let requests = model.received();
    let (names, system) = offered(&requests[0].body);
    // Nine tools in pages of three: every page was listed.
    for tool in ["echo", "fail", "structured", "image", "hang", "exit", "pid"] {
        assert!(names.contains(&format!("mcp__t__{tool}")), "{names:?}");
    }
    assert!(names.contains(&"read".to_string()));
    let echo = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__t__echo")
        .unwrap();
    assert_eq!(echo["input_schema"]["properties"]["text"]["type"], "string");
    assert!(echo["description"].as_str().unwrap().contains("Echoes"));
    assert!(system.contains("t: connected, 11 tools"), "{system}");

    assert_eq!(
        call_order(&run),
        [
            "call", "call", "result", "result", "call", "result", "call", "result", "call",
            "result"
        ]
    );
    // The parallel batch's results come as they finish; the history keeps call order.
    let results = tool_results(&run);
    let mut batch = vec![results[0].2.clone(), results[1].2.clone()];
    batch.sort();
    assert_eq!(batch, ["echo: one", "echo: two"]);
    assert!(!results[0].1 && !results[1].1);
    assert_eq!(
        results[2],
        ("mcp__t__fail".into(), true, "failed: x".into())
    );
    assert_eq!(
        results[3],
        ("mcp__t__structured".into(), false, "{\"sum\":3.0}".into())
    );
    assert_eq!(
        results[4],
        (
            "mcp__t__image".into(),
            false,
            "a picture\n[image: image/png, 11 bytes]".into()
        )
    );
    // The results are in the history the model sees next.
    let next = requests[1].body.to_string();
    let (one, two) = (next.find("echo: one"), next.find("echo: two"));
    assert!(one.is_some() && two.is_some() && one < two, "{next}");
    let last = requests[2].body.to_string();
    assert!(
        last.contains("failed: x") && last.contains("image/png"),
        "{last}"
    );
}

#[tokio::test]
async fn a_streamable_http_server_works_like_a_stdio_one() {
    let events = ServerEvents::new();
    let (_server, url) = http_server(&events).await;
    let home = home_with(&format!(
        "[mcp_servers.web]\nurl = {url:?}\nheaders = {{ Authorization = \"Bearer ${{MCP_TEST_TOKEN}}\" }}\n"
    ));
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool("mcp__web__echo", json!({"text": "over http"})),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_with(home, &[("MCP_TEST_TOKEN", "t0ken")]);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "use the web server", mcp_options(&model)).await;
    let run = until_finished(&mut incoming).await;
    assert_eq!(
        tool_results(&run),
        [("mcp__web__echo".into(), false, "echo: over http".into())]
    );
    let listed = mcp_list(&daemon.home).await;
    assert_eq!(listed[0]["transport"], "http");
    assert_eq!(listed[0]["state"], "ready");
    assert_eq!(listed[0]["tools"], 11);
    // The token is in no file the daemon wrote.
    let log = std::fs::read_to_string(daemon.paths().log_file()).unwrap_or_default();
    assert!(!log.contains("t0ken"));
}

#[tokio::test]
async fn a_server_that_fails_to_start_gives_an_error_naming_it_and_the_others_work() {
    let events = ServerEvents::new();
    let config = format!(
        "{}{}[mcp_servers.typo]\ncomand = \"x\"\n",
        stdio_entry("good", &events, ""),
        stdio_entry("broken", &events, "args = [\"--exit-at-start\"]"),
    );
    let home = home_with(&config);
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool("mcp__broken__echo", json!({"text": "hi"})),
        anthropic::tool("mcp__good__echo", json!({"text": "hi"})),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_in(home);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "try both", mcp_options(&model)).await;
    let run = until_finished(&mut incoming).await;
    let results = tool_results(&run);
    let (_, is_error, output) = &results[0];
    assert!(*is_error);
    assert!(output.contains("MCP server `broken`"), "{output}");
    assert!(output.contains("cannot open its database"), "{output}");
    assert!(output.contains("[mcp_servers.broken]"), "{output}");
    assert_eq!(
        results[1],
        ("mcp__good__echo".into(), false, "echo: hi".into())
    );
    let (names, system) = offered(&model.received()[0].body);
    assert!(!names.iter().any(|n| n.starts_with("mcp__broken")));
    assert!(system.contains("broken: not available"), "{system}");

    let listed = mcp_list(&daemon.home).await;
    let state = |name: &str| {
        listed
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {listed:?}"))
            .clone()
    };
    assert_eq!(state("good")["state"], "ready");
    assert!(
        state("broken")["last_error"]
            .as_str()
            .unwrap()
            .contains("cannot open its database")
    );
    let typo = state("typo");
    assert_eq!(typo["state"], "broken");
    let error = typo["last_error"].as_str().unwrap();
    assert!(
        error.contains("config.toml:") && error.contains("comand"),
        "{error}"
    );
}

#[tokio::test]
async fn a_server_that_exits_mid_call_is_started_again_on_the_next_call() {
    let events = ServerEvents::new();
    let home = home_with(&stdio_entry("t", &events, ""));
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool("mcp__t__exit", json!({})),
        anthropic::tool("mcp__t__pid", json!({})),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_in(home);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "crash it", mcp_options(&model)).await;
    let first = started_pid(&events.until("started").await);
    let run = until_finished(&mut incoming).await;
    let results = tool_results(&run);
    assert!(results[0].1);
    assert!(
        results[0].2.contains("stopped during the call of `exit`"),
        "{}",
        results[0].2
    );
    let second = started_pid(&events.until("started").await);
    assert_ne!(first, second);
    assert_eq!(
        results[1],
        ("mcp__t__pid".into(), false, second.to_string())
    );
    assert!(tests::group_is_gone(first).await);
}

#[tokio::test]
async fn a_hanging_call_times_out_and_a_cancel_does_not_wait_for_the_server() {
    let events = ServerEvents::new();
    let config = format!(
        "{}{}",
        stdio_entry("quick", &events, "call_timeout_ms = 200"),
        stdio_entry("t", &events, ""),
    );
    let home = home_with(&config);
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool("mcp__quick__hang", json!({})),
        anthropic::text("timed out"),
        anthropic::tool("mcp__t__stubborn", json!({})),
    ])
    .await;
    let daemon = Daemon::start_in(home);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "hang", mcp_options(&model)).await;
    let run = until_finished(&mut incoming).await;
    let (_, is_error, output) = &tool_results(&run)[0];
    assert!(*is_error);
    assert!(
        output.contains("did not answer `hang` within 0.2 s"),
        "{output}"
    );
    // The server heard that the call was given up.
    events.until("cancelled hang").await;

    // A server that ignores the cancel does not hold the run.
    start_run(&client, &session, "hang for good", mcp_options(&model)).await;
    events.until("call stubborn").await;
    client
        .request(Request::Cancel {
            session: session.clone(),
        })
        .await
        .unwrap();
    let run = until_finished(&mut incoming).await;
    assert_eq!(tests::stop_and_error(&run).0, StopReason::Aborted);
    assert_eq!(
        tool_results(&run),
        [(
            "mcp__t__stubborn".into(),
            true,
            "[interrupted: the run was cancelled]".into()
        )]
    );
}

#[tokio::test]
async fn a_changed_tool_list_reaches_the_next_turn() {
    let events = ServerEvents::new();
    let home = home_with(&stdio_entry("t", &events, ""));
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool("mcp__t__add_tool", json!({})),
        anthropic::tool("mcp__t__late", json!({})),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_in(home);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "grow", mcp_options(&model)).await;
    let run = until_finished(&mut incoming).await;
    let requests = model.received();
    assert!(
        !offered(&requests[0].body)
            .0
            .contains(&"mcp__t__late".to_string())
    );
    assert!(
        offered(&requests[1].body)
            .0
            .contains(&"mcp__t__late".to_string())
    );
    assert_eq!(
        tool_results(&run)[1],
        ("mcp__t__late".into(), false, "late tool ran".into())
    );
}

#[tokio::test]
async fn seven_sessions_share_one_daemon_scope_server() {
    let events = ServerEvents::new();
    let home = home_with(&stdio_entry("t", &events, ""));
    let project = tempfile::tempdir().unwrap();
    let mut script = Vec::new();
    for _ in 0..7 {
        script.push(anthropic::tool("mcp__t__pid", json!({})));
        script.push(anthropic::text("done"));
    }
    let model = ModelServer::start(script).await;
    let daemon = Daemon::start_in(home);
    let mut pids = Vec::new();
    for _ in 0..7 {
        let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
        start_run(&client, &session, "pid?", mcp_options(&model)).await;
        let run = until_finished(&mut incoming).await;
        pids.push(tool_results(&run)[0].2.clone());
    }
    let pid = started_pid(&events.until("started").await);
    assert!(pids.iter().all(|p| *p == pid.to_string()), "{pids:?}");
    let more: Vec<String> = events
        .pending()
        .into_iter()
        .filter(|e| e.starts_with("started"))
        .collect();
    assert!(more.is_empty(), "{more:?}");
    let listed = mcp_list(&daemon.home).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["pid"], pid);
    assert_eq!(listed[0]["scope"], "daemon");
}

#[tokio::test]
async fn session_scope_servers_are_one_per_session_and_go_with_their_session() {
    let events = ServerEvents::new();
    let home = home_with(&stdio_entry("t", &events, "scope = \"session\""));
    let project = tempfile::tempdir().unwrap();
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
    let model = ModelServer::start(script).await;
    let daemon = Daemon::start_in(home);
    let client = daemon.client().await;
    let mut sessions = Vec::new();
    for i in 0..3 {
        let reply = client
            .request(Request::CreateSession(protocol::CreateSession {
                cwd: project.path().to_string_lossy().into_owned(),
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
            }))
            .await
            .unwrap();
        let Reply::SessionCreated(info) = reply else {
            panic!("{reply:?}")
        };
        let mut watcher = daemon.client().await;
        tests::subscribe(&watcher, &info.id, 0).await;
        let mut incoming = watcher.take_incoming().unwrap();
        start_run(&watcher, &info.id, "pid?", mcp_options(&model)).await;
        let run = until_finished(&mut incoming).await;
        let results = tool_results(&run);
        let pid: i32 = results[0].2.parse().unwrap();
        assert_eq!(results[1].2, format!("client {i}"));
        assert_eq!(results[2].2, "(unset)", "secrets stay out");
        sessions.push((info.id, pid));
    }
    let pids: std::collections::HashSet<i32> = sessions.iter().map(|(_, p)| *p).collect();
    assert_eq!(pids.len(), 3);
    let listed = mcp_list(&daemon.home).await;
    assert_eq!(listed.len(), 3);
    assert!(
        listed
            .iter()
            .all(|s| s["scope"] == "session" && s["session"].is_string())
    );
    for (session, pid) in sessions {
        client
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
    let events = ServerEvents::new();
    let home = home_with(&stdio_entry("t", &events, ""));
    let project = tempfile::tempdir().unwrap();
    // The server leaves a child of its own in its process group: it goes too.
    let model = ModelServer::start(vec![
        anthropic::tool("mcp__t__spawn_child", json!({})),
        anthropic::text("done"),
        anthropic::tool("mcp__t__spawn_child", json!({})),
        anthropic::text("done"),
    ])
    .await;
    let mut daemon = Daemon::start_in(home);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "spawn", mcp_options(&model)).await;
    let run = until_finished(&mut incoming).await;
    let pid = started_pid(&events.until("started").await);
    let child: i32 = tool_results(&run)[0].2.parse().unwrap();
    assert_eq!(
        tests::process_group(child),
        Some(pid),
        "the server leads its own group"
    );
    let stopped = daemon.home.run_agentctl(&["daemon", "stop"]);
    assert!(stopped.status.success(), "{stopped:?}");
    daemon.wait_exit();
    assert!(
        tests::group_is_gone(pid).await,
        "server {pid} outlived `daemon stop`"
    );

    // A daemon killed outright leaves its server to the next one, which stops it.
    daemon.restart();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "spawn", mcp_options(&model)).await;
    until_finished(&mut incoming).await;
    let pid = started_pid(&events.until("started").await);
    daemon.kill();
    assert!(tests::live_members(pid));
    daemon.restart();
    assert!(
        tests::group_is_gone(pid).await,
        "server {pid} outlived a killed daemon"
    );
}

#[tokio::test]
async fn permission_is_asked_refused_and_allowed_by_rules_and_the_allow_list() {
    let events = ServerEvents::new();
    let config = format!(
        "[permissions]\nallow = [\"mcp:t/ec*\"]\ndeny = [\"mcp:t/fail\"]\n\n{}{}",
        stdio_entry("t", &events, ""),
        stdio_entry("listed", &events, "allow = [\"pid\"]"),
    );
    let home = home_with(&config);
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool("mcp__t__echo", json!({"text": "by rule"})),
        anthropic::tool("mcp__listed__pid", json!({})),
        anthropic::tool("mcp__t__fail", json!({"text": "x"})),
        anthropic::tool("mcp__t__structured", json!({"a": 2, "b": 2})),
        anthropic::tool("mcp__t__structured", json!({"a": 1, "b": 1})),
        anthropic::text("done"),
        anthropic::tool("mcp__t__image", json!({})),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_in(home);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let mut options = run_options(&model);
    options.deny_unanswered = false;
    start_run(&client, &session, "ask me", options).await;
    // Two asks: the first allowed, the second denied.
    let mut run = Vec::new();
    for decision in [protocol::Decision::Allow, protocol::Decision::Deny] {
        let asked = tests::events_until(&mut incoming, |e| {
            matches!(e, Event::PermissionRequested { .. })
        })
        .await;
        run.extend(asked.iter().cloned());
        let Some(Event::PermissionRequested {
            request,
            tool,
            summary,
            args,
        }) = asked.last().map(|e| e.event.clone())
        else {
            unreachable!()
        };
        assert_eq!(tool, "mcp__t__structured");
        assert!(summary.contains("t/structured"), "{summary}");
        assert!(args.contains("\"a\""), "{args}");
        client
            .request(Request::Answer {
                session: session.clone(),
                request,
                decision,
            })
            .await
            .unwrap();
    }
    run.extend(until_finished(&mut incoming).await);
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
    start_run(&client, &session, "unattended", run_options(&model)).await;
    let run = until_finished(&mut incoming).await;
    let (_, is_error, output) = &tool_results(&run)[0];
    assert!(*is_error);
    assert!(output.contains("--allow mcp"), "{output}");
}

#[tokio::test]
async fn a_changed_entry_restarts_its_server_and_a_removed_one_is_stopped() {
    let events = ServerEvents::new();
    let home = home_with(&stdio_entry("t", &events, ""));
    let config_file = home.paths().config_file();
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool("mcp__t__pid", json!({})),
        anthropic::text("done"),
        anthropic::tool("mcp__t__env", json!({"name": "FLAVOUR"})),
        anthropic::text("done"),
        anthropic::tool("mcp__t__pid", json!({})),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_in(home);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "pid?", mcp_options(&model)).await;
    until_finished(&mut incoming).await;
    let first = started_pid(&events.until("started").await);

    let changed = stdio_entry("t", &events, "")
        .replace("MCP_TEST_EVENTS =", "FLAVOUR = \"new\", MCP_TEST_EVENTS =");
    std::fs::write(&config_file, format!("retry_base_ms = 5\n{changed}")).unwrap();
    tests::wait_for_config(&client, 2).await;
    assert!(
        tests::group_is_gone(first).await,
        "the old server was not stopped"
    );
    start_run(&client, &session, "flavour?", mcp_options(&model)).await;
    let run = until_finished(&mut incoming).await;
    assert_eq!(tool_results(&run)[0].2, "new");
    let second = started_pid(&events.until("started").await);
    assert_ne!(first, second);

    std::fs::write(&config_file, "retry_base_ms = 5\n").unwrap();
    tests::wait_for_config(&client, 3).await;
    assert!(
        tests::group_is_gone(second).await,
        "the removed server was not stopped"
    );
    assert!(mcp_list(&daemon.home).await.is_empty());
    start_run(&client, &session, "pid?", mcp_options(&model)).await;
    let run = until_finished(&mut incoming).await;
    let (_, is_error, output) = &tool_results(&run)[0];
    assert!(*is_error && output.contains("unknown tool"), "{output}");
}

#[tokio::test]
async fn a_hostile_server_is_kept_within_bounds() {
    let events = ServerEvents::new();
    let home = home_with(&stdio_entry("h", &events, "args = [\"--hostile\"]"));
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool("mcp__h__flood", json!({})),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_in(home);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "flood", mcp_options(&model)).await;
    let run = until_finished(&mut incoming).await;
    // A tool list that never ends is cut at 200 tools, with names every provider takes.
    let (names, _) = offered(&model.received()[0].body);
    let mine: Vec<&String> = names.iter().filter(|n| n.starts_with("mcp__h__")).collect();
    assert_eq!(mine.len(), 200);
    let unique: std::collections::HashSet<&&String> = mine.iter().collect();
    assert_eq!(unique.len(), 200);
    for name in &mine {
        assert!(name.len() <= 64, "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
    let body = model.received()[0].body.to_string();
    assert!(
        body.len() < 1_000_000,
        "descriptions are capped: {} bytes",
        body.len()
    );
    // 5 MB of result becomes a capped one.
    let (_, is_error, output) = &tool_results(&run)[0];
    assert!(!is_error);
    assert!(output.len() < 40_000, "{}", output.len());
    assert!(output.contains("y"));
}

#[tokio::test]
async fn the_terminal_shows_server_and_tool_and_daemon_scope_servers_get_no_secrets() {
    let events = ServerEvents::new();
    let home = home_with(&stdio_entry("t", &events, ""));
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::reply()
            .tool("mcp__t__env", json!({"name": "DAEMON_VISIBLE"}))
            .tool("mcp__t__env", json!({"name": "DAEMON_API_KEY"}))
            .build(),
        anthropic::text("done"),
        anthropic::tool("mcp__t__echo", json!({"text": "hi"})),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_with(
        home,
        &[("DAEMON_VISIBLE", "yes"), ("DAEMON_API_KEY", "daemon-key")],
    );
    let out = tests::agentctl_output(
        &daemon,
        &model,
        project.path(),
        &["run", "--allow", "mcp", "env?"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{} {}", out.stdout, out.stderr);
    assert!(out.stdout.contains("t/env"), "{}", out.stdout);
    let results = model.received()[1].body.to_string();
    assert!(results.contains("yes"), "{results}");
    assert!(!results.contains("daemon-key"), "{results}");

    // Without --allow mcp, and nobody to ask: refused, saying how to allow it.
    let out = tests::agentctl_output(&daemon, &model, project.path(), &["run", "echo?"]).await;
    assert!(out.stdout.contains("t/echo"), "{}", out.stdout);
    assert!(out.stdout.contains("--allow mcp"), "{}", out.stdout);

    let status = daemon.home.run_agentctl(&["daemon", "status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("mcp servers:"), "{status}");
    assert!(
        status
            .lines()
            .any(|l| l.contains(" t ") && l.contains("ready")),
        "{status}"
    );
    let table = daemon.home.run_agentctl(&["mcp", "list"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.lines().nth(1).unwrap().starts_with("t "), "{table}");
}
