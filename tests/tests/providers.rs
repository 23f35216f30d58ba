//! Providers for real use: the OpenAI-compatible format, retries of passing failures, context
//! overflow and compaction, and prompt caching.

use agentctl::client::Incoming;
use protocol::{Event, RunOptions, StopReason};
use serde_json::json;
use tests::model_server::{Gate, ModelServer, Scripted, anthropic, openai};
use tests::{
    Daemon, Home, TestEnv, finished, first_turn_usage, next_event, run_options, session_in,
    start_run, stop_and_error, thinking, tool_results, until_finished,
};
use tokio::sync::mpsc::UnboundedReceiver;

fn openai_options(server: &ModelServer) -> RunOptions {
    RunOptions {
        provider: Some("openai".into()),
        model: Some("gpt-4.1".into()),
        env: vec![("OPENAI_BASE_URL".into(), format!("{}/v1", server.url()))],
        ..run_options(server)
    }
}

fn retries(events: &[protocol::SessionEvent]) -> Vec<(u32, u64, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Retrying {
                attempt,
                wait_ms,
                reason,
            } => Some((*attempt, *wait_ms, reason.clone())),
            _ => None,
        })
        .collect()
}

fn replies(events: &[protocol::SessionEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e.event, Event::AssistantMessage { .. }))
        .count()
}

#[tokio::test]
async fn a_full_run_over_the_openai_compatible_format() {
    let mut env = TestEnv::builder()
        .file("README.md", "run `make dev`\n")
        .model(vec![
            openai::reply()
                .reasoning("The readme will say.")
                .text("Reading it.")
                .tool("call_1", "read", json!({"path": "README.md"}))
                .repeat_ids()
                .usage(120, 30, 100)
                .build(),
            openai::text("Use `make dev`."),
        ])
        .start()
        .await;
    let events = env
        .run_with("how do I start it?", openai_options(&env.server))
        .await;
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            turns: 2,
            ..
        }
    ));
    assert_eq!(thinking(&events), "The readme will say.");
    assert_eq!(tool_results(&events)[0].2, "     1\trun `make dev`\n");
    assert_eq!(
        first_turn_usage(&events),
        Some(protocol::TokenUsage {
            input: 20,
            output: 30,
            cache_read: 100,
            cache_write: 0
        })
    );

    let requests = env.server.received();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        None,
        "no key for a local server"
    );
    let body = &requests[0].body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["tools"][0]["type"], "function");
    let second = requests[1].body["messages"].as_array().unwrap().clone();
    let assistant = &second[2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"], "Reading it.");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "read");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        "{\"path\":\"README.md\"}"
    );
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_call_id"], "call_1");
}

#[tokio::test]
async fn openai_scenarios_behave_as_the_anthropic_ones() {
    let mut env = TestEnv::builder()
        .model(vec![
            // A reply cut at the output limit: its calls are refused, the loop goes on.
            openai::reply()
                .tool("c1", "write", json!({"path": "x.txt", "content": "x"}))
                .finish("length")
                .build(),
            // An unknown tool gets an error result listing the real ones.
            openai::reply().tool("c2", "fly", json!({})).build(),
            // A tool call with no text sends `content: ""` next time.
            openai::text("Done."),
            openai::error(400, "invalid_value", "messages: bad role"),
        ])
        .start()
        .await;
    let events = env.run_with("go", openai_options(&env.server)).await;
    let results = tool_results(&events);
    assert!(
        results[0]
            .2
            .starts_with("not executed: the reply was cut off at the output limit")
    );
    assert!(results[1].2.starts_with("unknown tool `fly`"));
    assert!(!env.project().join("x.txt").exists());
    let third = env.server.received()[2].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        third
            .iter()
            .any(|m| m["role"] == "assistant" && m["content"] == "" && m["tool_calls"].is_array())
    );

    let events = env.run_with("again", openai_options(&env.server)).await;
    let (stop_reason, error) = stop_and_error(&events);
    assert_eq!(stop_reason, StopReason::Error);
    assert_eq!(
        error.as_deref(),
        Some("OpenAI-compatible API error 400 (invalid_value): messages: bad role")
    );
}

