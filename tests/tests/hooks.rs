//! Hooks (docs/architecture.md#hooks): commands from config.toml that run at points of a run with
//! Claude Code's JSON on stdin, and whose exit code and JSON output refuse, allow, change or add to
//! what happens. Each test writes its hook scripts and a config naming them.

use std::path::{Path, PathBuf};

use protocol::{Event, SessionEvent, StopReason};
use serde_json::{Value, json};
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, run_options, session_in, start_run, tool_results, until_finished};

/// Writes an executable script `name` in `dir` and returns its path.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A daemon whose config.toml has `hooks` (TOML) besides quick retries.
fn daemon_with(hooks: &str) -> Daemon {
    Daemon::start_in(Home::with_config(&format!(
        "retry_base_ms = 5\nretry_max_ms = 20\n{hooks}"
    )))
}

/// Runs a prompt in `project` with `options` (which name the model server); every event.
async fn run(daemon: &Daemon, project: &Path, options: protocol::RunOptions) -> Vec<SessionEvent> {
    let (client, session, mut incoming) = session_in(daemon, project).await;
    start_run(&client, &session, "go", options).await;
    until_finished(&mut incoming).await
}

/// The `HookRan` events: (event, exit, decision).
fn hook_runs(events: &[SessionEvent]) -> Vec<(String, Option<i32>, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::HookRan {
                event,
                exit,
                decision,
                ..
            } => Some((event.clone(), *exit, decision.clone())),
            _ => None,
        })
        .collect()
}

/// Nothing granted and nobody to ask: a command is denied unless a hook allows it.
fn unattended(server: &ModelServer) -> protocol::RunOptions {
    protocol::RunOptions {
        grants: Vec::new(),
        deny_unanswered: true,
        ..run_options(server)
    }
}

#[tokio::test]
async fn pre_tool_use_exit_2_refuses_the_call_even_with_grants_and_the_model_reads_why() {
    let project = tempfile::tempdir().unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let guard = script(
        hooks.path(),
        "guard.sh",
        "cat > /dev/null; echo 'no rm in this repo' >&2; exit 2",
    );
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "rm -rf stuff; touch ran"})),
        anthropic::text("ok"),
    ])
    .await;
    let daemon = daemon_with(&format!(
        "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"{}\"\n",
        guard.display()
    ));
    // `run_options` grants commands, as `--yes` does.
    let events = run(&daemon, project.path(), run_options(&server)).await;
    let results = tool_results(&events);
    assert!(results[0].1, "{results:?}");
    assert!(results[0].2.contains("no rm in this repo"), "{results:?}");
    assert!(!project.path().join("ran").exists());
    assert_eq!(
        hook_runs(&events),
        [("PreToolUse".into(), Some(2), Some("block".into()))]
    );
    let second = &server.received()[1];
    assert!(second.body.to_string().contains("no rm in this repo"));
}

#[tokio::test]
async fn a_json_allow_answers_for_nobody_and_a_json_deny_refuses() {
    let project = tempfile::tempdir().unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let decide = script(
        hooks.path(),
        "decide.sh",
        r#"input=$(cat)
case "$input" in
  *allowed.txt*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"fine"}}' ;;
  *) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not that file"}}' ;;
esac"#,
    );
    let server = ModelServer::start(vec![
        anthropic::reply()
            .tool("bash", json!({"command": "echo yes > allowed.txt"}))
            .tool("bash", json!({"command": "echo no > other.txt"}))
            .build(),
        anthropic::text("ok"),
    ])
    .await;
    let daemon = daemon_with(&format!(
        "[[hooks.PreToolUse]]\ncommand = \"{}\"\n",
        decide.display()
    ));
    let events = run(&daemon, project.path(), unattended(&server)).await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 2);
    assert!(project.path().join("allowed.txt").exists(), "{results:?}");
    assert!(!project.path().join("other.txt").exists());
    assert!(
        results
            .iter()
            .any(|(_, e, o)| *e && o.contains("not that file")),
        "{results:?}"
    );
}

