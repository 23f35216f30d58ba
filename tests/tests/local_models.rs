//! What local models need from the harness: edits only of files read, forgiving but never wrong
//! matching, servers that need no configuration, replies that loop cut, and a killed client
//! that does not leave its run to a server nobody watches.

use protocol::{Event, HealthKind, RunOptions, SessionEvent, StopReason};
use serde_json::json;
use tests::json_run::JsonRun;
use tests::model_server::{Gate, ModelServer, anthropic, openai};
use tests::{
    Daemon, run_options, session_in, start_run, stop_and_error, tool_results, until_finished,
};

/// Options for a local OpenAI-compatible server with no model named.
fn local_options(server: &ModelServer) -> RunOptions {
    RunOptions {
        provider: Some("openai".into()),
        model: None,
        env: vec![("OPENAI_BASE_URL".into(), format!("{}/v1", server.url()))],
        ..run_options(server)
    }
}

async fn one_run(server: &ModelServer, project: &std::path::Path) -> Vec<SessionEvent> {
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project).await;
    start_run(&client, &session, "go", run_options(server)).await;
    until_finished(&mut incoming).await
}

#[tokio::test]
async fn edits_and_overwrites_need_a_read_first() {
    let project = tempfile::tempdir().unwrap();
    let file = project.path().join("solution.py");
    std::fs::write(&file, "def f():\n    pass\n").unwrap();
    std::fs::write(project.path().join("other.py"), "x = 1\n").unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool(
            "edit",
            json!({"path": "solution.py", "old_string": "    pass", "new_string": "    return 1"}),
        ),
        anthropic::tool("write", json!({"path": "other.py", "content": "x = 2\n"})),
        anthropic::tool("write", json!({"path": "new.py", "content": "y = 1\n"})),
        anthropic::tool("read", json!({"path": "solution.py"})),
        anthropic::tool(
            "edit",
            json!({"path": "solution.py", "old_string": "    pass", "new_string": "    return 1"}),
        ),
        anthropic::text("Done."),
    ])
    .await;
    let results = tool_results(&one_run(&server, project.path()).await);
    assert!(results[0].1, "{results:?}");
    assert!(
        results[0]
            .2
            .contains("solution.py was not read in this session")
            && results[0].2.contains("     2\t    pass"),
        "{results:?}"
    );
    assert!(
        results[1].1 && results[1].2.contains("other.py was not read"),
        "{results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("other.py")).unwrap(),
        "x = 1\n"
    );
    // A new file needs no read.
    assert!(!results[2].1, "{results:?}");
    assert_eq!(
        std::fs::read_to_string(project.path().join("new.py")).unwrap(),
        "y = 1\n"
    );
    assert!(!results[3].1 && !results[4].1, "{results:?}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "def f():\n    return 1\n"
    );
}

#[tokio::test]
async fn a_file_changed_since_it_was_read_must_be_read_again() {
    let project = tempfile::tempdir().unwrap();
    let file = project.path().join("a.txt");
    std::fs::write(&file, "one\n").unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "a.txt"})),
        // Someone else changes the file (a command the model runs).
        anthropic::tool("bash", json!({"command": "echo 'one two' > a.txt"})),
        anthropic::tool(
            "edit",
            json!({"path": "a.txt", "old_string": "one", "new_string": "1"}),
        ),
        anthropic::text("Done."),
    ])
    .await;
    let results = tool_results(&one_run(&server, project.path()).await);
    assert!(
        results[2].1
            && results[2].2.contains("changed on disk")
            && results[2].2.contains("     1\tone two"),
        "{results:?}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one two\n");
}

#[tokio::test]
async fn loose_matches_apply_once_and_say_how() {
    let project = tempfile::tempdir().unwrap();
    let trailing = project.path().join("trailing.py");
    let indented = project.path().join("indented.py");
    let twice = project.path().join("twice.py");
    std::fs::write(&trailing, "x = 1   \ny = 2\n").unwrap();
    std::fs::write(&indented, "class A:\n    def f(self):\n        return 1\n").unwrap();
    let twice_text = "if a:\n    go()\nif b:\n    go()\n";
    std::fs::write(&twice, twice_text).unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "trailing.py"})),
        anthropic::tool(
            "edit",
            json!({"path": "trailing.py", "old_string": "x = 1\ny = 2", "new_string": "x = 10\ny = 20"}),
        ),
        anthropic::tool("read", json!({"path": "indented.py"})),
        // Written without the class's indentation.
        anthropic::tool(
            "edit",
            json!({"path": "indented.py", "old_string": "def f(self):\n    return 1", "new_string": "def f(self):\n    return 2"}),
        ),
        anthropic::tool("read", json!({"path": "twice.py"})),
        // Matches both places once trailing whitespace is ignored: refused.
        anthropic::tool(
            "edit",
            json!({"path": "twice.py", "old_string": "    go()   ", "new_string": "    stop()"}),
        ),
        anthropic::text("Done."),
    ])
    .await;
    let results = tool_results(&one_run(&server, project.path()).await);
    assert!(!results[1].1, "{results:?}");
    assert!(
        results[1].2.contains("ignoring trailing whitespace"),
        "{results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&trailing).unwrap(),
        "x = 10\ny = 20\n"
    );
    assert!(!results[3].1, "{results:?}");
    assert!(results[3].2.contains("indentation"), "{results:?}");
    assert_eq!(
        std::fs::read_to_string(&indented).unwrap(),
        "class A:\n    def f(self):\n        return 2\n"
    );
    assert!(
        results[5].1 && results[5].2.contains("2 places"),
        "{results:?}"
    );
    assert_eq!(std::fs::read_to_string(&twice).unwrap(), twice_text);
}

