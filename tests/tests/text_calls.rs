//! Tool calls written as text (small and local models): recovered from real `llama-server`
//! streams and from every form such models write, recorded as proper calls, said once; what is
//! not exactly calls stays text.

use std::path::Path;

use protocol::{Event, RunOptions, SessionEvent, StopReason};
use serde_json::{Value, json};
use tests::model_server::{ModelServer, Scripted, anthropic, openai, replay};
use tests::{
    Daemon, Home, TestEnv, run_options, session_in, start_run, stop_and_error, until_finished,
};

fn transcript(name: &str) -> Scripted {
    replay(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/qwen")
            .join(name),
    )
}

fn openai_options(server: &ModelServer) -> RunOptions {
    RunOptions {
        provider: Some("openai".into()),
        model: Some("qwen2.5-coder-1.5b-instruct".into()),
        env: vec![("OPENAI_BASE_URL".into(), format!("{}/v1", server.url()))],
        ..run_options(server)
    }
}

fn calls(events: &[SessionEvent]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolCall(call) => Some((
                call.name.clone(),
                serde_json::from_str(&call.args).unwrap_or(Value::Null),
            )),
            _ => None,
        })
        .collect()
}

fn notices(events: &[SessionEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e.event, Event::Notice { .. }))
        .count()
}

fn streamed_text(events: &[SessionEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn answers(events: &[SessionEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::AssistantMessage { text, .. } if !text.is_empty() => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn solution_project() -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("solution.py"),
        "class Solution:\n    def digitSum(self, num):\n        pass\n",
    )
    .unwrap();
    project
}

#[tokio::test]
async fn a_real_openai_stream_whose_call_is_text_becomes_a_call() {
    let project = solution_project();
    let server = ModelServer::start(vec![
        transcript("openai-turn1.sse"),
        transcript("openai-turn2-call-as-text.sse"),
        openai::text("Done."),
    ])
    .await;
    let daemon = Daemon::start();
    let (_client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(
        &_client,
        &session,
        "look at digitSum",
        openai_options(&server),
    )
    .await;
    let events = until_finished(&mut incoming).await;
    assert_eq!(stop_and_error(&events).0, StopReason::Completed);
    let names: Vec<String> = calls(&events).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["edit", "read"]);
    let results = tests::tool_results(&events);
    // The guessed edit of an unread file is refused; the call written as text ran.
    assert!(
        results[0].1
            && results[0]
                .2
                .contains("solution.py was not read in this session"),
        "{results:?}"
    );
    assert!(
        !results[1].1 && results[1].2.contains("digitSum"),
        "{results:?}"
    );
    assert_eq!(answers(&events).last().map(String::as_str), Some("Done."));
    assert!(
        !answers(&events).iter().any(|a| a.contains("\"name\"")),
        "the JSON was dropped as text: {:?}",
        answers(&events)
    );
    assert!(!streamed_text(&events).contains("\"name\""));
    assert_eq!(notices(&events), 1);
    // The next request carries a proper call and its result.
    let third = &server.wait_for_requests(3).await[2].body;
    let messages = third["messages"].as_array().unwrap();
    let call = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(call["tool_calls"][0]["function"]["name"], "read");
    let args: Value = serde_json::from_str(
        call["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args, json!({"path": "solution.py"}));
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], call["tool_calls"][0]["id"]);
}

#[tokio::test]
async fn a_real_anthropic_stream_whose_call_is_text_becomes_a_call_said_once() {
    let mut env = TestEnv::builder()
        .file(
            "solution.py",
            "def truncate_number(number: float) -> float:\n    pass\n",
        )
        .model(vec![
            transcript("anthropic-turn1.sse"),
            transcript("anthropic-turn2-call-as-text.sse"),
            transcript("anthropic-turn2-call-as-text.sse"),
            anthropic::text("Done."),
        ])
        .start()
        .await;
    let events = env.run("implement it").await;
    assert_eq!(stop_and_error(&events).0, StopReason::Completed);
    let names: Vec<String> = calls(&events).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["edit", "edit", "edit"]);
    // Recovered twice, said once.
    assert_eq!(notices(&events), 1);
    let requests = env.server.wait_for_requests(4).await;
    let messages = requests[3].body["messages"].as_array().unwrap();
    let reply = &messages[messages.len() - 2];
    assert_eq!(reply["role"], "assistant");
    let blocks = reply["content"].as_array().unwrap();
    assert!(
        blocks.iter().all(|b| b["type"] == "tool_use"),
        "no text kept beside the call: {blocks:?}"
    );
    assert_eq!(blocks[0]["name"], "edit");
    assert_eq!(blocks[0]["input"]["old_string"], "truncate_number");
    let results = messages.last().unwrap()["content"].as_array().unwrap();
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], blocks[0]["id"]);
    // A second run in the session says nothing new.
    env.server.push(vec![
        anthropic::text(r#"{"name": "glob", "arguments": {"pattern": "*.py"}}"#),
        anthropic::text("Still here."),
    ]);
    let events = env.run("again").await;
    assert_eq!(calls(&events).len(), 1);
    assert_eq!(notices(&events), 0);
}

