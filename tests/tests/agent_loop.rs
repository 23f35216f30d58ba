//! The agent loop's branches (docs/architecture.md#the-agent-loop), driven through the protocol
//! client against the real daemon and a scripted Anthropic server.

use protocol::{Event, ModelStopReason, StopReason};
use serde_json::json;
use tests::model_server::{Gate, anthropic};
use tests::{TestEnv, finished, next_event, stop_and_error, tool_results, until_finished};

#[tokio::test]
async fn a_tool_error_goes_back_to_the_model_which_tries_again() {
    let mut env = TestEnv::builder()
        .file("README.md", "hello\n")
        .model(vec![
            anthropic::tool("read", json!({"path": "README.txt"})),
            anthropic::tool("read", json!({"path": "README.md"})),
            anthropic::text("It says hello."),
        ])
        .start()
        .await;
    let events = env.run("read the readme").await;
    let results = tool_results(&events);
    assert!(results[0].1);
    assert_eq!(results[0].2, "cannot read README.txt: no such file");
    assert_eq!(results[1], ("read".into(), false, "     1\thello\n".into()));
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            turns: 3,
            ..
        }
    ));
    // The model saw the error as an error result.
    let second = &env.server.received()[1].body["messages"][2]["content"][0];
    assert_eq!(second["is_error"], true);
}

#[tokio::test]
async fn reaching_max_turns_answers_the_calls_unrun_and_stops() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("glob", json!({"pattern": "*"})),
            anthropic::reply()
                .tool("glob", json!({"pattern": "a"}))
                .tool("glob", json!({"pattern": "b"}))
                .build(),
        ])
        .start()
        .await;
    let mut options = env.options();
    options.max_turns = Some(2);
    let events = env.run_with("look around", options).await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 3);
    for result in &results[1..] {
        assert_eq!(result.2, "(not executed: reached max turns)");
        assert!(result.1);
    }
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::MaxTurns,
            turns: 2,
            ..
        }
    ));
    assert_eq!(env.server.received().len(), 2);
}

#[tokio::test]
async fn calls_of_a_reply_cut_at_the_output_limit_are_rejected_and_the_loop_goes_on() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::reply()
                .tool("write", json!({"path": "a.txt", "content": "par"}))
                .stop("max_tokens")
                .build(),
            anthropic::text("I will stop here."),
        ])
        .start()
        .await;
    let events = env.run("write a file").await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 1);
    assert!(results[0].1);
    assert!(
        results[0]
            .2
            .starts_with("not executed: the reply was cut off at the output limit"),
        "{}",
        results[0].2
    );
    assert!(
        !env.project().join("a.txt").exists(),
        "the truncated call never ran"
    );
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            truncated: false,
            turns: 2,
            ..
        }
    ));
}

#[tokio::test]
async fn a_text_reply_cut_at_the_output_limit_completes_as_truncated() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::reply()
                .text("The answer is")
                .stop("max_tokens")
                .build(),
        ])
        .start()
        .await;
    let events = env.run("explain").await;
    assert!(events.iter().any(|e| matches!(
        &e.event,
        Event::AssistantMessage {
            stop_reason: ModelStopReason::MaxTokens,
            ..
        }
    )));
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            truncated: true,
            ..
        }
    ));
}

#[tokio::test]
async fn cancel_during_a_model_stream_saves_no_partial_reply() {
    let gate = Gate::new();
    // message_start, content_block_start, ping, first text delta; then the stream waits.
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::text("Half of an answer that never ends").hold_after(4, &gate),
            anthropic::text("Fresh answer."),
        ])
        .start()
        .await;
    env.start_run("first").await;
    loop {
        if let Event::TextDelta { .. } = next_event(&mut env.incoming).await.event {
            break;
        }
    }
    env.cancel().await;
    let events = until_finished(&mut env.incoming).await;
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Aborted,
            turns: 0,
            ..
        }
    ));
    let (_, history) = env.client.history(&env.session).await.unwrap();
    assert!(
        !history
            .iter()
            .any(|e| matches!(e.event, Event::AssistantMessage { .. })),
        "no partial reply in the history"
    );

    // The next run's request holds both user messages and no trace of the partial reply.
    env.start_run("second").await;
    until_finished(&mut env.incoming).await;
    let messages = &env.server.received()[1].body["messages"];
    assert_eq!(messages.as_array().unwrap().len(), 1, "{messages}");
    assert_eq!(messages[0]["content"][0]["text"], "first");
    assert_eq!(messages[0]["content"][1]["text"], "second");
    gate.release();
}

