//! MCP tools in runs (docs/architecture.md#mcp-servers): the real daemon, the test MCP server over
//! stdio and Streamable HTTP, and the scripted model calling its tools: what the model is offered,
//! what it gets back, and what happens when a server fails, hangs, changes or lies.

use protocol::{Request, StopReason};
use serde_json::json;
use tests::mcp::{McpSetup, http_server, offered, started_pid, stdio_entry};
use tests::model_server::anthropic;
use tests::{call_order, tool_results};

#[tokio::test]
async fn tools_are_offered_with_their_schema_and_their_results_reach_the_history() {
    let mut t = McpSetup::start(
        |events| stdio_entry("t", events, ""),
        vec![
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
        ],
        &[],
    )
    .await;
    let run = t.run("use the server").await;
    assert_eq!(tests::stop_and_error(&run).0, StopReason::Completed);

    let requests = t.model.received();
    let (names, system) = offered(&requests[0].body);
    // Twelve tools in pages of three: every page was listed.
    for tool in [
        "echo",
        "fail",
        "structured",
        "image",
        "hang",
        "exit",
        "spawn_child",
    ] {
        assert!(names.contains(&format!("mcp__t__{tool}")), "{names:?}");
    }
    assert!(names.contains(&"read".to_string()));
    let echo = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__t__echo")
        .unwrap()
        .clone();
    assert_eq!(echo["input_schema"]["properties"]["text"]["type"], "string");
    assert!(echo["description"].as_str().unwrap().contains("Echoes"));
    assert!(system.contains("t: connected, 12 tools"), "{system}");

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
    let events = tests::mcp::ServerEvents::new();
    let (_server, url) = http_server(Some(&events)).await;
    let mut t = McpSetup::start(
        |_| format!(
            "[mcp_servers.web]\nurl = {url:?}\nheaders = {{ Authorization = \"Bearer ${{MCP_TEST_TOKEN}}\" }}\n"
        ),
        vec![
            anthropic::tool("mcp__web__echo", json!({"text": "over http"})),
            anthropic::text("done"),
        ],
        &[("MCP_TEST_TOKEN", "t0ken")],
    )
    .await;
    let run = t.run("use the web server").await;
    assert_eq!(
        tool_results(&run),
        [("mcp__web__echo".into(), false, "echo: over http".into())]
    );
    let listed = t.mcp_list();
    assert_eq!(listed[0]["transport"], "http");
    assert_eq!(listed[0]["state"], "ready");
    assert_eq!(listed[0]["tools"], 12);
    // The token is in no file the daemon wrote.
    let log = std::fs::read_to_string(t.daemon.paths().log_file()).unwrap_or_default();
    assert!(!log.contains("t0ken"));
}

#[tokio::test]
async fn a_server_that_fails_to_start_gives_an_error_naming_it_and_the_others_work() {
    let mut t = McpSetup::start(
        |events| {
            format!(
                "{}{}[mcp_servers.typo]\ncomand = \"x\"\n",
                stdio_entry("good", events, ""),
                stdio_entry("broken", events, "args = [\"--exit-at-start\"]"),
            )
        },
        vec![
            anthropic::tool("mcp__broken__echo", json!({"text": "hi"})),
            anthropic::tool("mcp__good__echo", json!({"text": "hi"})),
            anthropic::text("done"),
        ],
        &[],
    )
    .await;
    let run = t.run("try both").await;
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
    let (names, system) = offered(&t.model.received()[0].body);
    assert!(!names.iter().any(|n| n.starts_with("mcp__broken")));
    assert!(system.contains("broken: not available"), "{system}");

    let listed = t.mcp_list();
    let state = |name: &str| {
        listed
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {listed:?}"))
            .clone()
    };
    assert_eq!(state("good")["state"], "ready");
    let last_error = state("broken")["last_error"].to_string();
    assert!(
        last_error.contains("cannot open its database"),
        "{last_error}"
    );
    let typo = state("typo");
    assert_eq!(typo["state"], "broken");
    let error = typo["last_error"].as_str().unwrap();
    assert!(
        error.contains("config.toml:") && error.contains("comand"),
        "{error}"
    );
    let check = t.daemon.home.run_agentctl(&["config", "check"]);
    assert_eq!(check.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&check.stderr).contains("comand"));
}

#[tokio::test]
async fn a_server_that_exits_mid_call_is_started_again_on_the_next_call() {
    let mut t = McpSetup::start(
        |events| stdio_entry("t", events, ""),
        vec![
            anthropic::tool("mcp__t__exit", json!({})),
            anthropic::tool("mcp__t__pid", json!({})),
            anthropic::text("done"),
        ],
        &[],
    )
    .await;
    let run = t.run("crash it").await;
    let first = started_pid(&t.events.until("started").await);
    let results = tool_results(&run);
    assert!(results[0].1);
    assert!(
        results[0].2.contains("stopped during the call of `exit`"),
        "{}",
        results[0].2
    );
    let second = started_pid(&t.events.until("started").await);
    assert_ne!(first, second);
    assert_eq!(
        results[1],
        ("mcp__t__pid".into(), false, second.to_string())
    );
    assert!(tests::group_is_gone(first).await);
}

