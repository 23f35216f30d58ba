//! OpenAI's Responses API as a provider: the conversation as `input` items, function calls and
//! their outputs, reasoning summaries shown as thinking and reasoning items passed back exactly,
//! usage with cached tokens, retries, profile options, and `--provider responses` from agentctl.

use protocol::{Event, RunOptions, StopReason};
use serde_json::{Value, json};
use tests::model_server::{ModelServer, Received, responses};
use tests::{TestEnv, finished, first_turn_usage, run_options, thinking, tool_results};

fn responses_options(server: &ModelServer) -> RunOptions {
    RunOptions {
        provider: Some("responses".into()),
        model: Some("gpt-5".into()),
        env: vec![("OPENAI_BASE_URL".into(), format!("{}/v1", server.url()))],
        ..run_options(server)
    }
}

fn input(request: &Received) -> Vec<Value> {
    request.body["input"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// A run of three replies: reasoning, text and a `read`; reasoning and a `glob`; the answer.
async fn two_tool_turns() -> (Vec<protocol::SessionEvent>, Vec<Received>) {
    let mut env = TestEnv::builder()
        .file("README.md", "run `make dev`\n")
        .model(vec![
            responses::reply()
                .reasoning("rs_1", "The readme will say.")
                .text("Reading it.")
                .tool("call_1", "read", json!({"path": "README.md"}))
                .usage(120, 30, 100)
                .build(),
            responses::reply()
                .reasoning("rs_2", "Any other docs?")
                .tool("call_2", "glob", json!({"pattern": "*.md"}))
                .build(),
            responses::text("Use `make dev`."),
        ])
        .start()
        .await;
    let events = env
        .run_with("how do I start it?", responses_options(&env.server))
        .await;
    (events, env.server.received())
}

#[tokio::test]
async fn a_run_with_two_tool_turns_sends_calls_outputs_and_reasoning_back() {
    let (events, requests) = two_tool_turns().await;
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            turns: 3,
            ..
        }
    ));
    assert_eq!(tool_results(&events)[0].2, "     1\trun `make dev`\n");
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));

    let second = input(&requests[1]);
    assert_eq!(
        second[0],
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "how do I start it?"}]})
    );
    assert_eq!(
        second[1],
        responses::reasoning_item("rs_1", "The readme will say."),
        "the reasoning item goes back exactly as it came"
    );
    assert_eq!(
        second[2],
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading it."}]})
    );
    assert_eq!(
        second[3],
        json!({"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"README.md\"}"})
    );
    assert_eq!(second[4]["type"], "function_call_output");
    assert_eq!(second[4]["call_id"], "call_1");
    assert_eq!(second[4]["output"], "     1\trun `make dev`\n");
    assert_eq!(second.len(), 5);

    let third = input(&requests[2]);
    assert_eq!(&third[..5], &second[..]);
    assert_eq!(
        third[5],
        responses::reasoning_item("rs_2", "Any other docs?")
    );
    assert_eq!(
        third[6],
        json!({"type": "function_call", "call_id": "call_2", "name": "glob", "arguments": "{\"pattern\":\"*.md\"}"})
    );
    assert_eq!(third[7]["type"], "function_call_output");
    assert_eq!(third[7]["call_id"], "call_2");
    assert_eq!(third.len(), 8);
}