#[tokio::test]
async fn updated_input_passes_through_two_hooks_in_order() {
    let project = tempfile::tempdir().unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let first = script(
        hooks.path(),
        "first.sh",
        r#"cat > /dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"echo first >> log.txt"}}}'"#,
    );
    let second = script(
        hooks.path(),
        "second.sh",
        &format!(
            r#"cat > {}/second-saw.json; echo '{{"hookSpecificOutput":{{"hookEventName":"PreToolUse","updatedInput":{{"command":"echo second >> log.txt"}}}}}}'"#,
            hooks.path().display()
        ),
    );
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "echo original >> log.txt"})),
        anthropic::text("ok"),
    ])
    .await;
    let daemon = daemon_with(&format!(
        "[[hooks.PreToolUse]]\ncommand = \"{}\"\n[[hooks.PreToolUse]]\ncommand = \"{}\"\n",
        first.display(),
        second.display()
    ));
    run(&daemon, project.path(), run_options(&server)).await;
    let saw: Value = serde_json::from_str(
        &std::fs::read_to_string(hooks.path().join("second-saw.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(saw["tool_input"]["command"], "echo first >> log.txt");
    assert_eq!(saw["hook_event_name"], "PreToolUse");
    assert_eq!(saw["tool_name"], "bash");
    assert_eq!(
        std::fs::read_to_string(project.path().join("log.txt")).unwrap(),
        "second\n"
    );
}

#[tokio::test]
async fn post_tool_use_sees_the_response_and_its_session() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "alpha\n").unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let post = script(
        hooks.path(),
        "post.sh",
        &format!(
            "cat > {dir}/post.json; echo \"$AGENTD_SESSION_ID\" > {dir}/session.txt",
            dir = hooks.path().display()
        ),
    );
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "a.txt"})),
        anthropic::text("ok"),
    ])
    .await;
    let daemon = daemon_with(&format!(
        "[[hooks.PostToolUse]]\nmatcher = \"read|write\"\ncommand = \"{}\"\n",
        post.display()
    ));
    let events = run(&daemon, project.path(), run_options(&server)).await;
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(hooks.path().join("post.json")).unwrap())
            .unwrap();
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert!(input["tool_response"].as_str().unwrap().contains("alpha"));
    let session = events[0].session.as_str().to_string();
    assert_eq!(input["session_id"], session.as_str());
    assert_eq!(
        std::fs::read_to_string(hooks.path().join("session.txt"))
            .unwrap()
            .trim(),
        session
    );
    // The transcript is JSON lines that hold the read.
    let transcript = std::fs::read_to_string(input["transcript_path"].as_str().unwrap()).unwrap();
    assert!(
        transcript
            .lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok())
    );
    assert!(transcript.contains("tool_use"), "{transcript}");
}

#[tokio::test]
async fn user_prompt_submit_context_reaches_the_model() {
    let project = tempfile::tempdir().unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let context = script(
        hooks.path(),
        "context.sh",
        r#"cat > /dev/null; echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"CONTEXT-FROM-HOOK: the build is broken"}}'"#,
    );
    let server = ModelServer::start(vec![anthropic::text("ok")]).await;
    let daemon = daemon_with(&format!(
        "[[hooks.UserPromptSubmit]]\ncommand = \"{}\"\n",
        context.display()
    ));
    run(&daemon, project.path(), run_options(&server)).await;
    assert!(
        server.received()[0]
            .body
            .to_string()
            .contains("CONTEXT-FROM-HOOK: the build is broken")
    );
}

