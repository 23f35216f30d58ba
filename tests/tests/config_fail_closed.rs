//! A broken `config.toml` fails closed. A daemon that starts with a file it cannot read knows
//! none of the user's rules, so it refuses runs (naming the file, line and reason) until the
//! file is fixed or the run passes `--ignore-config`; a file that breaks while the daemon runs
//! leaves the last good configuration in force, and every run says so. `daemon status` tells
//! the two apart, and `agentctl config check` says what runs are told.

use protocol::{ErrorCode, Event, Reply, Request, SessionEvent, StopReason};
use serde_json::json;
use tests::model_server::{Gate, ModelServer, Scripted, anthropic};
use tests::{
    Daemon, Home, TestEnv, agentctl_output, next_event, run_options, session_in, start_run,
    subscribe, until_finished, wait_for_config,
};

/// A deny rule for `rm -rf`.
const RULE: &str = "[permissions]\ndeny = [\"bash:rm -rf*\"]\n";
/// The rule, then a typo on line 3 that makes the file unusable.
const BROKEN: &str = "[permissions]\ndeny = [\"bash:rm -rf*\"]\nmax_turns = \"x\"\n";

/// A model that removes `victim` with `bash`, then says it is done.
fn removes_victim() -> Vec<Scripted> {
    vec![
        anthropic::tool("bash", json!({"command": "rm -rf victim"})),
        anthropic::text("done"),
    ]
}

/// A project directory holding the directory `victim`.
fn project_with_victim() -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join("victim")).unwrap();
    project
}

/// The messages of the `Error` events among `events`.
fn error_lines(events: &[SessionEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Error { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_daemon_started_with_a_broken_config_refuses_a_run_with_the_file_and_line() {
    let daemon = Daemon::start_in(Home::with_config(BROKEN));
    let project = project_with_victim();
    let server = ModelServer::start(removes_victim()).await;
    let (client, session, _incoming) = session_in(&daemon, project.path()).await;

    let refused = client
        .request(Request::Send {
            session,
            text: "remove victim".into(),
            images: Vec::new(),
            delivery: protocol::Delivery::FollowUp,
            options: run_options(&server),
        })
        .await
        .expect_err("the run is refused");
    let refused = match refused {
        agentctl::client::ClientError::Daemon(info) => info,
        other => panic!("expected the daemon's refusal, got {other:?}"),
    };
    assert_eq!(refused.code, ErrorCode::ConfigBroken);
    let file = daemon.paths().config_file();
    let at = format!("{}:3: ", file.display());
    assert!(refused.message.starts_with(&at), "{}", refused.message);
    assert!(
        refused.message.contains("--ignore-config"),
        "{}",
        refused.message
    );

    assert!(project.path().join("victim").is_dir(), "nothing ran");
    assert!(server.received().is_empty(), "the model was never asked");
}

#[tokio::test]
async fn agentctl_run_yes_is_refused_and_the_victim_survives() {
    let daemon = Daemon::start_in(Home::with_config(BROKEN));
    let project = project_with_victim();
    let server = ModelServer::start(removes_victim()).await;

    let out = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["run", "--yes", "rm -rf victim"],
    )
    .await;

    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("config.toml:3: "), "{}", out.stderr);
    assert!(out.stderr.contains("runs are refused"), "{}", out.stderr);
    assert!(project.path().join("victim").is_dir(), "nothing ran");
    assert!(server.received().is_empty(), "the model was never asked");
}

#[tokio::test]
async fn daemon_status_says_runs_are_refused_while_the_daemon_never_had_a_good_config() {
    let daemon = Daemon::start_in(Home::with_config(BROKEN));

    let status = wait_for_config(&daemon.client().await, 1).await;
    assert!(status.config_fail_closed);
    let line = status_config_line(&daemon);
    assert!(line.contains("config.toml:3: "), "{line}");
    assert!(
        line.ends_with("runs are refused until it is fixed (or run with --ignore-config)"),
        "{line}"
    );
}

#[tokio::test]
async fn a_run_with_ignore_config_goes_on_with_the_defaults_and_says_so() {
    let daemon = Daemon::start_in(Home::with_config(BROKEN));
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text("hello")]).await;

    let out = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["run", "--ignore-config", "say hello"],
    )
    .await;

    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(said.contains("config.toml:3: "), "{said}");
    assert!(
        said.contains("this run ignores the file (--ignore-config)"),
        "{said}"
    );
    assert!(said.contains("hello"), "{said}");
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn fixing_the_file_lets_runs_start_again() {
    let mut env = TestEnv::builder()
        .config(BROKEN)
        .model(vec![anthropic::text("hello")])
        .start()
        .await;
    let send = || Request::Send {
        session: env.session.clone(),
        text: "say hello".into(),
        images: Vec::new(),
        delivery: protocol::Delivery::FollowUp,
        options: env.options(),
    };
    assert!(
        env.client.request(send()).await.is_err(),
        "refused while broken"
    );

    std::fs::write(env.daemon.paths().config_file(), RULE).unwrap();
    let status = wait_for_config(&env.client, 2).await;
    assert_eq!(status.config_error, None);
    assert!(!status.config_fail_closed);

    let reply = env.client.request(send()).await.expect("the run starts");
    assert!(
        matches!(reply, Reply::Sent { started: Some(_) }),
        "{reply:?}"
    );
    let events = until_finished(&mut env.incoming).await;
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Completed);
    assert!(
        error_lines(&events).is_empty(),
        "{:?}",
        error_lines(&events)
    );
}