#[tokio::test]
async fn the_request_is_stateless_streamed_with_flat_tools() {
    let (_, requests) = two_tool_turns().await;
    let body = &requests[0].body;
    assert_eq!(body["model"], "gpt-5");
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert!(body["instructions"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(body.get("previous_response_id").is_none());
    assert!(body.get("reasoning").is_none(), "no effort configured");
    let read = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read")
        .expect("the read tool is offered");
    assert_eq!(read["type"], "function");
    assert!(read["parameters"].is_object());
    assert!(read["description"].is_string());
    assert!(read.get("function").is_none(), "tools are flat");
    assert_eq!(
        requests[0].header("authorization"),
        None,
        "no key for a local server"
    );
}

#[tokio::test]
async fn reasoning_summaries_are_shown_as_thinking() {
    let (events, _) = two_tool_turns().await;
    assert_eq!(thinking(&events), "The readme will say.Any other docs?");
}

#[tokio::test]
async fn usage_counts_cached_input_tokens() {
    let (events, _) = two_tool_turns().await;
    assert_eq!(
        first_turn_usage(&events),
        Some(protocol::TokenUsage {
            input: 20,
            output: 30,
            cache_read: 100,
            cache_write: 0
        })
    );
}

#[tokio::test]
async fn a_cut_stream_and_a_failed_response_are_retried() {
    let mut env = TestEnv::builder()
        .model(vec![
            responses::reply()
                .text("partial text that never ends")
                .build()
                .cut_after(4),
            responses::failed("server_error", "try again"),
            responses::text("whole reply"),
        ])
        .start()
        .await;
    let events = env.run_with("hi", responses_options(&env.server)).await;
    let reasons: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Retrying { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons[0].contains("stream broke"), "{reasons:?}");
    assert!(reasons[1].contains("server_error"), "{reasons:?}");
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::AssistantMessage { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["whole reply"]);
    assert_eq!(env.server.received().len(), 3);
}

#[tokio::test]
async fn a_profile_sets_the_reasoning_effort_and_store() {
    let mut env = TestEnv::builder()
        .config(
            "retry_base_ms = 5\nretry_max_ms = 20\n\n[providers.deep]\nkind = \"responses\"\n\
             reasoning_effort = \"high\"\nstore = true\n",
        )
        .model(vec![responses::text("Thought hard.")])
        .start()
        .await;
    let options = RunOptions {
        provider: Some("deep".into()),
        ..responses_options(&env.server)
    };
    let events = env.run_with("think", options).await;
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            ..
        }
    ));
    let body = &env.server.received()[0].body;
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(body["store"], true);
    assert!(
        body.get("include").is_none(),
        "stored reasoning needs no encrypted copy"
    );
}

#[tokio::test]
async fn agentctl_runs_with_provider_responses_and_finds_the_only_model() {
    let env = TestEnv::builder()
        .model(vec![responses::text("Hello from Responses.")])
        .start()
        .await;
    env.server.serve_models(&["local-gpt"]);
    let output = env
        .daemon
        .home
        .agentctl_with(
            &env.server,
            env.project.path(),
            &["run", "--provider", "responses", "say hello"],
        )
        .env("OPENAI_BASE_URL", format!("{}/v1", env.server.url()))
        .output()
        .await
        .expect("agentctl runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("Hello from Responses."), "{stdout}");
    let requests = env.server.received();
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(
        requests[0].body["model"], "local-gpt",
        "asked through /v1/models"
    );
}

#[tokio::test]
async fn a_call_written_as_text_is_recovered_and_sent_back_as_a_function_call() {
    let mut env = TestEnv::builder()
        .file("a.txt", "alpha\n")
        .model(vec![
            responses::text(
                "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>",
            ),
            responses::text("It says alpha."),
        ])
        .start()
        .await;
    let events = env
        .run_with("read a.txt", responses_options(&env.server))
        .await;
    assert_eq!(tool_results(&events)[0].2, "     1\talpha\n");
    let second = input(&env.server.received()[1]);
    let call = second
        .iter()
        .find(|item| item["type"] == "function_call")
        .expect("the recovered call goes back as a function call");
    assert_eq!(call["name"], "read");
    assert_eq!(call["arguments"], "{\"path\":\"a.txt\"}");
    let output = second
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .expect("with its output");
    assert_eq!(output["call_id"], call["call_id"]);
}

/// A run of two tool turns with replies `resp_a`, `resp_b`, `resp_c`, with `config`, on
/// provider profile `profile`.
async fn two_tool_turns_on(config: &str, profile: &str) -> Vec<Received> {
    let mut env = TestEnv::builder()
        .file("README.md", "run `make dev`\n")
        .config(config)
        .model(vec![
            responses::reply()
                .id("resp_a")
                .reasoning("rs_1", "The readme will say.")
                .tool("call_1", "read", json!({"path": "README.md"}))
                .build(),
            responses::reply()
                .id("resp_b")
                .tool("call_2", "glob", json!({"pattern": "*.md"}))
                .build(),
            responses::reply()
                .id("resp_c")
                .text("Use `make dev`.")
                .build(),
        ])
        .start()
        .await;
    let options = RunOptions {
        provider: Some(profile.into()),
        ..responses_options(&env.server)
    };
    let events = env.run_with("how do I start it?", options).await;
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            turns: 3,
            ..
        }
    ));
    env.server.received()
}