#[tokio::test]
async fn a_stop_hook_that_blocks_sends_the_run_on_and_sees_stop_hook_active_next() {
    let project = tempfile::tempdir().unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let stop = script(
        hooks.path(),
        "stop.sh",
        &format!(
            r#"input=$(cat); echo "$input" >> {}/stops.jsonl
case "$input" in
  *'"stop_hook_active":false'*) echo '{{"decision":"block","reason":"run the tests first"}}' ;;
esac"#,
            hooks.path().display()
        ),
    );
    let server =
        ModelServer::start(vec![anthropic::text("done"), anthropic::text("tests pass")]).await;
    let daemon = daemon_with(&format!(
        "[[hooks.Stop]]\ncommand = \"{}\"\n",
        stop.display()
    ));
    let events = run(&daemon, project.path(), run_options(&server)).await;
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Completed);
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert!(received[1].body.to_string().contains("run the tests first"));
    let stops: Vec<Value> = std::fs::read_to_string(hooks.path().join("stops.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(stops.len(), 2);
    assert_eq!(stops[0]["stop_hook_active"], false);
    assert_eq!(stops[1]["stop_hook_active"], true);
}

#[tokio::test]
async fn three_stop_blocks_in_a_row_end_the_run_anyway() {
    let project = tempfile::tempdir().unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let stop = script(
        hooks.path(),
        "stop.sh",
        r#"cat > /dev/null; echo '{"decision":"block","reason":"never done"}'"#,
    );
    let server = ModelServer::start(vec![
        anthropic::text("one"),
        anthropic::text("two"),
        anthropic::text("three"),
        anthropic::text("four"),
    ])
    .await;
    let daemon = daemon_with(&format!(
        "[[hooks.Stop]]\ncommand = \"{}\"\n",
        stop.display()
    ));
    let events = run(&daemon, project.path(), run_options(&server)).await;
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Completed);
    assert_eq!(server.received().len(), 3);
    assert_eq!(hook_runs(&events).len(), 3);
}

#[tokio::test]
async fn a_hook_that_hangs_is_killed_and_on_error_decides() {
    let project = tempfile::tempdir().unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let hang = script(hooks.path(), "hang.sh", "sleep 60");
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "touch first"})),
        anthropic::text("ok"),
        anthropic::tool("bash", json!({"command": "touch second"})),
        anthropic::text("ok"),
    ])
    .await;
    let config = |on_error: &str| {
        format!(
            "[[hooks.PreToolUse]]\ncommand = \"{}\"\ntimeout_secs = 1\non_error = \"{on_error}\"\n",
            hang.display()
        )
    };
    let daemon = daemon_with(&config("ignore"));
    let events = run(&daemon, project.path(), run_options(&server)).await;
    assert!(
        project.path().join("first").exists(),
        "ignored: the call ran"
    );
    assert_eq!(
        hook_runs(&events),
        [("PreToolUse".into(), None, Some("error".into()))]
    );
    drop(daemon);
    let daemon = daemon_with(&config("block"));
    let events = run(&daemon, project.path(), run_options(&server)).await;
    assert!(
        !project.path().join("second").exists(),
        "blocked: the call did not run"
    );
    assert!(tool_results(&events)[0].2.contains("timed out"));
}

#[tokio::test]
async fn a_hook_that_prints_10_mb_is_capped() {
    let project = tempfile::tempdir().unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let loud = script(
        hooks.path(),
        "loud.sh",
        "cat > /dev/null; head -c 10000000 /dev/zero | tr '\\0' x; head -c 10000000 /dev/zero >&2",
    );
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "touch warm"})),
        anthropic::text("ok"),
        anthropic::tool("write", json!({"path": "ran", "content": "x"})),
        anthropic::text("ok"),
    ])
    .await;
    let daemon = daemon_with(&format!(
        "[[hooks.PreToolUse]]\nmatcher = \"write\"\ncommand = \"{}\"\n",
        loud.display()
    ));
    // A first run without the hook: what any run costs is paid before the measure.
    run(&daemon, project.path(), run_options(&server)).await;
    let before = tests::peak_rss(daemon.pid());
    let events = run(&daemon, project.path(), run_options(&server)).await;
    assert!(project.path().join("ran").exists());
    assert_eq!(hook_runs(&events).len(), 1);
    let grown = tests::peak_rss(daemon.pid()).saturating_sub(before);
    assert!(grown < 8 << 20, "the daemon grew by {grown} bytes");
}