async fn one_run(
    scripts: Vec<Scripted>,
    prompt: &str,
) -> (Vec<protocol::SessionEvent>, ModelServer, Daemon) {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(scripts).await;
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, prompt, run_options(&server)).await;
    let events = until_finished(&mut incoming).await;
    drop(client);
    (events, server, daemon)
}

#[tokio::test]
async fn a_429_is_retried_after_the_wait_the_provider_asked_for() {
    let limited = Scripted::Status {
        status: 429,
        body: json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
        headers: vec![("retry-after".into(), "1".into())],
    };
    let (events, server, _daemon) = one_run(vec![limited, anthropic::text("ok")], "hi").await;
    assert_eq!(retries(&events).len(), 1);
    assert_eq!(retries(&events)[0].1, 1000, "retry-after is honoured");
    assert!(retries(&events)[0].2.contains("429"));
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            ..
        }
    ));
    assert_eq!((replies(&events), server.received().len()), (1, 2));
}

#[tokio::test]
async fn overloaded_and_server_errors_are_retried_until_success() {
    let overloaded_in_stream = Scripted::Stream {
        events: vec![
            tests::model_server::SseFrame {
                event: "message_start".into(),
                data: json!({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
            },
            tests::model_server::SseFrame {
                event: "error".into(),
                data: json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            },
        ],
        cut_after: None,
        hold: None,
        pace: None,
    };
    let (events, server, _daemon) = one_run(
        vec![
            anthropic::error(529, "overloaded_error", "Overloaded"),
            overloaded_in_stream,
            anthropic::error(500, "api_error", "Internal server error"),
            anthropic::text("finally"),
        ],
        "hi",
    )
    .await;
    let reasons: Vec<String> = retries(&events).into_iter().map(|r| r.2).collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(
        reasons[0].contains("529")
            && reasons[1].contains("overloaded_error")
            && reasons[2].contains("500")
    );
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            ..
        }
    ));
    assert_eq!((replies(&events), server.received().len()), (1, 4));
}

#[tokio::test]
async fn a_stream_cut_mid_reply_is_retried_and_only_the_whole_reply_is_kept() {
    let (events, server, daemon) = one_run(
        vec![
            anthropic::reply()
                .text("partial text that never")
                .build()
                .cut_after(5),
            anthropic::text("whole reply"),
        ],
        "hi",
    )
    .await;
    assert_eq!(retries(&events).len(), 1);
    assert!(
        retries(&events)[0].2.contains("stream broke"),
        "{:?}",
        retries(&events)
    );
    assert_eq!(replies(&events), 1);
    let client = daemon.client().await;
    let session = events[0].session.clone();
    let (_, history) = client.history(&session).await.unwrap();
    let texts: Vec<String> = history
        .iter()
        .filter_map(|e| match &e.event {
            Event::AssistantMessage { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["whole reply"]);
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn a_stream_that_goes_silent_counts_as_broken_and_is_retried() {
    let silent = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .text("a reply that stops mid-way")
            .build()
            .hold_after(3, &silent),
        anthropic::text("whole reply"),
    ])
    .await;
    let home =
        Home::with_config("retry_base_ms = 5\nretry_max_ms = 20\nstream_idle_timeout_secs = 1\n");
    let daemon = Daemon::start_in(home);
    let project = tempfile::tempdir().unwrap();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "hi", run_options(&server)).await;
    let events = until_finished(&mut incoming).await;
    let retried = retries(&events);
    assert_eq!(retried.len(), 1, "{retried:?}");
    assert!(
        retried[0].2.contains("the provider sent nothing for 1 s"),
        "{retried:?}"
    );
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Completed);
    assert_eq!(replies(&events), 1);
    silent.release();
}