#[tokio::test]
async fn cancel_during_a_tool_batch_fills_the_calls_that_never_ran() {
    let setup = TestEnv::builder();
    let fifo = setup.project().join("started");
    tests::make_fifo(&fifo);
    let mut env = setup
        .model(vec![
            anthropic::reply()
                .tool("bash", json!({"command": "echo $$ > started; sleep 30"}))
                .tool("write", json!({"path": "after.txt", "content": "x"}))
                .build(),
        ])
        .start()
        .await;
    env.start_run("work").await;
    let pgid = tests::read_fifo(&fifo).await;
    env.cancel().await;
    let events = until_finished(&mut env.incoming).await;
    let results = tool_results(&events);
    assert!(
        results[0].2.contains("interrupted: the run was cancelled"),
        "{}",
        results[0].2
    );
    assert_eq!(
        results[1],
        (
            "write".into(),
            true,
            "(interrupted before this tool ran)".into()
        )
    );
    assert!(!env.project().join("after.txt").exists());
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Aborted,
            ..
        }
    ));
    assert!(
        tests::group_is_gone(pgid).await,
        "process group {pgid} still has live processes"
    );
}

#[tokio::test]
async fn safe_calls_of_one_batch_start_together() {
    let mut env = TestEnv::builder()
        .file("a.txt", "from a\n")
        .file("b.txt", "from b\n")
        .model(vec![
            anthropic::reply()
                .tool("read", json!({"path": "a.txt"}))
                .tool("read", json!({"path": "b.txt"}))
                .build(),
            anthropic::text("done"),
        ])
        .start()
        .await;
    let events = env.run("read both").await;
    // Both calls of the batch are under way before either has a result (the pool's own test
    // shows that calls under way at once really run at once).
    let order = tests::call_order(&events);
    assert_eq!(order, ["call", "call", "result", "result"]);
    // Results go to the model in call order.
    let content = &env.server.received()[1].body["messages"][2]["content"];
    assert!(content[0]["content"].as_str().unwrap().contains("from a"));
    assert!(content[1]["content"].as_str().unwrap().contains("from b"));
}

#[tokio::test]
async fn unsafe_calls_run_one_at_a_time_in_order() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::reply()
                .tool(
                    "bash",
                    json!({"command": "echo start1 >> log; echo end1 >> log"}),
                )
                .tool(
                    "bash",
                    json!({"command": "echo start2 >> log; echo end2 >> log"}),
                )
                .tool("read", json!({"path": "log"}))
                .tool(
                    "edit",
                    json!({"path": "log", "old_string": "end2", "new_string": "END2"}),
                )
                .build(),
            anthropic::text("done"),
        ])
        .start()
        .await;
    let events = env.run("go").await;
    let order = tests::call_order(&events);
    assert_eq!(
        order,
        [
            "call", "result", "call", "result", "call", "result", "call", "result"
        ]
    );
    let log = std::fs::read_to_string(env.project().join("log")).unwrap();
    assert_eq!(log, "start1\nend1\nstart2\nEND2\n");
}

#[tokio::test]
async fn unknown_tools_get_an_error_and_three_in_a_row_stop_the_run() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("fly", json!({})),
            anthropic::tool("teleport", json!({"to": "moon"})),
            anthropic::tool("fly", json!({"high": true})),
            anthropic::text("never asked"),
        ])
        .start()
        .await;
    let events = env.run("go").await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 3);
    // The tools the model was offered: `web_search` is not configured here.
    assert_eq!(
        results[0].2,
        "unknown tool `fly`; the available tools are: read, write, edit, bash, bash_output, \
         kill_shell, grep, glob, fetch, todo, task"
    );
    let (stop_reason, error) = stop_and_error(&events);
    assert_eq!(stop_reason, StopReason::Health);
    assert!(error.as_deref().unwrap().contains("do not exist"));
    assert_eq!(env.server.received().len(), 3);
}

#[tokio::test]
async fn identical_replies_raise_a_health_event_and_then_stop_the_run() {
    let mut script: Vec<_> = (0..5)
        .map(|_| anthropic::tool("read", json!({"path": "a.txt"})))
        .collect();
    script.push(anthropic::text("ok"));
    let mut env = TestEnv::builder()
        .file("a.txt", "a\n")
        .model(script)
        .start()
        .await;
    let events = env.run("go").await;
    let health: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Health { kind, detail } => Some((*kind, detail.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(health.len(), 1, "{health:?}");
    assert_eq!(health[0].0, protocol::HealthKind::RepeatedCalls);
    // Warned at the third identical reply, stopped at the fourth: the same calls, the same
    // results.
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Health,
            ..
        }
    ));
    assert_eq!(env.server.received().len(), 4);
}