#[tokio::test]
async fn hooks_are_listed_and_checked_with_their_line() {
    let daemon = daemon_with(
        "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"./check.sh\"\ntimeout_secs = 5\n",
    );
    let out = daemon.home.run_agentctl(&["hooks", "list", "--json"]);
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["event"], "PreToolUse");
    assert_eq!(listed[0]["matcher"], "bash");
    assert_eq!(listed[0]["timeout_secs"], 5);
    let broken = Home::with_config("max_turns = 3\n\n[[hooks.PreToolUze]]\ncommand = \"x\"\n");
    let check = broken.run_agentctl(&["config", "check"]);
    assert!(!check.status.success());
    let said = String::from_utf8_lossy(&check.stderr).into_owned()
        + &String::from_utf8_lossy(&check.stdout);
    assert!(said.contains("unknown hook event `PreToolUze`"), "{said}");
    assert!(said.contains("config.toml:"), "{said}");
    let regex = Home::with_config("[[hooks.PreToolUse]]\nmatcher = \"(\"\ncommand = \"x\"\n");
    let check = regex.run_agentctl(&["config", "check"]);
    let said = String::from_utf8_lossy(&check.stderr).into_owned()
        + &String::from_utf8_lossy(&check.stdout);
    assert!(
        said.contains("not a regular expression") && said.contains(":2"),
        "{said}"
    );
}

#[tokio::test]
async fn a_hook_run_is_a_line_in_the_json_view() {
    let project = tempfile::tempdir().unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let quiet = script(hooks.path(), "quiet.sh", "cat > /dev/null");
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "true"})),
        anthropic::text("ok"),
    ])
    .await;
    let daemon = daemon_with(&format!(
        "[[hooks.PreToolUse]]\ncommand = \"{}\"\n",
        quiet.display()
    ));
    let out = daemon
        .home
        .agentctl_with(&server, project.path(), &["run", "--json", "--yes", "go"])
        .output()
        .await
        .unwrap();
    let line = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.contains("\"hook_ran\""))
        .map(str::to_string)
        .expect("a hook_ran line");
    let line: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(line["event"], "PreToolUse");
    assert_eq!(line["exit"], 0);
}

#[tokio::test]
async fn a_hooks_allow_answers_only_the_modes_question_never_a_rule_or_a_protected_path() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("victim"), "keep\n").unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let allow_all = script(
        hooks.path(),
        "allow.sh",
        r#"cat > /dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'"#,
    );
    let daemon = daemon_with(&format!(
        "[permissions]\ndeny = [\"bash:rm*\"]\n[[hooks.PreToolUse]]\ncommand = \"{}\"\n[[hooks.PermissionRequest]]\ncommand = \"{}\"\n",
        allow_all.display(),
        allow_all.display()
    ));
    let config = daemon.home.paths().config_file();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .tool("bash", json!({"command": "eval \"$(printf 'r%s -f victim' m)\""}))
            .tool("write", json!({"path": config.display().to_string(), "content": "[[hooks.Stop]]\ncommand = \"touch pwned\"\n"}))
            .tool("bash", json!({"command": "echo plain > plain.txt"}))
            .build(),
        anthropic::text("ok"),
    ])
    .await;
    let events = run(&daemon, project.path(), unattended(&server)).await;
    assert!(project.path().join("victim").exists(), "the deny rule held");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        !text.contains("pwned"),
        "the daemon's config was not written"
    );
    // The mode's own question is the hook's to answer.
    assert!(
        project.path().join("plain.txt").exists(),
        "{:?}",
        tool_results(&events)
    );
}

