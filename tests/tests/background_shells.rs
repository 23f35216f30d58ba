//! Shells that keep running (docs/architecture.md#background-shells): `bash` with
//! `"background": true` returns at once, `bash_output` reads what the shell printed since the
//! last look (a bounded ring), `kill_shell` ends it with its processes; the same permission
//! question and sandbox as any command; at most `[tools] max_background_shells` at once;
//! `agentctl shells` and `--json` show them.

use std::time::Duration;

use protocol::{Decision, Event, Mode, Request, ShellEnd};
use serde_json::json;
use tests::model_server::anthropic;
use tests::shells::{background, free_port, read_pid, shell_events, shells};
use tests::{
    TestEnv, WAIT, answer, asking_options, events_until, group_is_gone, next_event, tool_results,
    until_finished,
};

#[tokio::test]
async fn a_server_started_in_the_background_is_polled_fetched_and_killed() {
    let port = free_port();
    let serve =
        format!("echo $$ > server.pid; exec python3 -u -m http.server {port} --bind 127.0.0.1");
    let fetch = format!("curl -s -o /dev/null -w 'status %{{http_code}}' http://127.0.0.1:{port}/");
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", background(&serve)),
            anthropic::tool("bash_output", json!({"id": 1, "wait_ms": 15000})),
            anthropic::tool("bash", json!({"command": fetch})),
            anthropic::tool("kill_shell", json!({"id": 1})),
            anthropic::text("The server answered."),
        ])
        .start()
        .await;
    let events = env.run("serve the directory and check it").await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(results.iter().all(|r| !r.1), "{results:?}");
    assert!(
        results[0]
            .2
            .starts_with("started shell 1 in the background"),
        "{}",
        results[0].2
    );
    assert!(
        results[1].2.contains("Serving HTTP on 127.0.0.1 port"),
        "{}",
        results[1].2
    );
    assert!(
        results[1].2.contains("[shell 1 is still running"),
        "{}",
        results[1].2
    );
    assert!(results[2].2.contains("status 200"), "{}", results[2].2);
    assert!(
        results[3].2.starts_with("shell 1 ended (killed)"),
        "{}",
        results[3].2
    );
    // The server saw the fetch, and the kill ended its process.
    assert!(
        results[3].2.contains("\"GET / HTTP/1.1\" 200"),
        "{}",
        results[3].2
    );
    let pid = read_pid(env.project(), "server.pid").await;
    assert!(group_is_gone(pid).await, "the server ({pid}) still runs");
    assert_eq!(
        shell_events(&events),
        [(1, None), (1, Some(ShellEnd::Killed))]
    );
}

