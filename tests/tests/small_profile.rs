//! The small profile a small model gets (few tools, short descriptions, a worked example) and
//! the line that says a run asked to change something changed nothing.

use std::process::Stdio;

use protocol::RunOptions;
use serde_json::json;
use tests::model_server::{ModelServer, anthropic, openai};
use tests::{Daemon, Home, TestEnv, run_options, session_in, start_run, until_finished};

/// The tools the full profile offers, in order.
const FULL_TOOLS: [&str; 11] = [
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
    "task",
];

/// The names of the tools an OpenAI-format request offers, and its system prompt.
fn offered(body: &serde_json::Value) -> (Vec<String>, String) {
    let names = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let system = body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (names, system)
}

/// A local server serving `model` with a `window`-token context.
async fn local_server(model: &str, window: u64) -> ModelServer {
    let server = ModelServer::start(vec![openai::text("Hello.")]).await;
    server.describe("/v1/models", json!({"data": [{"id": model}]}));
    server.describe(
        "/props",
        json!({"default_generation_settings": {"n_ctx": window}}),
    );
    server
}

async fn first_request(daemon: &Daemon, server: &ModelServer, provider: &str) -> serde_json::Value {
    let project = tempfile::tempdir().unwrap();
    let (client, session, mut incoming) = session_in(daemon, project.path()).await;
    let options = RunOptions {
        provider: Some(provider.into()),
        model: None,
        env: vec![("OPENAI_BASE_URL".into(), format!("{}/v1", server.url()))],
        ..run_options(server)
    };
    start_run(&client, &session, "hi", options).await;
    until_finished(&mut incoming).await;
    server.wait_for_requests(1).await[0].body.clone()
}

#[tokio::test]
async fn a_small_window_gets_the_fewest_tools_and_a_worked_example() {
    let daemon = Daemon::start();
    let server = local_server("some-model", 16_384).await;
    let body = first_request(&daemon, &server, "openai").await;
    let (tools, system) = offered(&body);
    assert_eq!(tools, ["read", "write", "bash"]);
    // One call per reply: a small model otherwise goes on calling in a loop.
    assert_eq!(body["parallel_tool_calls"], false);
    assert!(
        system.contains("call write with the complete new content of the whole file"),
        "{system}"
    );
    assert!(
        system.contains("Example:")
            && system.contains("You call read with {\"path\": \"shapes.py\"}"),
        "{system}"
    );
    // Small: the whole first request is under 4 kB (about 1k tokens).
    let bytes = body.to_string().len();
    assert!(bytes < 4_000, "the first request is {bytes} bytes");
}

#[tokio::test]
async fn a_model_known_to_be_small_gets_the_small_profile_whatever_its_window() {
    let daemon = Daemon::start();
    let server = local_server("qwen2.5-coder-1.5b-instruct", 131_072).await;
    let (tools, _) = offered(&first_request(&daemon, &server, "openai").await);
    assert_eq!(tools, ["read", "write", "bash"]);
    let big = local_server("llama-3.1-70b-instruct", 131_072).await;
    let body = first_request(&daemon, &big, "openai").await;
    assert!(body.get("parallel_tool_calls").is_none(), "{body}");
    let (tools, system) = offered(&body);
    assert_eq!(tools, FULL_TOOLS);
    assert!(!system.contains("Example:"));
}

#[tokio::test]
async fn a_provider_profile_forces_either_profile() {
    let server = local_server("qwen2.5-coder-1.5b-instruct", 8192).await;
    let big = local_server("llama-3.1-70b-instruct", 131_072).await;
    let config = format!(
        "[providers.full]\nkind = \"openai\"\nbase_url = \"{}/v1\"\nprofile = \"full\"\n\n\
         [providers.tiny]\nkind = \"openai\"\nbase_url = \"{}/v1\"\nprofile = \"small\"\n",
        server.url(),
        big.url()
    );
    let daemon = Daemon::start_in(Home::with_config(&config));
    let (tools, _) = offered(&first_request(&daemon, &server, "full").await);
    assert_eq!(tools, FULL_TOOLS);
    let (tools, _) = offered(&first_request(&daemon, &big, "tiny").await);
    assert_eq!(tools, ["read", "write", "bash"]);
}

