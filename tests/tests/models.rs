//! A session's model everywhere it is shown (the listing, `show`, the board, the `run_started`
//! event), the models its provider serves (`GET /v1/models` on both APIs), changing it for the
//! next runs, and the tokens and cost of each model.

use std::path::Path;

use protocol::{ErrorCode, Event, Reply, Request, RunId, SessionId, TokenUsage, UsageReport};
use tests::model_server::{ModelServer, anthropic};
use tests::pty::Pty;
use tests::{
    Daemon, Home, create_session, events_until, run_options, start_run, subscribe, titled,
};

/// A configuration whose default model is not the built-in one, so that a listing naming it
/// shows the configuration was read.
const CONFIG: &str = "model = \"claude-opus-4-1\"\nretry_base_ms = 5\nretry_max_ms = 20\n";

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `agentctl ARGS` in `cwd` against `server`, to completion, with stdin closed.
fn agentctl(
    daemon: &Daemon,
    server: &ModelServer,
    cwd: &Path,
    args: &[&str],
) -> std::process::Output {
    daemon
        .home
        .agentctl_against(server, cwd, args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("agentctl runs")
}

/// Options of a run against `server` through its OpenAI-compatible API.
fn openai_env(server: &ModelServer) -> Vec<(String, String)> {
    vec![
        ("OPENAI_BASE_URL".into(), format!("{}/v1", server.url())),
        ("OPENAI_API_KEY".into(), "sk-test".into()),
    ]
}

async fn list_models(
    client: &agentctl::client::Client,
    session: &SessionId,
    env: Vec<(String, String)>,
) -> Result<Reply, protocol::ErrorInfo> {
    let ask = Request::ListModels {
        session: session.clone(),
        env,
    };
    client.request(ask).await.map_err(|e| match e {
        agentctl::client::ClientError::Daemon(info) => info,
        other => panic!("the request failed: {other}"),
    })
}

async fn usage_of(client: &agentctl::client::Client, session: &SessionId) -> UsageReport {
    let ask = Request::Usage {
        session: session.clone(),
    };
    match client.request(ask).await.expect("usage") {
        Reply::Usage(report) => report,
        other => panic!("unexpected reply {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_name_the_configured_model_when_the_session_has_none() {
    let daemon = Daemon::start_in(Home::with_config(CONFIG));
    let server = ModelServer::start(Vec::new()).await;
    let project = tempfile::tempdir().unwrap();
    let client = daemon.client().await;
    let id = create_session(&client, project.path()).await.id;

    let json: serde_json::Value = serde_json::from_str(&stdout(&agentctl(
        &daemon,
        &server,
        project.path(),
        &["sessions", "--json"],
    )))
    .unwrap();
    assert_eq!(json[0]["model"], "claude-opus-4-1", "{json}");
    assert_eq!(json[0]["provider"], "anthropic", "{json}");

    let table = stdout(&agentctl(&daemon, &server, project.path(), &["sessions"]));
    assert!(table.lines().next().unwrap().contains("MODEL"), "{table}");
    let row = table.lines().find(|l| l.starts_with(id.as_str())).unwrap();
    assert!(row.contains("opus-4-1"), "{row}");

    let show = stdout(&agentctl(
        &daemon,
        &server,
        project.path(),
        &["show", id.as_str()],
    ));
    assert!(
        show.lines()
            .next()
            .unwrap()
            .contains("claude-opus-4-1 (anthropic)"),
        "{show}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_shows_each_sessions_model_compactly() {
    let daemon = Daemon::start_in(Home::with_config(CONFIG));
    let server = ModelServer::start(Vec::new()).await;
    let project = tempfile::tempdir().unwrap();
    let client = daemon.client().await;
    titled(&client, project.path(), "configured").await;
    let chosen = protocol::CreateSession {
        title: Some("chosen".into()),
        model: Some("claude-haiku-4-5-20251001".into()),
        ..protocol::CreateSession::in_dir(project.path().to_string_lossy())
    };
    client
        .request(Request::CreateSession(chosen))
        .await
        .unwrap();

    let (rows, cols) = (24, 100);
    let mut command = daemon
        .home
        .agentctl_against(&server, project.path(), &["board"]);
    command.env("TERM", "xterm-256color");
    let pty = Pty::spawn(command, rows, cols);
    let screen = pty.expect_screen(rows, cols, "DONE (2)");
    let line = |text: &str| {
        screen
            .lines()
            .find(|l| l.contains(text))
            .unwrap_or_else(|| panic!("no line with `{text}`:\n{screen}"))
            .to_string()
    };
    assert!(
        line("configured").trim_end().ends_with("opus-4-1"),
        "{screen}"
    );
    assert!(line("chosen").trim_end().ends_with("haiku-4-5"), "{screen}");
    pty.send("q");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test]
async fn run_started_names_the_model_and_provider_of_the_run() {
    let daemon = Daemon::start_in(Home::with_config(CONFIG));
    let server = ModelServer::start(vec![anthropic::text("hello")]).await;
    let project = tempfile::tempdir().unwrap();
    let mut run = tests::json_run::JsonRun::start(&daemon, &server, project.path(), "say hello");
    let started = run.until("run_started").await;
    assert_eq!(started["model"], "claude-opus-4-1", "{started}");
    assert_eq!(started["provider"], "anthropic", "{started}");
    run.until("run_finished").await;
    let sent = server.received();
    assert_eq!(sent[0].body["model"], "claude-opus-4-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_api_lists_the_models_with_the_runs_key_and_headers() {
    let daemon = Daemon::start();
    let server = ModelServer::start(Vec::new()).await;
    server.serve_models(&["claude-sonnet-4-5", "claude-haiku-4-5"]);
    let project = tempfile::tempdir().unwrap();
    let client = daemon.client().await;
    let id = create_session(&client, project.path()).await.id;

    let reply = list_models(&client, &id, run_options(&server).env)
        .await
        .expect("the models are listed");
    assert_eq!(
        reply,
        Reply::Models {
            provider: "anthropic".into(),
            current: Some("claude-sonnet-4-5".into()),
            models: vec!["claude-sonnet-4-5".into(), "claude-haiku-4-5".into()],
        }
    );
    let asked = server.questions();
    let asked = asked.last().expect("the server was asked");
    assert!(asked.path.starts_with("/v1/models"), "{}", asked.path);
    assert_eq!(asked.header("x-api-key"), Some("test-key"));
    assert_eq!(asked.header("anthropic-version"), Some("2023-06-01"));

    // The same list from a shell, the session's model marked.
    let listed = agentctl(&daemon, &server, project.path(), &["model"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert_eq!(
        stdout(&listed),
        "* claude-sonnet-4-5\n  claude-haiku-4-5\n",
        "{}",
        stderr(&listed)
    );
}

#[tokio::test]
async fn the_anthropic_list_is_read_page_by_page() {
    let daemon = Daemon::start();
    let server = ModelServer::start(Vec::new()).await;
    let ids: Vec<String> = (0..1001).map(|i| format!("model-{i:04}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    server.serve_models(&refs);
    let client = daemon.client().await;
    let id = create_session(&client, &std::env::temp_dir()).await.id;
    let reply = list_models(&client, &id, run_options(&server).env)
        .await
        .expect("the models are listed");
    let Reply::Models { models, .. } = reply else {
        panic!("unexpected reply {reply:?}");
    };
    assert_eq!(models, ids);
    let pages: Vec<String> = server.questions().iter().map(|q| q.path.clone()).collect();
    assert_eq!(
        pages,
        [
            "/v1/models?limit=1000",
            "/v1/models?limit=1000&after_id=model-0999"
        ]
    );
}

#[tokio::test]
async fn the_openai_compatible_api_lists_the_models_with_the_runs_key() {
    let daemon = Daemon::start();
    let server = ModelServer::start(Vec::new()).await;
    server.serve_models(&["gpt-4.1", "gpt-4.1-mini"]);
    let client = daemon.client().await;
    let create = protocol::CreateSession {
        provider: Some("openai".into()),
        model: Some("gpt-4.1-mini".into()),
        ..protocol::CreateSession::in_dir(std::env::temp_dir().to_string_lossy())
    };
    let id = match client
        .request(Request::CreateSession(create))
        .await
        .unwrap()
    {
        Reply::SessionCreated(info) => info.id,
        other => panic!("unexpected reply {other:?}"),
    };
    let reply = list_models(&client, &id, openai_env(&server))
        .await
        .expect("the models are listed");
    assert_eq!(
        reply,
        Reply::Models {
            provider: "openai".into(),
            current: Some("gpt-4.1-mini".into()),
            models: vec!["gpt-4.1".into(), "gpt-4.1-mini".into()],
        }
    );
    let asked = server.questions();
    let asked = asked.last().expect("the server was asked");
    assert_eq!(asked.path, "/v1/models");
    assert_eq!(asked.header("authorization"), Some("Bearer sk-test"));
}

#[tokio::test]
async fn listing_the_models_says_why_when_the_server_does_not_answer() {
    let daemon = Daemon::start();
    // A server that does not know `/v1/models`.
    let server = ModelServer::start(Vec::new()).await;
    let client = daemon.client().await;
    let id = create_session(&client, &std::env::temp_dir()).await.id;
    let refused = list_models(&client, &id, run_options(&server).env)
        .await
        .expect_err("no list");
    assert_eq!(refused.code, ErrorCode::ProviderFailed);
    assert!(
        refused.message.contains("answered 404"),
        "{}",
        refused.message
    );

    // Nobody listens at all.
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", gone.local_addr().unwrap());
    drop(gone);
    let env = vec![
        ("ANTHROPIC_BASE_URL".into(), url),
        ("ANTHROPIC_API_KEY".into(), "test-key".into()),
    ];
    let unreachable = list_models(&client, &id, env).await.expect_err("no list");
    assert_eq!(unreachable.code, ErrorCode::ProviderFailed);
    assert!(
        unreachable.message.contains("cannot reach"),
        "{}",
        unreachable.message
    );
}

#[tokio::test]
async fn a_hostile_model_list_is_capped_and_refused_when_too_large() {
    let daemon = Daemon::start();
    let server = ModelServer::start(Vec::new()).await;
    let client = daemon.client().await;
    let id = create_session(&client, &std::env::temp_dir()).await.id;
    // Ids no model has (too long) are left out.
    let long = "m".repeat(500);
    server.serve_models(&["real-model", &long]);
    let listed = list_models(&client, &id, run_options(&server).env)
        .await
        .expect("listed");
    let Reply::Models { models, .. } = listed else {
        panic!("unexpected {listed:?}");
    };
    assert_eq!(models, ["real-model"]);
    // Anthropic's pages stop at ten thousand models.
    let huge: Vec<String> = (0..60_000).map(|i| format!("model-{i:0>60}")).collect();
    let refs: Vec<&str> = huge.iter().map(String::as_str).collect();
    server.serve_models(&refs);
    let listed = list_models(&client, &id, run_options(&server).env)
        .await
        .expect("listed");
    let Reply::Models { models, .. } = listed else {
        panic!("unexpected {listed:?}");
    };
    assert_eq!(models.len(), 10_000);
    // A list of many megabytes in one piece (OpenAI's) is refused, not held.
    let create = protocol::CreateSession {
        provider: Some("openai".into()),
        model: Some("gpt-4.1-mini".into()),
        ..protocol::CreateSession::in_dir(std::env::temp_dir().to_string_lossy())
    };
    let openai = match client
        .request(Request::CreateSession(create))
        .await
        .unwrap()
    {
        Reply::SessionCreated(info) => info.id,
        other => panic!("unexpected reply {other:?}"),
    };
    let refused = list_models(&client, &openai, openai_env(&server))
        .await
        .expect_err("too large");
    assert!(
        refused.message.contains("over 4 MiB"),
        "{}",
        refused.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_set_for_the_session_is_used_by_its_next_runs_and_kept() {
    let mut daemon = Daemon::start();
    let server = ModelServer::start(vec![anthropic::text("one"), anthropic::text("two")]).await;
    let project = tempfile::tempdir().unwrap();
    let mut client = daemon.client().await;
    let id = create_session(&client, project.path()).await.id;
    subscribe(&client, &id, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    start_run(&client, &id, "first", run_options(&server)).await;
    events_until(&mut incoming, |e| matches!(e, Event::RunFinished { .. })).await;

    // From a shell in the session's directory: `-` is its latest session.
    let set = agentctl(
        &daemon,
        &server,
        project.path(),
        &["model", "--session", "-", "claude-haiku-4-5"],
    );
    assert!(set.status.success(), "{}", stderr(&set));
    let changed = events_until(&mut incoming, |e| matches!(e, Event::ModelChanged { .. })).await;
    assert_eq!(
        changed.last().unwrap().event,
        Event::ModelChanged {
            model: "claude-haiku-4-5".into()
        }
    );
    start_run(&client, &id, "second", run_options(&server)).await;
    let events = events_until(&mut incoming, |e| matches!(e, Event::RunFinished { .. })).await;
    assert!(
        events.iter().any(|e| matches!(
            &e.event,
            Event::RunStarted { model, .. } if model == "claude-haiku-4-5"
        )),
        "{events:?}"
    );
    let sent = server.received();
    assert_eq!(sent[0].body["model"], "claude-sonnet-4-5");
    assert_eq!(sent[1].body["model"], "claude-haiku-4-5");

    // A new daemon reads it back.
    drop(incoming);
    drop(client);
    daemon.terminate();
    daemon.restart();
    let client = daemon.client().await;
    let listed = client.list_sessions().await.unwrap().sessions;
    assert_eq!(listed[0].model.as_deref(), Some("claude-haiku-4-5"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_counted_per_model_for_the_last_run_and_the_session() {
    let daemon = Daemon::start();
    let server = ModelServer::start(vec![
        anthropic::text("one"),
        anthropic::text("two"),
        anthropic::text("three"),
    ])
    .await;
    let project = tempfile::tempdir().unwrap();
    let mut client = daemon.client().await;
    let id = create_session(&client, project.path()).await.id;
    subscribe(&client, &id, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    let finished = |e: &Event| matches!(e, Event::RunFinished { .. });
    start_run(&client, &id, "first", run_options(&server)).await;
    events_until(&mut incoming, finished).await;
    let set = Request::SetModel {
        session: id.clone(),
        model: "claude-haiku-4-5".into(),
    };
    assert_eq!(client.request(set).await.unwrap(), Reply::Done);
    start_run(&client, &id, "second", run_options(&server)).await;
    events_until(&mut incoming, finished).await;
    start_run(&client, &id, "third", run_options(&server)).await;
    events_until(&mut incoming, finished).await;

    // Each scripted reply used 100 tokens in and 20 out.
    let report = usage_of(&client, &id).await;
    let reply = TokenUsage {
        input: 100,
        output: 20,
        ..TokenUsage::default()
    };
    let twice = TokenUsage {
        input: 200,
        output: 40,
        ..TokenUsage::default()
    };
    assert_eq!(report.last_run, Some(RunId(3)));
    let run: Vec<_> = report
        .run
        .models
        .iter()
        .map(|m| (m.model.as_str(), m.usage, m.cost_micros))
        .collect();
    // claude-haiku-4*: $1 and $5 per million tokens in and out.
    assert_eq!(run, [("claude-haiku-4-5", reply, Some(200))]);
    let session: Vec<_> = report
        .session
        .models
        .iter()
        .map(|m| (m.model.as_str(), m.usage, m.cost_micros))
        .collect();
    // claude-sonnet-4*: $3 and $15.
    assert_eq!(
        session,
        [
            ("claude-sonnet-4-5", reply, Some(600)),
            ("claude-haiku-4-5", twice, Some(400))
        ]
    );

    let cost = agentctl(&daemon, &server, project.path(), &["cost", "-"]);
    assert!(cost.status.success(), "{}", stderr(&cost));
    let text = stdout(&cost);
    assert!(
        text.contains("last run (3): 100 in · 20 out · $0.0002"),
        "{text}"
    );
    assert!(
        text.contains("  claude-sonnet-4-5: 100 in · 20 out · $0.0006"),
        "{text}"
    );
    assert!(
        text.contains("  claude-haiku-4-5: 200 in · 40 out · $0.0004"),
        "{text}"
    );
}