#[tokio::test]
async fn a_ninth_shell_is_refused_while_eight_run() {
    let mut reply = anthropic::reply();
    for _ in 0..9 {
        reply = reply.tool("bash", background("sleep 600"));
    }
    let mut env = TestEnv::builder()
        .model(vec![reply.build(), anthropic::text("Nine asked.")])
        .start()
        .await;
    let events = env.run("start nine").await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 9);
    for (i, result) in results.iter().take(8).enumerate() {
        assert!(
            result.2.starts_with(&format!("started shell {}", i + 1)),
            "{}",
            result.2
        );
    }
    assert!(results[8].1);
    assert!(
        results[8].2.contains("max_background_shells"),
        "{}",
        results[8].2
    );
    assert!(
        results[8].2.contains("end one with kill_shell"),
        "{}",
        results[8].2
    );
    assert_eq!(shells(&env.client, &env.session).await.len(), 8);
    env.client
        .request(Request::DeleteSession {
            session: env.session.clone(),
            force: true,
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn the_limit_comes_from_the_configuration() {
    let mut env = TestEnv::builder()
        .config("retry_base_ms = 5\n[tools]\nmax_background_shells = 1\n")
        .model(vec![
            anthropic::reply()
                .tool("bash", background("sleep 600"))
                .tool("bash", background("sleep 600"))
                .build(),
            anthropic::text("One ran."),
        ])
        .start()
        .await;
    let results = tool_results(&env.run("start two").await);
    assert!(!results[0].1, "{}", results[0].2);
    assert!(results[1].1, "{}", results[1].2);
    assert!(
        results[1].2.contains("already runs 1 background shells"),
        "{}",
        results[1].2
    );
}

#[tokio::test]
async fn shell_events_are_json_lines() {
    let env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", background("sleep 600")),
            anthropic::tool("kill_shell", json!({"id": 1})),
            anthropic::text("Started and ended."),
        ])
        .start()
        .await;
    let mut run = tests::json_run::JsonRun::start(&env.daemon, &env.server, env.project(), "go");
    let started = run.until("shell_started").await;
    assert_eq!(started["shell"], 1);
    assert_eq!(started["command"], "sleep 600");
    let ended = run.until("shell_ended").await;
    assert_eq!(ended["shell"], 1);
    assert_eq!(ended["end"], json!({"how": "killed"}));
    run.rest().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agentctl_shells_lists_them_and_kills_one() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool(
                "bash",
                background("echo $$ > tick.pid; echo first; echo second; exec sleep 600"),
            ),
            anthropic::tool("bash_output", json!({"id": 1, "wait_ms": 10000})),
            anthropic::text("Ticking."),
        ])
        .start()
        .await;
    env.run("tick").await;
    let pid = read_pid(env.project(), "tick.pid").await;
    let id = env.session.0.clone();
    let home = &env.daemon.home;
    // The two lines may reach the ring a moment apart.
    let deadline = std::time::Instant::now() + WAIT;
    let listed = loop {
        let out = home.agentctl(&["shells", &id]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("│ second") || std::time::Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let lines: Vec<&str> = listed.lines().collect();
    assert!(
        lines[0].starts_with("shell 1 · running · started "),
        "{listed}"
    );
    assert!(
        lines[0].ends_with("· echo $$ > tick.pid; echo first; echo second; exec sleep 600"),
        "{listed}"
    );
    assert_eq!(&lines[1..], ["  │ first", "  │ second"], "{listed}");
    let json = home.agentctl(&["shells", &id, "--json"]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json[0]["shell"], 1);
    assert_eq!(json[0]["running"], true);
    assert_eq!(json[0]["tail"], "first\nsecond");

    let killed = home
        .agentctl(&["shells", &id, "--kill", "1"])
        .output()
        .unwrap();
    assert!(
        killed.status.success(),
        "{}",
        String::from_utf8_lossy(&killed.stderr)
    );
    assert!(
        String::from_utf8_lossy(&killed.stdout).contains("shell 1 of session"),
        "{}",
        String::from_utf8_lossy(&killed.stdout)
    );
    assert!(group_is_gone(pid).await, "the shell ({pid}) still runs");
    // The event came before the answer.
    assert_eq!(
        shells(&env.client, &env.session).await[0].end,
        Some(ShellEnd::Killed)
    );
    let events = events_until(&mut env.incoming, |e| matches!(e, Event::ShellEnded { .. })).await;
    assert_eq!(shell_events(&events), [(1, Some(ShellEnd::Killed))]);

    let again = home
        .agentctl(&["shells", &id, "--kill", "1"])
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("shell 1 already ended: killed"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let unknown = home
        .agentctl(&["shells", &id, "--kill", "7"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("its shells are: 1 (killed: echo"),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );
}

#[tokio::test]
async fn bash_output_of_an_unknown_shell_says_which_there_are() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash_output", json!({"id": 3})),
            anthropic::tool("bash", background("sleep 600")),
            anthropic::tool("bash_output", json!({"id": 3})),
            anthropic::text("No such shell."),
        ])
        .start()
        .await;
    let results = tool_results(&env.run("look").await);
    assert!(results[0].1);
    assert!(
        results[0]
            .2
            .contains("no background shell 3: this session has none"),
        "{}",
        results[0].2
    );
    assert!(results[2].1);
    assert!(
        results[2]
            .2
            .contains("its shells are: 1 (running: sleep 600)"),
        "{}",
        results[2].2
    );
}