#[tokio::test]
async fn a_hanging_call_times_out_and_a_cancel_does_not_wait_for_the_server() {
    let mut t = McpSetup::start(
        |events| {
            format!(
                "{}{}",
                stdio_entry("quick", events, "call_timeout_ms = 200"),
                stdio_entry("t", events, ""),
            )
        },
        vec![
            anthropic::tool("mcp__quick__hang", json!({})),
            anthropic::text("timed out"),
            anthropic::tool("mcp__t__stubborn", json!({})),
        ],
        &[],
    )
    .await;
    let run = t.run("hang").await;
    let (_, is_error, output) = &tool_results(&run)[0];
    assert!(*is_error);
    assert!(
        output.contains("did not answer `hang` within 0.2 s"),
        "{output}"
    );
    // The server heard that the call was given up.
    t.events.until("cancelled hang").await;

    // A server that ignores the cancel does not hold the run.
    let options = t.options();
    tests::start_run(&t.client, &t.session, "hang for good", options).await;
    t.events.until("call stubborn").await;
    t.client
        .request(Request::Cancel {
            session: t.session.clone(),
        })
        .await
        .unwrap();
    let run = tests::until_finished(&mut t.incoming).await;
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
    let mut t = McpSetup::start(
        |events| stdio_entry("t", events, ""),
        vec![
            anthropic::tool("mcp__t__add_tool", json!({})),
            anthropic::tool("mcp__t__late", json!({})),
            anthropic::text("done"),
        ],
        &[],
    )
    .await;
    let run = t.run("grow").await;
    let requests = t.model.received();
    let late = "mcp__t__late".to_string();
    assert!(!offered(&requests[0].body).0.contains(&late));
    assert!(offered(&requests[1].body).0.contains(&late));
    assert_eq!(
        tool_results(&run)[1],
        ("mcp__t__late".into(), false, "late tool ran".into())
    );
}

#[tokio::test]
async fn a_hostile_server_is_kept_within_bounds() {
    let mut t = McpSetup::start(
        |events| stdio_entry("h", events, "args = [\"--hostile\"]"),
        vec![
            anthropic::tool("mcp__h__flood", json!({})),
            anthropic::text("done"),
        ],
        &[],
    )
    .await;
    let run = t.run("flood").await;
    // A tool list that never ends is cut, with names every provider takes.
    let (names, _) = offered(&t.model.received()[0].body);
    let mine: Vec<&String> = names.iter().filter(|n| n.starts_with("mcp__h__")).collect();
    // At most 200 tools, and at most 256 kB of descriptions and schemas from one server.
    assert!(mine.len() > 50 && mine.len() < 200, "{}", mine.len());
    let unique: std::collections::HashSet<&&String> = mine.iter().collect();
    assert_eq!(unique.len(), mine.len());
    for name in &mine {
        assert!(name.len() <= 64, "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
    let body = t.model.received()[0].body.to_string();
    assert!(
        body.len() < 400_000,
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
    let t = McpSetup::start(
        |events| stdio_entry("t", events, ""),
        vec![
            anthropic::reply()
                .tool("mcp__t__env", json!({"name": "DAEMON_VISIBLE"}))
                .tool("mcp__t__env", json!({"name": "DAEMON_API_KEY"}))
                .build(),
            anthropic::text("done"),
            anthropic::tool("mcp__t__echo", json!({"text": "hi"})),
            anthropic::text("done"),
        ],
        &[("DAEMON_VISIBLE", "yes"), ("DAEMON_API_KEY", "daemon-key")],
    )
    .await;
    let dir = t.project.path();
    let out =
        tests::agentctl_output(&t.daemon, &t.model, dir, &["run", "--allow", "mcp", "env?"]).await;
    assert_eq!(out.code, Some(0), "{} {}", out.stdout, out.stderr);
    assert!(out.stderr.contains("t/env"), "{}", out.stderr);
    let results = t.model.received()[1].body.to_string();
    assert!(results.contains("yes"), "{results}");
    assert!(!results.contains("daemon-key"), "{results}");

    // Without --allow mcp, and nobody to ask: refused, saying how to allow it.
    let out = tests::agentctl_output(&t.daemon, &t.model, dir, &["run", "echo?"]).await;
    assert!(out.stderr.contains("t/echo"), "{}", out.stderr);
    assert!(out.stderr.contains("--allow mcp"), "{}", out.stderr);

    let status = t.daemon.home.run_agentctl(&["daemon", "status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("mcp servers:"), "{status}");
    assert!(
        status
            .lines()
            .any(|l| l.contains(" t ") && l.contains("ready")),
        "{status}"
    );
    let table = t.daemon.home.run_agentctl(&["mcp", "list"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.lines().nth(1).unwrap().starts_with("t "), "{table}");
}
