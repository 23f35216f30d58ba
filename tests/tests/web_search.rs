//! `web_search` through the real daemon against a scripted search server speaking each
//! service's wire format (docs/architecture.md#web-access): the request the service receives
//! (path, query, headers, body, key), the results as the model reads them, and the tool offered
//! only when a service is configured and its key found.

use protocol::{Event, RunOptions};
use serde_json::{Value, json};
use tests::model_server::anthropic;
use tests::web_server::{Reply, WebServer};
use tests::{TestEnv, TestEnvBuilder, tool_results};

/// A config with quick model retries, `[web_search]` set to `search`, and a rule that lets the
/// loopback search server be reached without asking.
fn config(search: &str) -> String {
    format!(
        "retry_base_ms = 5\nretry_max_ms = 20\n[permissions]\nallow = [\"web_search:127.0.0.1\"]\n[web_search]\n{search}"
    )
}

/// Runs one `web_search` for `query` in `builder`'s daemon with `env` added to the client's
/// environment: the result (is_error, text) and the names of the tools the model was offered.
async fn search(
    builder: TestEnvBuilder,
    query: &str,
    env: &[(&str, &str)],
) -> (bool, String, Vec<String>) {
    let mut test = builder
        .model(vec![
            anthropic::tool("web_search", json!({ "query": query })),
            anthropic::text("done"),
        ])
        .start()
        .await;
    let mut options: RunOptions = test.options();
    options
        .env
        .extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let events = test.run_with("look it up", options).await;
    let (_, is_error, text) = tool_results(&events).remove(0);
    (is_error, text, offered(&test.server.received()[0].body))
}

/// The names of the tools in a model request.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn brave_is_asked_with_its_key_header_and_its_results_are_listed() {
    let server = WebServer::start().await;
    server.route(
        "/res/v1/web/search",
        Reply::json(&json!({"type": "search", "web": {"results": [
            {"title": "htmd - Rust", "url": "https://docs.rs/htmd", "description": "HTML to <strong>Markdown</strong>"},
            {"title": "letmutex/htmd", "url": "https://github.com/letmutex/htmd", "description": "A turndown.js inspired converter"}
        ]}})),
    );
    let builder = TestEnv::builder().config(&config(&format!(
        "provider = \"brave\"\napi_key_env = \"TEST_BRAVE_KEY\"\nbase_url = \"{}\"\nmax_results = 3\n",
        server.url("")
    )));
    let (is_error, text, tools) = search(
        builder,
        "rust html to markdown",
        &[("TEST_BRAVE_KEY", "brave-key-1")],
    )
    .await;
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("1. htmd - Rust\n   https://docs.rs/htmd\n   HTML to <strong>Markdown</strong>\n\n2. letmutex/htmd\n"),
        "{text}"
    );
    let seen = &server.seen()[0];
    assert_eq!(
        (seen.method.as_str(), seen.path()),
        ("GET", "/res/v1/web/search")
    );
    assert_eq!(
        seen.query(),
        [
            ("q".to_string(), "rust html to markdown".to_string()),
            ("count".to_string(), "3".to_string())
        ]
    );
    assert_eq!(seen.header("x-subscription-token"), Some("brave-key-1"));
    assert!(!text.contains("brave-key-1"));
    let at = tools
        .iter()
        .position(|t| t == "fetch")
        .expect("fetch offered");
    assert_eq!(
        tools.get(at + 1).map(String::as_str),
        Some("web_search"),
        "{tools:?}"
    );
}

#[tokio::test]
async fn tavily_gets_a_json_post_with_a_bearer_key_from_the_daemons_environment() {
    let server = WebServer::start().await;
    server.route(
        "/search",
        Reply::json(&json!({"query": "q", "results": [
            {"title": "Tavily result", "url": "https://example.org/t", "content": "the snippet", "score": 0.8}
        ]})),
    );
    let builder = TestEnv::builder()
        .config(&config(&format!(
            "provider = \"tavily\"\nbase_url = \"{}/\"\n",
            server.url("")
        )))
        .daemon_env("TAVILY_API_KEY", "tvly-secret");
    let (is_error, text, _) = search(builder, "agentd web fetch", &[]).await;
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("1. Tavily result\n   https://example.org/t\n   the snippet\n"),
        "{text}"
    );
    let seen = &server.seen()[0];
    assert_eq!(
        (seen.method.as_str(), seen.target.as_str()),
        ("POST", "/search")
    );
    assert_eq!(seen.header("authorization"), Some("Bearer tvly-secret"));
    assert_eq!(seen.header("content-type"), Some("application/json"));
    let body: Value = serde_json::from_slice(&seen.body).unwrap();
    assert_eq!(body, json!({"query": "agentd web fetch", "max_results": 5}));
}

#[tokio::test]
async fn searxng_is_asked_for_json_without_a_key() {
    let server = WebServer::start().await;
    server.route(
        "/search",
        Reply::json(&json!({"query": "q", "results": [
            {"title": "SearXNG hit", "url": "https://example.net/s", "content": "found it", "engine": "duckduckgo"}
        ], "answers": []})),
    );
    let builder = TestEnv::builder().config(&config(&format!(
        "provider = \"searxng\"\nbase_url = \"{}\"\n",
        server.url("")
    )));
    let (is_error, text, _) = search(builder, "private instance", &[]).await;
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("1. SearXNG hit\n   https://example.net/s\n   found it\n"),
        "{text}"
    );
    let seen = &server.seen()[0];
    assert_eq!((seen.method.as_str(), seen.path()), ("GET", "/search"));
    assert_eq!(
        seen.query(),
        [
            ("q".to_string(), "private instance".to_string()),
            ("format".to_string(), "json".to_string())
        ]
    );
    assert_eq!(seen.header("authorization"), None);
}

#[tokio::test]
async fn web_search_is_not_offered_unless_configured() {
    let mut env = TestEnv::builder()
        .model(vec![anthropic::text("ok")])
        .start()
        .await;
    env.run("hi").await;
    let tools = offered(&env.server.received()[0].body);
    assert!(tools.iter().any(|t| t == "fetch"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "web_search"), "{tools:?}");
}

#[tokio::test]
async fn a_configured_service_without_its_key_is_not_offered_and_the_user_is_told() {
    let mut env = TestEnv::builder()
        .config(&config(
            "provider = \"brave\"\napi_key_env = \"NO_SUCH_TEST_KEY\"\n",
        ))
        .model(vec![anthropic::text("ok")])
        .start()
        .await;
    let events = env.run("hi").await;
    let tools = offered(&env.server.received()[0].body);
    assert!(!tools.iter().any(|t| t == "web_search"), "{tools:?}");
    let told = events.iter().any(
        |e| matches!(&e.event, Event::Error { message } if message.contains("NO_SUCH_TEST_KEY")),
    );
    assert!(told, "{events:?}");
}

#[tokio::test]
async fn a_search_nobody_allowed_is_denied_with_what_the_user_can_pass() {
    let server = WebServer::start().await;
    let config = format!(
        "retry_base_ms = 5\nretry_max_ms = 20\n[web_search]\nprovider = \"searxng\"\nbase_url = \"{}\"\n",
        server.url("")
    );
    let (is_error, text, _) = search(TestEnv::builder().config(&config), "anything", &[]).await;
    assert!(is_error);
    assert!(text.contains("--allow network"), "{text}");
    assert_eq!(server.seen().len(), 0);
}