#[tokio::test]
async fn output_beyond_the_ring_is_reported_as_dropped() {
    // The shell prints 3 MB once told to; the foreground call waits until it has.
    let flood = "until [ -e go ]; do sleep 0.01; done; \
                 head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end; touch done; exec sleep 600";
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", background(flood)),
            anthropic::tool(
                "bash",
                json!({"command": "touch go; until [ -e done ]; do sleep 0.01; done"}),
            ),
            anthropic::tool("bash_output", json!({"id": 1, "wait_ms": 5000})),
            anthropic::tool("kill_shell", json!({"id": 1})),
            anthropic::text("Too much output."),
        ])
        .start()
        .await;
    let results = tool_results(&env.run("flood").await);
    let look = &results[2].2;
    let dropped: u64 = look
        .strip_prefix('[')
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no dropped bytes: {}", look.get(..200).unwrap_or(look)));
    // At most the pipe's buffer may not have reached the ring yet.
    let printed = 3_000_000 + "\nend\n".len() as u64;
    assert!(
        dropped <= printed - (1 << 20) && dropped + 65_536 >= printed - (1 << 20),
        "{dropped}"
    );
    assert!(
        look.contains("bytes printed since the last look were dropped"),
        "{}",
        look.get(..300).unwrap_or(look)
    );
    assert!(look.contains("bytes omitted"), "the look is capped");
    assert!(look.len() < 32_000, "{}", look.len());
}

#[tokio::test]
async fn a_background_command_asks_as_any_command_does() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", background("touch started; sleep 600")),
            anthropic::text("Not allowed."),
        ])
        .start()
        .await;
    let options = asking_options(&env.server);
    env.start_run_with("start it", options).await;
    let request = loop {
        if let Event::PermissionRequested { request, .. } =
            next_event(&mut env.incoming).await.event
        {
            break request;
        }
    };
    answer(&env.client, &env.session, request, Decision::Deny)
        .await
        .unwrap();
    let events = until_finished(&mut env.incoming).await;
    assert!(shell_events(&events).is_empty());
    assert!(!env.project().join("started").exists());
    assert!(shells(&env.client, &env.session).await.is_empty());
}

#[tokio::test]
async fn a_background_command_stays_in_the_sandbox_for_its_life() {
    let outside = tempfile::tempdir().unwrap();
    let late = outside.path().join("late");
    let confined = format!(
        "until [ -e go ]; do sleep 0.01; done; touch {}; echo late=$?; exec sleep 600",
        late.display()
    );
    let mut env = TestEnv::builder()
        .mode(Mode::Auto)
        .model(vec![
            anthropic::tool("bash", background(&confined)),
            anthropic::tool("bash", json!({"command": "touch go"})),
            anthropic::tool("bash_output", json!({"id": 1, "wait_ms": 10000})),
            anthropic::tool("kill_shell", json!({"id": 1})),
            anthropic::text("Confined."),
        ])
        .start()
        .await;
    if !env.daemon.sandbox_or_skip() {
        return;
    }
    let options = protocol::RunOptions {
        grants: Vec::new(),
        ..env.options()
    };
    let results = tool_results(&env.run_with("try to get out", options).await);
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(
        results[0].2.starts_with("started shell 1"),
        "{}",
        results[0].2
    );
    assert!(results[2].2.contains("late=1"), "{}", results[2].2);
    assert!(
        !late.exists(),
        "the shell wrote outside the session directory"
    );
    assert!(
        results[3].2.starts_with("shell 1 ended (killed)"),
        "{}",
        results[3].2
    );
}