#[tokio::test]
async fn a_local_server_with_one_model_needs_no_model_named() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![openai::text("Hello.")]).await;
    server.describe(
        "/v1/models",
        json!({"object": "list", "data": [{"id": "qwen2.5-coder-1.5b", "object": "model"}]}),
    );
    server.describe(
        "/props",
        json!({"default_generation_settings": {"n_ctx": 8192}}),
    );
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "hi", local_options(&server)).await;
    let events = until_finished(&mut incoming).await;
    assert_eq!(stop_and_error(&events).0, StopReason::Completed);
    let request = &server.wait_for_requests(1).await[0];
    assert_eq!(request.body["model"], "qwen2.5-coder-1.5b");
    // A local server gets a sane output limit.
    assert_eq!(request.body["max_tokens"], 4096);
    // The server's 8k window gets the compact prompt and tools: the whole first request well
    // under 2k tokens (1k at four bytes a token; the full one is over 5 kB).
    let bytes = request.body.to_string().len();
    assert!(bytes < 4_000, "the first request is {bytes} bytes");
}

#[tokio::test]
async fn a_large_window_keeps_the_full_prompt() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![openai::text("Hello.")]).await;
    server.describe("/v1/models", json!({"data": [{"id": "big"}]}));
    server.describe(
        "/props",
        json!({"default_generation_settings": {"n_ctx": 131072}}),
    );
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "hi", local_options(&server)).await;
    until_finished(&mut incoming).await;
    let request = &server.wait_for_requests(1).await[0];
    let bytes = request.body.to_string().len();
    assert!(bytes > 4_500, "the first request is {bytes} bytes");
}

#[tokio::test]
async fn several_models_or_none_is_a_clear_error() {
    let project = tempfile::tempdir().unwrap();
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let server = ModelServer::start(vec![]).await;
    server.describe(
        "/v1/models",
        json!({"data": [{"id": "qwen-a"}, {"id": "llama-b"}]}),
    );
    start_run(&client, &session, "hi", local_options(&server)).await;
    let (stop, error) = stop_and_error(&until_finished(&mut incoming).await);
    assert_eq!(stop, StopReason::Error);
    let error = error.unwrap();
    assert!(
        error.contains("2 models")
            && error.contains("qwen-a, llama-b")
            && error.contains("--model"),
        "{error}"
    );
    let empty = ModelServer::start(vec![]).await;
    empty.describe("/v1/models", json!({"object": "list", "data": []}));
    start_run(&client, &session, "hi", local_options(&empty)).await;
    let (_, error) = stop_and_error(&until_finished(&mut incoming).await);
    assert!(error.unwrap().contains("serves no model"));
    // No chat request was sent to either.
    assert!(server.received().is_empty() && empty.received().is_empty());
}

#[tokio::test]
async fn a_reply_that_repeats_itself_is_cut_and_kept_once() {
    let project = tempfile::tempdir().unwrap();
    let block = "The start command is make dev.\nRun it from the root.\n";
    // The server would stream the block for ever: only the cut ends it.
    let gate = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::many_deltas(60, block).hold_after(50, &gate),
    ])
    .await;
    let events = one_run(&server, project.path()).await;
    let (stop, error) = stop_and_error(&events);
    assert_eq!(stop, StopReason::Health);
    assert!(error.unwrap().contains("repeated"));
    assert!(events.iter().any(|e| matches!(
        e.event,
        Event::Health {
            kind: HealthKind::RepeatedText,
            ..
        }
    )));
    let answer = events
        .iter()
        .find_map(|e| match &e.event {
            Event::AssistantMessage { text, .. } => Some(text.clone()),
            _ => None,
        })
        .expect("the reply was kept");
    assert_eq!(answer.matches("make dev").count(), 1, "{answer}");
}

/// Starts `agentctl run --json` on a bash call that waits for `go` to exist, and returns it
/// once the call began, with the session's id.
async fn run_waiting(
    daemon: &Daemon,
    server: &ModelServer,
    project: &std::path::Path,
) -> (JsonRun, String) {
    let mut run = JsonRun::start(daemon, server, project, "wait");
    let call = run.until("tool_call").await;
    (run, call["session"].as_str().unwrap().to_string())
}

fn waiting_script() -> Vec<tests::model_server::Scripted> {
    vec![
        anthropic::tool(
            "bash",
            json!({"command": "while [ ! -e go ]; do sleep 0.02; done; echo went"}),
        ),
        anthropic::text("It went."),
    ]
}

#[tokio::test]
async fn sigterm_to_run_cancels_its_run() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(waiting_script()).await;
    let daemon = Daemon::start();
    let (mut run, _) = run_waiting(&daemon, &server, project.path()).await;
    tests::signal(run.child.id().unwrap(), libc::SIGTERM);
    let last = run.rest().await.pop().unwrap_or_default();
    assert_eq!(run.child.wait().await.unwrap().code(), Some(130));
    assert_eq!(last["type"], "run_finished");
    assert_eq!(last["stop_reason"], "aborted");
    // The server was not asked again.
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn sighup_to_run_detaches_and_the_run_goes_on() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(waiting_script()).await;
    let daemon = Daemon::start();
    let (mut run, session) = run_waiting(&daemon, &server, project.path()).await;
    tests::signal(run.child.id().unwrap(), libc::SIGHUP);
    assert_eq!(run.child.wait().await.unwrap().code(), Some(129));
    // Watch the session, then let the command end.
    let mut client = daemon.client().await;
    let session = protocol::SessionId(session);
    tests::subscribe(&client, &session, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    std::fs::write(project.path().join("go"), "").unwrap();
    let events = until_finished(&mut incoming).await;
    let (stop, _) = stop_and_error(&events);
    assert_eq!(stop, StopReason::Completed);
    assert!(tool_results(&events).iter().any(|r| r.2.contains("went")));
}