#[tokio::test]
async fn a_refused_prompt_is_never_stored_and_queued_messages_are_screened_too() {
    use protocol::{Delivery, Request};
    let project = tempfile::tempdir().unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let guard = script(
        hooks.path(),
        "guard.sh",
        r#"case "$(cat)" in *FORBIDDEN*) echo 'not that' >&2; exit 2 ;; esac"#,
    );
    let gate = tests::model_server::Gate::new();
    let server = ModelServer::start(vec![
        anthropic::text("first answer").hold_after(2, &gate),
        anthropic::text("second answer"),
    ])
    .await;
    let daemon = daemon_with(&format!(
        "[[hooks.UserPromptSubmit]]\ncommand = \"{}\"\n",
        guard.display()
    ));
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let refused = client
        .request(Request::Send {
            session: session.clone(),
            text: "FORBIDDEN first".into(),
            images: Vec::new(),
            delivery: Delivery::FollowUp,
            options: run_options(&server),
        })
        .await;
    assert!(refused.unwrap_err().to_string().contains("not that"));
    start_run(&client, &session, "allowed prompt", run_options(&server)).await;
    server.wait_for_requests(1).await;
    // While the run goes, a queued message and a steer are screened too.
    for (text, delivery) in [
        ("FORBIDDEN queued", Delivery::FollowUp),
        ("FORBIDDEN steer", Delivery::Steer),
    ] {
        let sent = client
            .request(Request::Send {
                session: session.clone(),
                text: text.into(),
                images: Vec::new(),
                delivery,
                options: run_options(&server),
            })
            .await;
        assert!(sent.is_err(), "{text} was refused");
    }
    client
        .request(Request::Send {
            session: session.clone(),
            text: "allowed follow-up".into(),
            images: Vec::new(),
            delivery: Delivery::FollowUp,
            options: run_options(&server),
        })
        .await
        .unwrap();
    gate.release();
    until_finished(&mut incoming).await;
    let everything: String = server
        .received()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(!everything.contains("FORBIDDEN"), "{everything}");
    assert!(everything.contains("allowed follow-up"));
}

#[tokio::test]
async fn subagent_stop_permission_request_and_session_end_hooks_run_where_they_belong() {
    use protocol::Request;
    let project = tempfile::tempdir().unwrap();
    let hooks = tempfile::tempdir().unwrap();
    let log = hooks.path().join("events.log");
    let record = script(
        hooks.path(),
        "record.sh",
        &format!(
            r#"input=$(cat); printf '%s\n' "$input" | sed -n 's/.*"hook_event_name":"\([A-Za-z]*\)".*/\1/p' >> {log}"#,
            log = log.display()
        ),
    );
    let allow = script(
        hooks.path(),
        "allow.sh",
        r#"cat > /dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","permissionDecision":"allow"}}'"#,
    );
    let ended = hooks.path().join("ended");
    tests::make_fifo(&ended);
    let end = script(
        hooks.path(),
        "end.sh",
        &format!(
            r#"case "$(cat)" in *'"reason":"delete"'*) echo $$ > {} ;; esac"#,
            ended.display()
        ),
    );
    let server = ModelServer::start(vec![
        anthropic::tool(
            "task",
            json!({"description": "child", "prompt": "HOOKED-CHILD"}),
        ),
        anthropic::tool("bash", json!({"command": "touch asked-and-allowed"})),
        anthropic::text("parent done"),
    ])
    .await;
    server.route("HOOKED-CHILD", vec![anthropic::text("child done")]);
    let daemon = daemon_with(&format!(
        "[[hooks.Stop]]\ncommand = \"{r}\"\n[[hooks.SubagentStop]]\ncommand = \"{r}\"\n[[hooks.SessionEnd]]\ncommand = \"{e}\"\n[[hooks.PermissionRequest]]\ncommand = \"{a}\"\n",
        r = record.display(),
        e = end.display(),
        a = allow.display()
    ));
    // Someone could answer, but nobody does: the PermissionRequest hook answers.
    let options = tests::asking_options(&server);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "go", options).await;
    let events = until_finished(&mut incoming).await;
    assert!(
        project.path().join("asked-and-allowed").exists(),
        "{:?}",
        tool_results(&events)
    );
    assert!(events.iter().any(|e| matches!(
        &e.event,
        Event::PermissionResolved { by_client, .. } if by_client.contains("PermissionRequest hook")
    )));
    let seen = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        seen.lines().collect::<Vec<_>>(),
        ["SubagentStop", "Stop"],
        "{seen}"
    );
    // Deleting a session runs its SessionEnd hook (in the background); one without children,
    // so that one hook writes into the FIFO.
    let _ = session;
    let plain = tests::create_session(&client, project.path()).await.id;
    client
        .request(Request::DeleteSession {
            session: plain,
            force: false,
        })
        .await
        .unwrap();
    // The hook writes its pid into the FIFO: it ran, with reason "delete".
    assert!(tests::read_fifo(&ended).await > 0);
}