#[tokio::test]
async fn a_refused_connection_is_retried_until_the_server_is_there() {
    // A port with nobody listening yet.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let home = Home::with_config("retry_base_ms = 200\nretry_max_ms = 400\n");
    let daemon = Daemon::start_in(home);
    let project = tempfile::tempdir().unwrap();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let options = RunOptions {
        env: vec![
            (
                "ANTHROPIC_BASE_URL".into(),
                format!("http://127.0.0.1:{port}"),
            ),
            ("ANTHROPIC_API_KEY".into(), "k".into()),
        ],
        ..RunOptions::default()
    };
    start_run(&client, &session, "hi", options).await;
    let first = loop {
        if let Event::Retrying { reason, .. } = next_event(&mut incoming).await.event {
            break reason;
        }
    };
    assert!(first.contains("cannot reach"), "{first}");
    // The server comes up during the backoff.
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let server = ModelServer::start_on(listener, vec![anthropic::text("reached")]).await;
    let events = until_finished(&mut incoming).await;
    assert!(
        matches!(
            finished(&events),
            Event::RunFinished {
                stop_reason: StopReason::Completed,
                ..
            }
        ),
        "{events:?}"
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn when_retries_run_out_the_run_ends_with_the_last_reason() {
    let failure = || anthropic::error(503, "api_error", "temporarily unavailable");
    let (events, server, _daemon) = one_run((0..5).map(|_| failure()).collect(), "hi").await;
    assert_eq!(retries(&events).len(), 4);
    let (stop_reason, error) = stop_and_error(&events);
    assert_eq!(stop_reason, StopReason::Error);
    assert_eq!(
        error.as_deref(),
        Some("Anthropic API error 503 (api_error): temporarily unavailable")
    );
    assert_eq!(server.received().len(), 5);
}

#[tokio::test]
async fn cancel_interrupts_a_backoff_wait() {
    let limited = Scripted::Status {
        status: 429,
        body: json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
        headers: vec![("retry-after".into(), "60".into())],
    };
    let mut env = TestEnv::builder().model(vec![limited]).start().await;
    env.start_run("hi").await;
    loop {
        if let Event::Retrying { wait_ms, .. } = next_event(&mut env.incoming).await.event {
            assert_eq!(wait_ms, 60_000);
            break;
        }
    }
    env.cancel().await;
    // Well before the minute is up: the wait was interrupted.
    let events = until_finished(&mut env.incoming).await;
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Aborted,
            ..
        }
    ));
    assert_eq!(env.server.received().len(), 1);
}

/// A project with two large files, each read whole fills more than the recent part kept.
fn big_project() -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    let line = "let value = compute_something(argument_one, argument_two);\n";
    for name in ["one.rs", "two.rs"] {
        std::fs::write(project.path().join(name), line.repeat(1900)).unwrap();
    }
    project
}

async fn run_to_end(
    client: &agentctl::client::Client,
    session: &protocol::SessionId,
    incoming: &mut UnboundedReceiver<Incoming>,
    text: &str,
    server: &ModelServer,
) -> Vec<protocol::SessionEvent> {
    start_run(client, session, text, run_options(server)).await;
    until_finished(incoming).await
}