const CHAINED: &str = "[providers.chained]\nkind = \"responses\"\nprevious_response_id = true\n";

#[tokio::test]
async fn with_previous_response_id_a_request_names_the_last_reply_and_sends_only_what_is_newer() {
    let requests = two_tool_turns_on(CHAINED, "chained").await;
    assert_eq!(requests.len(), 3);
    let first = &requests[0].body;
    assert!(first.get("previous_response_id").is_none());
    assert_eq!(first["store"], true, "previous_response_id implies store");
    assert!(first.get("include").is_none());
    assert_eq!(input(&requests[0]).len(), 1);
    for (request, previous, call) in [
        (&requests[1], "resp_a", "call_1"),
        (&requests[2], "resp_b", "call_2"),
    ] {
        assert_eq!(request.body["previous_response_id"], previous);
        assert_eq!(request.body["store"], true);
        let input = input(request);
        assert_eq!(input.len(), 1, "only the call's output: {input:?}");
        assert_eq!(input[0]["type"], "function_call_output");
        assert_eq!(input[0]["call_id"], call);
    }
}

#[tokio::test]
async fn without_previous_response_id_every_request_sends_the_full_input_unstored() {
    let requests = two_tool_turns_on("", "responses").await;
    let lengths: Vec<usize> = requests.iter().map(|r| input(r).len()).collect();
    assert_eq!(lengths, [1, 4, 6]);
    for request in &requests {
        assert!(request.body.get("previous_response_id").is_none());
        assert_eq!(request.body["store"], false);
    }
}

#[tokio::test]
async fn a_previous_response_the_server_lost_is_sent_again_as_the_full_input() {
    let mut env = TestEnv::builder()
        .file("README.md", "run `make dev`\n")
        .config(CHAINED)
        .model(vec![
            responses::reply()
                .id("resp_a")
                .tool("call_1", "read", json!({"path": "README.md"}))
                .build(),
            responses::previous_not_found("resp_a"),
            responses::reply()
                .id("resp_b")
                .text("Use `make dev`.")
                .build(),
        ])
        .start()
        .await;
    let options = RunOptions {
        provider: Some("chained".into()),
        ..responses_options(&env.server)
    };
    let events = env.run_with("how do I start it?", options).await;
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            ..
        }
    ));
    let requests = env.server.received();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].body["previous_response_id"], "resp_a");
    assert_eq!(input(&requests[1]).len(), 1);
    assert!(requests[2].body.get("previous_response_id").is_none());
    let full = input(&requests[2]);
    assert_eq!(full.len(), 3, "{full:?}");
    assert_eq!(full[0]["role"], "user");
    assert_eq!(full[1]["type"], "function_call");
    assert_eq!(full[2]["type"], "function_call_output");
}

#[tokio::test]
async fn the_next_run_of_the_session_goes_on_from_the_last_reply() {
    let mut env = TestEnv::builder()
        .config(CHAINED)
        .model(vec![
            responses::reply().id("resp_a").text("Hello.").build(),
            responses::reply().id("resp_b").text("Still here.").build(),
        ])
        .start()
        .await;
    let options = RunOptions {
        provider: Some("chained".into()),
        ..responses_options(&env.server)
    };
    env.run_with("hi", options.clone()).await;
    env.run_with("are you there?", options).await;
    let requests = env.server.received();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].body["previous_response_id"], "resp_a");
    let input = input(&requests[1]);
    assert_eq!(input.len(), 1, "only the new message: {input:?}");
    assert_eq!(input[0]["role"], "user");
}