#[tokio::test]
async fn a_misspelt_profile_is_a_config_error() {
    let home = Home::with_config("[providers.x]\nkind = \"openai\"\nprofile = \"tiny\"\n");
    let out = home.run_agentctl(&["config", "check"]);
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("tiny") && text.contains("small"), "{text}");
}

/// `agentctl run --json PROMPT` against a model answering with `script`: the `run_finished`
/// event and what the human view wrote on standard error.
async fn json_and_view(
    script: Vec<tests::model_server::Scripted>,
    prompt: &str,
) -> (serde_json::Value, String) {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "helo\n").unwrap();
    let server = ModelServer::start(script.clone()).await;
    let out = daemon
        .home
        .agentctl_against(&server, project.path(), &["run", "--yes", "--json", prompt])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let finished = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "run_finished")
        .expect("a run_finished event");
    let server = ModelServer::start(script).await;
    std::fs::write(project.path().join("a.txt"), "helo\n").unwrap();
    let out = daemon
        .home
        .agentctl_against(&server, project.path(), &["run", "--yes", prompt])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (finished, String::from_utf8_lossy(&out.stderr).to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_asked_for_and_not_made_is_said_in_one_line() {
    let (finished, view) = json_and_view(
        vec![anthropic::text("You should change helo to hello in a.txt.")],
        "fix the typo in a.txt",
    )
    .await;
    assert_eq!(finished["stop_reason"], "completed");
    assert_eq!(finished["nothing_changed"], true, "{finished}");
    assert!(
        view.contains("nothing was changed: no file was changed and no command was run"),
        "{view}"
    );
    assert!(
        view.contains("completed without changing anything"),
        "{view}"
    );
    assert!(!view.contains("— completed ·"), "{view}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_or_a_change_made_is_a_plain_success() {
    let (finished, view) = json_and_view(
        vec![anthropic::text("It says helo.")],
        "Read a.txt and tell me what it says.",
    )
    .await;
    assert_eq!(finished["nothing_changed"], false, "{finished}");
    assert!(!view.contains("nothing was changed"), "{view}");
    let (finished, view) = json_and_view(
        vec![
            anthropic::tool("read", json!({"path": "a.txt"})),
            anthropic::tool("write", json!({"path": "a.txt", "content": "hello\n"})),
            anthropic::text("Fixed."),
        ],
        "fix the typo in a.txt",
    )
    .await;
    assert_eq!(finished["nothing_changed"], false, "{finished}");
    assert!(
        view.contains("— completed ·") && !view.contains("nothing was changed"),
        "{view}"
    );
}

#[tokio::test]
async fn a_small_model_starts_with_the_files_the_message_names_read() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("solution.py"), "def f():\n    pass\n").unwrap();
    let server = ModelServer::start(vec![
        openai::tool(
            "write",
            json!({"path": "solution.py", "content": "def f():\n    return 1\n"}),
        ),
        openai::text("Done."),
    ])
    .await;
    server.describe(
        "/v1/models",
        json!({"data": [{"id": "qwen2.5-coder-1.5b-instruct"}]}),
    );
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let options = RunOptions {
        provider: Some("openai".into()),
        model: None,
        env: vec![("OPENAI_BASE_URL".into(), format!("{}/v1", server.url()))],
        ..run_options(&server)
    };
    start_run(&client, &session, "Implement f in solution.py.", options).await;
    let events = until_finished(&mut incoming).await;
    // The read shows as a call, and the write needs no read of its own.
    let results = tests::tool_results(&events);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        !results[0].1 && results[0].2.contains("     2\t    pass"),
        "{results:?}"
    );
    assert!(!results[1].1, "{results:?}");
    assert_eq!(
        std::fs::read_to_string(project.path().join("solution.py")).unwrap(),
        "def f():\n    return 1\n"
    );
    // The model's first request already holds the call and its result, in its own format.
    let first = &server.wait_for_requests(1).await[0].body;
    let messages = first["messages"].as_array().unwrap();
    let call = &messages[2]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "read", "{first}");
    assert_eq!(call["arguments"], "{\"path\":\"solution.py\"}");
    assert_eq!(messages[3]["role"], "tool");
    // A large model reads for itself.
    let big = ModelServer::start(vec![openai::text("Done.")]).await;
    big.describe("/v1/models", json!({"data": [{"id": "llama-3.1-70b"}]}));
    big.describe(
        "/props",
        json!({"default_generation_settings": {"n_ctx": 131072}}),
    );
    let options = RunOptions {
        provider: Some("openai".into()),
        model: None,
        env: vec![("OPENAI_BASE_URL".into(), format!("{}/v1", big.url()))],
        ..run_options(&big)
    };
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "Implement f in solution.py.", options).await;
    assert!(tests::tool_results(&until_finished(&mut incoming).await).is_empty());
}