#[tokio::test]
async fn a_context_overflow_compacts_once_and_retries() {
    let project = big_project();
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "one.rs"})),
        anthropic::tool("read", json!({"path": "two.rs"})),
        anthropic::text("Both read."),
        anthropic::error(
            400,
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
        ),
        anthropic::text("SUMMARY: read one.rs and two.rs, both call compute_something."),
        anthropic::text("Answer after compaction."),
    ])
    .await;
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    run_to_end(&client, &session, &mut incoming, "read both files", &server).await;
    let events = run_to_end(
        &client,
        &session,
        &mut incoming,
        "what do they do?",
        &server,
    )
    .await;
    assert!(
        matches!(
            finished(&events),
            Event::RunFinished {
                stop_reason: StopReason::Completed,
                ..
            }
        ),
        "{:?}",
        finished(&events)
    );
    let compacted = events.iter().find_map(|e| match e.event {
        Event::Compacted {
            before_tokens,
            after_tokens,
        } => Some((before_tokens, after_tokens)),
        _ => None,
    });
    let (before, after) = compacted.expect("a Compacted event");
    assert!(after < before, "{before} -> {after}");

    let received = server.received();
    let summary_request = &received[4].body["messages"];
    let last = summary_request.as_array().unwrap().last().unwrap();
    assert!(
        last["content"].as_array().unwrap().last().unwrap()["text"]
            .as_str()
            .unwrap()
            .contains("Write a summary")
    );
    let retried = received[5].body["messages"].as_array().unwrap().clone();
    assert!(
        retried[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Summary of the earlier conversation:\n\nSUMMARY:")
    );
    tests::assert_pairs_intact(&retried);
    assert_eq!(
        retried.last().unwrap()["content"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["text"],
        "what do they do?"
    );
}

#[tokio::test]
async fn a_second_overflow_ends_the_run_with_an_error() {
    let project = big_project();
    let too_long = || {
        anthropic::error(
            400,
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
        )
    };
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "one.rs"})),
        anthropic::tool("read", json!({"path": "two.rs"})),
        anthropic::text("Both read."),
        too_long(),
        anthropic::text("SUMMARY"),
        too_long(),
    ])
    .await;
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    run_to_end(&client, &session, &mut incoming, "read both files", &server).await;
    let events = run_to_end(&client, &session, &mut incoming, "and now?", &server).await;
    let (stop_reason, error) = stop_and_error(&events);
    assert_eq!(stop_reason, StopReason::Error);
    assert!(
        error.as_deref().unwrap().contains("even after compaction"),
        "{error:?}"
    );
}

#[tokio::test]
async fn compaction_at_the_threshold_keeps_tool_calls_with_their_results() {
    let project = big_project();
    let home = Home::with_config("retry_base_ms = 5\ncontext_window = 50000\n");
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "one.rs"})),
        // This reply's prompt used 45,000 of 50,000 tokens: over 80%.
        anthropic::reply()
            .tool("read", json!({"path": "two.rs"}))
            .usage(45_000, 10, 0, 0)
            .build(),
        anthropic::text("SUMMARY: read one.rs."),
        anthropic::text("Done."),
    ])
    .await;
    let daemon = Daemon::start_in(home);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let events = run_to_end(&client, &session, &mut incoming, "read both files", &server).await;
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            ..
        }
    ));
    assert!(
        events
            .iter()
            .any(|e| matches!(e.event, Event::Compacted { .. }))
    );
    let received = server.received();
    assert_eq!(received.len(), 4);
    // The call after compaction: the summary, then the newest call and its (large) result.
    let messages = received[3].body["messages"].as_array().unwrap().clone();
    assert!(
        messages[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("SUMMARY: read one.rs.")
    );
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"][0]["type"], "tool_use");
    tests::assert_pairs_intact(&messages);
}

#[tokio::test]
async fn compaction_by_hand_summarises_an_idle_session() {
    let project = big_project();
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "one.rs"})),
        anthropic::tool("read", json!({"path": "two.rs"})),
        anthropic::text("Both read."),
        anthropic::text("SUMMARY by hand"),
    ])
    .await;
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    run_to_end(&client, &session, &mut incoming, "read both files", &server).await;
    let out = daemon
        .home
        .agentctl_with(&server, project.path(), &["compact", session.as_str()])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(matches!(
        next_event(&mut incoming).await.event,
        Event::Compacted { .. }
    ));
    assert_eq!(server.received().len(), 4);
}

#[tokio::test]
async fn anthropic_requests_mark_the_cache_points() {
    let (_, server, _daemon) = one_run(
        vec![
            anthropic::tool("glob", json!({"pattern": "*"})),
            anthropic::text("ok"),
        ],
        "hi",
    )
    .await;
    for request in server.received() {
        let body = request.body;
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(
            body["tools"].as_array().unwrap().last().unwrap()["cache_control"]["type"],
            "ephemeral"
        );
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(
            last["content"].as_array().unwrap().last().unwrap()["cache_control"]["type"],
            "ephemeral"
        );
    }
}
