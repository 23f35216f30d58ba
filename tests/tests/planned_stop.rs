//! A planned stop of the daemon (`agentctl daemon restart` or `stop`, SIGTERM from a service
//! manager) lets the tool calls already running finish: their results are stored, and the run
//! goes on in the next daemon from them, neither running them again nor calling them
//! interrupted. `--now` (or a grace that ran out) interrupts them, as a crash does. A resumed
//! run keeps counting the tokens of its turns before the stop.

use protocol::{Event, ResumeReason, SessionEvent, StopReason, TokenUsage};
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::restart::{after_restart, provider_env, resumed};
use tests::{
    Daemon, Home, TestEnv, WAIT, next_event, run_options, session_in, start_run, subscribe,
    tool_results,
};

fn answers(events: &[SessionEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::AssistantMessage { text, .. } if !text.is_empty() => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// `agentctl ARGS` against `server` in `cwd`, to completion within [`WAIT`]: its exit code
/// and standard output.
async fn agentctl(
    daemon: &Daemon,
    server: &ModelServer,
    cwd: &std::path::Path,
    args: &[&str],
) -> (Option<i32>, String) {
    let run = daemon.home.agentctl_with(server, cwd, args).output();
    let output = tokio::time::timeout(WAIT, run)
        .await
        .expect("agentctl finishes")
        .expect("agentctl runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    (output.status.code(), stdout)
}

/// A project with a FIFO `started` that the model's command writes its pid to, and a server
/// whose model runs `command` (after that write) and then answers "All done.".
async fn command_then_answer(command: &str) -> (tempfile::TempDir, ModelServer) {
    let project = tempfile::tempdir().unwrap();
    tests::make_fifo(&project.path().join("started"));
    let server = ModelServer::start(vec![
        anthropic::tool(
            "bash",
            json!({"command": format!("echo ran >> runs; echo $$ > started; {command}")}),
        ),
        anthropic::text("All done."),
    ])
    .await;
    (project, server)
}

#[tokio::test]
async fn a_planned_restart_lets_a_running_command_finish_and_the_run_goes_on_from_its_output() {
    let (project, server) = command_then_answer("sleep 3; echo done").await;
    let mut daemon = Daemon::start_with(Home::new(), &provider_env(&server));
    let (client, session, _incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "work", run_options(&server)).await;
    tests::read_fifo(&project.path().join("started")).await;

    let (_, said) = agentctl(&daemon, &server, project.path(), &["daemon", "restart"]).await;
    assert!(
        said.contains("waiting for 1 running tool call to finish"),
        "{said}"
    );
    assert!(daemon.wait_exit().success());

    let events = after_restart(&daemon, &session).await;
    assert_eq!(resumed(&events), [ResumeReason::Restart]);
    let results = tool_results(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    let (name, is_error, output) = &results[0];
    assert_eq!(name, "bash");
    assert!(!is_error, "{output}");
    assert!(output.contains("done"), "{output}");
    assert_eq!(
        std::fs::read_to_string(project.path().join("runs")).unwrap(),
        "ran\n",
        "the command ran once"
    );
    let (stop, error) = tests::stop_and_error(&events);
    assert_eq!(stop, StopReason::Completed, "{error:?}");
    assert_eq!(answers(&events), ["All done."]);
    // The model saw the command's real output.
    let received = server.wait_for_requests(2).await;
    let last = received[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap();
    assert!(last.to_string().contains("done"), "{last}");
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn sigterm_from_a_service_manager_lets_a_running_command_finish() {
    let (project, server) = command_then_answer("sleep 2; echo done").await;
    let mut daemon = Daemon::start_with(Home::new(), &provider_env(&server));
    let (client, session, _incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "work", run_options(&server)).await;
    tests::read_fifo(&project.path().join("started")).await;

    assert!(daemon.terminate(), "the daemon exits cleanly");
    daemon.restart();

    let events = after_restart(&daemon, &session).await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        !results[0].1 && results[0].2.contains("done"),
        "{results:?}"
    );
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Completed);
    assert_eq!(answers(&events), ["All done."]);
}

#[tokio::test]
async fn restart_now_interrupts_a_running_command_as_a_crash_would() {
    let (project, server) = command_then_answer("sleep 30; echo done").await;
    let mut daemon = Daemon::start_with(Home::new(), &provider_env(&server));
    let (client, session, _incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "work", run_options(&server)).await;
    tests::read_fifo(&project.path().join("started")).await;

    let (_, said) = agentctl(
        &daemon,
        &server,
        project.path(),
        &["daemon", "restart", "--now"],
    )
    .await;
    assert!(!said.contains("waiting for"), "{said}");
    assert!(daemon.wait_exit().success());

    let events = after_restart(&daemon, &session).await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].1);
    assert!(
        results[0]
            .2
            .contains("stopped while this call ran; it was not run again"),
        "{}",
        results[0].2
    );
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Completed);
}

#[tokio::test]
async fn a_planned_stop_does_not_wait_for_a_permission_answer_and_asks_again_after() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "touch done"})),
        anthropic::text("Touched."),
    ])
    .await;
    // A grace far longer than the test may take: only not waiting lets it pass.
    let home = Home::with_config("[daemon]\nstop_grace_secs = 600\n");
    let mut daemon = Daemon::start_with(home, &provider_env(&server));
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(
        &client,
        &session,
        "touch it",
        tests::asking_options(&server),
    )
    .await;
    while !matches!(
        next_event(&mut incoming).await.event,
        Event::PermissionRequested { .. }
    ) {}

    let (_, said) = agentctl(&daemon, &server, project.path(), &["daemon", "stop"]).await;
    assert!(!said.contains("waiting for"), "{said}");
    assert!(daemon.wait_exit().success());
    assert!(!project.path().join("done").exists());

    daemon.restart();
    let mut other = daemon.client().await;
    subscribe(&other, &session, 0).await;
    let mut incoming = other.take_incoming().unwrap();
    let mut seen_resume = false;
    loop {
        match next_event(&mut incoming).await.event {
            Event::RunResumed { reason, .. } => {
                assert_eq!(reason, ResumeReason::Restart);
                seen_resume = true;
            }
            Event::PermissionRequested { .. } if seen_resume => break,
            _ => {}
        }
    }
}