/// A run of the small model `qwen2.5-coder-1.5b-instruct` against `script`, asked to implement
/// `f` (the message names no file).
async fn small_run(
    script: Vec<tests::model_server::Scripted>,
) -> (Vec<protocol::SessionEvent>, ModelServer, tempfile::TempDir) {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("solution.py"), "def f():\n    pass\n").unwrap();
    let server = ModelServer::start(script).await;
    server.describe(
        "/v1/models",
        json!({"data": [{"id": "qwen2.5-coder-1.5b-instruct"}]}),
    );
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    let options = RunOptions {
        provider: Some("openai".into()),
        model: None,
        env: vec![("OPENAI_BASE_URL".into(), format!("{}/v1", server.url()))],
        ..run_options(&server)
    };
    start_run(&client, &session, "Implement the function f.", options).await;
    let events = until_finished(&mut incoming).await;
    (events, server, project)
}

fn nothing_changed(events: &[protocol::SessionEvent]) -> bool {
    events
        .iter()
        .find_map(|e| match &e.event {
            protocol::Event::RunFinished {
                nothing_changed, ..
            } => Some(*nothing_changed),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn a_small_model_that_only_shows_the_change_is_asked_once_to_make_it() {
    let prose = "Here's the implementation:\n\n```python\ndef f():\n    return 1\n```";
    let (events, server, project) = small_run(vec![
        openai::text(prose),
        openai::tool("read", json!({"path": "solution.py"})),
        openai::tool(
            "write",
            json!({"path": "solution.py", "content": "def f():\n    return 1\n"}),
        ),
        openai::text("Done."),
    ])
    .await;
    assert!(events.iter().any(|e| matches!(&e.event, protocol::Event::Notice { text } if text.contains("asked once to make the change"))));
    let requests = server.received();
    assert_eq!(requests.len(), 4);
    let told = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(told["role"], "user", "{told}");
    assert!(
        told["content"]
            .as_str()
            .unwrap()
            .contains("code in an answer changes nothing"),
        "{told}"
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("solution.py")).unwrap(),
        "def f():\n    return 1\n"
    );
    assert!(!nothing_changed(&events));
    // Asked once only: a model that still does nothing ends the run, said so.
    let (events, server, _project) =
        small_run(vec![openai::text(prose), openai::text(prose)]).await;
    assert_eq!(server.received().len(), 2);
    assert!(nothing_changed(&events));
}

#[tokio::test]
async fn anthropic_s_wire_gets_one_call_per_reply_and_the_nudge() {
    let mut env = TestEnv::builder()
        .file("solution.py", "def f():\n    pass\n")
        .model(vec![
            anthropic::text("Here it is:\n\n```python\ndef f():\n    return 1\n```"),
            anthropic::tool(
                "write",
                json!({"path": "solution.py", "content": "def f():\n    return 1\n"}),
            ),
            anthropic::text("Done."),
        ])
        .start()
        .await;
    let options = RunOptions {
        model: Some("qwen2.5-coder-1.5b-instruct".into()),
        ..env.options()
    };
    let events = env.run_with("Implement f in solution.py.", options).await;
    assert!(!nothing_changed(&events));
    let requests = env.server.received();
    assert_eq!(
        requests[0].body["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
    let told = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(told.contains("code in an answer changes nothing"), "{told}");
    assert_eq!(
        std::fs::read_to_string(env.project().join("solution.py")).unwrap(),
        "def f():\n    return 1\n"
    );
}