#[tokio::test]
async fn a_config_broken_while_running_keeps_its_deny_rule_and_every_run_warns() {
    let daemon = Daemon::start_in(Home::with_config(RULE));
    let project = project_with_victim();
    let server = ModelServer::start(removes_victim()).await;
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;

    std::fs::write(daemon.paths().config_file(), BROKEN).unwrap();
    let status = wait_for_config(&client, 2).await;
    assert!(status.config_error.is_some());
    assert!(!status.config_fail_closed);
    // Commands granted, as `--allow bash` does: only the rule stands in the way.
    start_run(&client, &session, "remove victim", run_options(&server)).await;
    let events = until_finished(&mut incoming).await;

    assert!(project.path().join("victim").is_dir(), "the deny rule held");
    let results = tests::tool_results(&events);
    assert_eq!(results.len(), 1);
    assert!(results[0].1, "the call was refused: {}", results[0].2);
    let warnings = error_lines(&events);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("config.toml:3: "), "{}", warnings[0]);
    assert!(
        warnings[0].contains("the last good configuration stays in force until the file is fixed"),
        "{}",
        warnings[0]
    );
}

#[tokio::test]
async fn daemon_status_says_the_last_good_configuration_is_in_force_after_a_broken_change() {
    let daemon = Daemon::start_in(Home::with_config(RULE));
    let client = daemon.client().await;

    std::fs::write(daemon.paths().config_file(), BROKEN).unwrap();
    wait_for_config(&client, 2).await;
    let line = status_config_line(&daemon);
    assert!(line.contains("config.toml:3: "), "{line}");
    assert!(
        line.ends_with("the last good configuration is in force"),
        "{line}"
    );
}

#[tokio::test]
async fn an_interrupted_run_is_not_resumed_by_a_daemon_started_with_a_broken_config() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::text("A partial answer that").hold_after(4, &gate),
        anthropic::text("Resumed."),
    ])
    .await;
    let provider_env = [
        ("ANTHROPIC_BASE_URL", server.url()),
        ("ANTHROPIC_API_KEY", "test-key"),
    ];
    let mut daemon = Daemon::start_with(Home::with_config(RULE), &provider_env);
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "question", run_options(&server)).await;
    while !matches!(
        next_event(&mut incoming).await.event,
        Event::TextDelta { .. }
    ) {}
    daemon.kill();
    gate.release();
    std::fs::write(daemon.paths().config_file(), BROKEN).unwrap();
    daemon.restart();

    let mut client = daemon.client().await;
    subscribe(&client, &session, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    let events = until_finished(&mut incoming).await;
    let (stop, error) = tests::stop_and_error(&events);
    assert_eq!(stop, StopReason::Error);
    let error = error.expect("the reason is recorded");
    assert!(error.contains("it was not resumed"), "{error}");
    assert!(error.contains("config.toml:3: "), "{error}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.event, Event::RunResumed { .. })),
        "the run did not go on"
    );
    assert_eq!(server.received().len(), 1, "the model was not asked again");
}

#[test]
fn config_check_names_the_file_and_line_and_what_a_broken_file_does() {
    let home = Home::with_config(BROKEN);

    let check = home.run_agentctl(&["config", "check"]);

    assert_eq!(check.status.code(), Some(1));
    let said = String::from_utf8_lossy(&check.stderr);
    let at = format!("{}:3: ", home.paths().config_file().display());
    assert!(said.contains(&at), "{said}");
    assert!(said.contains("refuses runs"), "{said}");
    assert!(said.contains("--ignore-config"), "{said}");
}

#[test]
fn config_check_warns_of_a_writable_directory_that_holds_a_path_entry() {
    let tools = tempfile::tempdir().unwrap();
    let bin = tools.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let home = Home::with_config(&format!(
        "[sandbox]\nwritable = [\"{}\"]\n",
        tools.path().display()
    ));

    let check = home
        .agentctl(&["config", "check"])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();

    assert_eq!(check.status.code(), Some(0), "a warning, not an error");
    let said = String::from_utf8_lossy(&check.stderr);
    assert!(said.contains("warning"), "{said}");
    assert!(said.contains("config.toml:2: "), "{said}");
    assert!(said.contains(&bin.display().to_string()), "{said}");
    assert!(said.contains("plant programs"), "{said}");
}

/// The `config` line of `agentctl daemon status`.
fn status_config_line(daemon: &Daemon) -> String {
    let shown = daemon.home.run_agentctl(&["daemon", "status"]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    shown
        .lines()
        .find(|l| l.starts_with("config"))
        .unwrap_or_else(|| panic!("no config line in:\n{shown}"))
        .to_string()
}