/// The last `Usage` event's run totals and cost, and the `RunFinished` tokens, among `events`.
fn usage_of(events: &[SessionEvent]) -> (TokenUsage, Option<u64>, TokenUsage) {
    let (cumulative, cost) = events
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::Usage {
                cumulative,
                cost_micros,
                ..
            } => Some((*cumulative, *cost_micros)),
            _ => None,
        })
        .expect("a Usage event");
    let finished = match tests::finished(events) {
        Event::RunFinished { usage, .. } => *usage,
        _ => unreachable!(),
    };
    (cumulative, cost, finished)
}

#[tokio::test]
async fn a_resumed_run_counts_the_tokens_and_cost_of_its_turns_before_the_restart() {
    let setup = TestEnv::builder();
    let started = setup.project().join("started");
    tests::make_fifo(&started);
    let mut env = setup
        .provider_in_daemon()
        .model(vec![
            anthropic::reply()
                .tool("bash", json!({"command": "echo $$ > started; sleep 30"}))
                .usage(1000, 100, 0, 0)
                .build(),
            anthropic::reply()
                .text("Picking up again.")
                .usage(2000, 200, 0, 0)
                .build(),
        ])
        .start()
        .await;
    env.start_run("work").await;
    let before = loop {
        if let Event::Usage { cost_micros, .. } = next_event(&mut env.incoming).await.event {
            break cost_micros.expect("the default model has a price");
        }
    };
    let pgid = tests::read_fifo(&started).await;
    env.daemon.kill();
    // SAFETY: killpg has no memory-safety preconditions.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    env.daemon.restart();

    let events = after_restart(&env.daemon, &env.session).await;
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Completed);
    let after: Vec<SessionEvent> = events
        .iter()
        .skip_while(|e| !matches!(e.event, Event::RunResumed { .. }))
        .cloned()
        .collect();
    let (cumulative, cost, finished) = usage_of(&after);
    assert_eq!((cumulative.input, cumulative.output), (3000, 300));
    assert_eq!(finished, cumulative, "RunFinished counts both turns");
    let cost = cost.expect("a cost");
    assert!(
        cost >= 2 * before,
        "the cost counts the turn before the restart: {cost} after, {before} before"
    );
}

#[tokio::test]
async fn a_resumed_run_goes_on_with_its_own_server_not_the_restarting_shells() {
    let (project, server) = command_then_answer("sleep 1; echo done").await;
    // The shell that restarts the daemon names another server; it must get nothing.
    let other = ModelServer::start(vec![anthropic::text("I should never be asked.")]).await;
    let mut daemon = Daemon::start_with(Home::new(), &provider_env(&other));
    let (client, session, _incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "work", run_options(&server)).await;
    tests::read_fifo(&project.path().join("started")).await;

    agentctl(&daemon, &other, project.path(), &["daemon", "restart"]).await;
    assert!(daemon.wait_exit().success());
    let events = after_restart(&daemon, &session).await;
    assert_eq!(resumed(&events), [ResumeReason::Restart]);
    assert_eq!(answers(&events), ["All done."]);
    assert_eq!(server.wait_for_requests(2).await.len(), 2);
    assert!(
        other.received().is_empty(),
        "the conversation went to the restarting shell's server"
    );
}