#[tokio::test]
async fn every_form_small_models_write_is_read_as_calls() {
    let forms = [
        // Bare object, with `parameters` for `arguments`.
        r#"{"name": "read", "parameters": {"path": "a.txt"}}"#.to_string(),
        // An array of two calls.
        r#"[{"name": "read", "arguments": {"path": "a.txt"}}, {"name": "read", "arguments": {"path": "b.txt"}}]"#
            .to_string(),
        // One ```json fence.
        "```json\n{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*.txt\"}}\n```".to_string(),
        // Qwen's tags.
        "<tool_call>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"beta\"}}\n</tool_call>"
            .to_string(),
        // Mistral's marker.
        "[TOOL_CALLS] [{\"name\": \"read\", \"arguments\": {\"path\": \"b.txt\"}}]".to_string(),
    ];
    let mut script: Vec<Scripted> = forms.iter().map(|f| anthropic::text(f)).collect();
    script.push(anthropic::text("All read."));
    let mut env = TestEnv::builder()
        .file("a.txt", "alpha\n")
        .file("b.txt", "beta\n")
        .model(script)
        .start()
        .await;
    let events = env.run("look around").await;
    assert_eq!(stop_and_error(&events).0, StopReason::Completed);
    assert_eq!(
        calls(&events),
        [
            ("read".to_string(), json!({"path": "a.txt"})),
            ("read".to_string(), json!({"path": "a.txt"})),
            ("read".to_string(), json!({"path": "b.txt"})),
            ("glob".to_string(), json!({"pattern": "*.txt"})),
            ("grep".to_string(), json!({"pattern": "beta"})),
            ("read".to_string(), json!({"path": "b.txt"})),
        ]
    );
    assert!(tests::tool_results(&events).iter().all(|r| !r.1));
    assert_eq!(answers(&events), ["All read."]);
    assert_eq!(streamed_text(&events), "All read.");
    assert_eq!(notices(&events), 1);
}

#[tokio::test]
async fn what_is_not_exactly_calls_stays_text() {
    let texts = [
        // A tool not offered.
        r#"{"name": "delete_everything", "arguments": {"path": "."}}"#,
        // Arguments the schema refuses (a number for a string, a required field missing).
        r#"{"name": "read", "arguments": {"path": 7}}"#,
        r#"{"name": "edit", "arguments": {"path": "a.txt"}}"#,
        // JSON inside prose.
        "Here is the call: {\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}",
        // Two fences.
        "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n```\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
        // Arguments that are not an object.
        r#"{"name": "read", "arguments": "a.txt"}"#,
    ];
    let mut env = TestEnv::builder()
        .model(texts.iter().map(|t| anthropic::text(t)).collect())
        .start()
        .await;
    for text in texts {
        let events = env.run("go").await;
        assert_eq!(stop_and_error(&events).0, StopReason::Completed, "{text}");
        assert!(calls(&events).is_empty(), "{text} became a call");
        assert_eq!(answers(&events), [text]);
        // Held back while it might have been a call, then shown whole.
        assert_eq!(streamed_text(&events), text);
        assert_eq!(notices(&events), 0);
    }
}

#[tokio::test]
async fn text_tool_calls_off_leaves_the_text_alone() {
    let home =
        Home::with_config("[providers.local]\nkind = \"anthropic\"\ntext_tool_calls = \"off\"\n");
    let project = tempfile::tempdir().unwrap();
    let text = r#"{"name": "glob", "arguments": {"pattern": "*"}}"#;
    let server = ModelServer::start(vec![anthropic::text(text)]).await;
    let daemon = Daemon::start_in(home);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let options = RunOptions {
        provider: Some("local".into()),
        ..run_options(&server)
    };
    start_run(&client, &session, "go", options).await;
    let events = until_finished(&mut incoming).await;
    assert!(calls(&events).is_empty());
    assert_eq!(answers(&events), [text]);
    assert_eq!(streamed_text(&events), text);
}