#[tokio::test]
async fn edits_that_match_nothing_or_more_than_once_are_refused_clearly() {
    let mut env = TestEnv::builder()
        .file("m.rs", "let x = 1;\nlet x = 1;\n")
        .model(vec![
            anthropic::tool("read", json!({"path": "m.rs"})),
            anthropic::tool("edit", json!({"path": "m.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"})),
            anthropic::tool("edit", json!({"path": "m.rs", "old_string": "let y", "new_string": "let z"})),
            anthropic::tool("edit", json!({"path": "m.rs", "old_string": "let x = 1;\nlet x", "new_string": "let x = 1;\nlet y"})),
            anthropic::text("done"),
        ])
        .start()
        .await;
    env.start_run("go").await;
    let results = tool_results(&until_finished(&mut env.incoming).await);
    let results = &results[1..];
    assert!(
        results[0].1 && results[0].2.contains("occurs 2 times"),
        "{}",
        results[0].2
    );
    assert!(
        results[1].1 && results[1].2.contains("was not found"),
        "{}",
        results[1].2
    );
    assert!(!results[2].1, "{}", results[2].2);
    assert!(
        results[2].2.contains("-let x = 1;") && results[2].2.contains("+let y = 1;"),
        "{}",
        results[2].2
    );
    assert_eq!(
        std::fs::read_to_string(env.project().join("m.rs")).unwrap(),
        "let x = 1;\nlet y = 1;\n"
    );
}

#[tokio::test]
async fn bash_times_out_and_caps_long_output() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool(
                "bash",
                json!({"command": "echo before; sleep 30", "timeout_ms": 300}),
            ),
            anthropic::tool("bash", json!({"command": "seq 1 200000"})),
            anthropic::text("done"),
        ])
        .start()
        .await;
    env.start_run("go").await;
    let results = tool_results(&until_finished(&mut env.incoming).await);
    assert!(results[0].1);
    assert!(results[0].2.starts_with("before\n"), "{}", results[0].2);
    assert!(
        results[0].2.contains("timed out after 300 ms"),
        "{}",
        results[0].2
    );
    let long = &results[1].2;
    assert!(!results[1].1);
    assert!(long.starts_with("1\n2\n3\n"), "head kept");
    assert!(
        long.ends_with("199999\n200000\n[exit code: 0]"),
        "tail kept"
    );
    assert!(long.contains("omitted"), "a note says output was left out");
    assert!(long.chars().count() < 31_000, "{}", long.chars().count());
}

#[tokio::test]
async fn a_run_without_grants_denies_writes_and_commands_with_a_hint() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::reply()
                .tool("write", json!({"path": "x.txt", "content": "x"}))
                .tool("bash", json!({"command": "touch y.txt"}))
                .build(),
            anthropic::text("I could not."),
        ])
        .start()
        .await;
    let mut options = env.options();
    options.grants.clear();
    env.start_run_with("go", options).await;
    let results = tool_results(&until_finished(&mut env.incoming).await);
    assert_eq!(
        results[0],
        (
            "write".into(),
            true,
            "denied: run with --allow write to permit file changes".into()
        )
    );
    assert_eq!(
        results[1],
        (
            "bash".into(),
            true,
            "denied: run with --allow bash to permit commands".into()
        )
    );
    assert!(!env.project().join("x.txt").exists() && !env.project().join("y.txt").exists());
}

#[tokio::test]
async fn an_http_error_ends_the_run_with_the_providers_message() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::error(
                400,
                "invalid_request_error",
                "max_tokens: must be at most 64000",
            ),
            anthropic::text("fine now"),
        ])
        .start()
        .await;
    let events = env.run("one").await;
    let (stop_reason, error) = stop_and_error(&events);
    assert_eq!(stop_reason, StopReason::Error);
    assert_eq!(
        error.as_deref(),
        Some("Anthropic API error 400 (invalid_request_error): max_tokens: must be at most 64000")
    );
    env.start_run("two").await;
    assert!(matches!(
        finished(&until_finished(&mut env.incoming).await),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            ..
        }
    ));
}

#[tokio::test]
async fn a_missing_api_key_says_what_to_set() {
    let mut env = TestEnv::builder().start().await;
    let mut options = env.options();
    options.env.retain(|(k, _)| k != "ANTHROPIC_API_KEY");
    options
        .env
        .push(("ANTHROPIC_API_KEY".into(), String::new()));
    let events = env.run_with("hi", options).await;
    let (stop_reason, error) = stop_and_error(&events);
    assert_eq!(stop_reason, StopReason::Error);
    assert!(
        error
            .as_deref()
            .unwrap()
            .starts_with("ANTHROPIC_API_KEY is not set."),
        "{error:?}"
    );
    assert!(env.server.received().is_empty());
}

#[tokio::test]
async fn the_system_prompt_carries_the_environment_and_project_instructions() {
    let mut env = TestEnv::builder()
        .file("AGENTS.md", "Always run `make check`.")
        .model(vec![anthropic::text("ok")])
        .start()
        .await;
    env.start_run("hi").await;
    until_finished(&mut env.incoming).await;
    let body = &env.server.received()[0].body;
    let system = body["system"][0]["text"].as_str().unwrap();
    let cwd = env.project().canonicalize().unwrap();
    assert!(
        system.contains(&format!("Working directory: {}", cwd.display())),
        "{system}"
    );
    assert!(system.contains("Operating system: linux"), "{system}");
    assert!(system.contains("Always run `make check`."), "{system}");
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "read",
            "write",
            "edit",
            "bash",
            "bash_output",
            "kill_shell",
            "grep",
            "glob",
            "fetch",
            "todo",
            "task"
        ]
    );
}
