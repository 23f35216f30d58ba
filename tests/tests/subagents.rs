//! Subagents (docs/architecture.md#subagents): a `task` call makes a child session that does one
//! task with its own history and answers with its final message; children run in parallel, nest no
//! deeper than `max_depth`, follow agent definitions, ask through their parent's clients, stop with
//! their parent, and go with it when it is deleted.

use protocol::{Decision, Event, Request, SessionEvent, SessionId, SessionInfo, StopReason};
use serde_json::{Value, json};
use tests::model_server::{Gate, ModelServer, Received, anthropic};
use tests::{
    Daemon, Home, TestEnv, next_event, run_options, session_in, start_run, subscribe, tool_results,
    until_finished,
};

/// The names of the tools a request offered.
fn tool_names(request: &Received) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A request's system prompt as text.
fn system(request: &Received) -> String {
    match &request.body["system"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The requests whose first user message holds `marker`.
fn requests_of(server: &ModelServer, marker: &str) -> Vec<Received> {
    server
        .received()
        .into_iter()
        .filter(|r| tests::model_server::first_user_text(&r.body).contains(marker))
        .collect()
}

/// Every session of the daemon.
async fn sessions(daemon: &Daemon) -> Vec<SessionInfo> {
    let client = daemon.client().await;
    client.list_sessions().await.expect("listing").sessions
}

/// The children `SubagentStarted` events name, in order.
fn children(events: &[SessionEvent]) -> Vec<SessionId> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::SubagentStarted { child, .. } => Some(child.clone()),
            _ => None,
        })
        .collect()
}

/// Every event of `session` from the start through its first run's end.
async fn history_of(daemon: &Daemon, session: &SessionId) -> Vec<SessionEvent> {
    let mut client = daemon.client().await;
    subscribe(&client, session, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    until_finished(&mut incoming).await
}

#[tokio::test]
async fn a_task_call_runs_a_child_that_reads_a_file_and_answers() {
    let mut env = TestEnv::builder()
        .file("notes.txt", "the secret is 7\n")
        .model(vec![
            anthropic::tool(
                "task",
                json!({"description": "read the notes", "prompt": "CHILD-ONE: read notes.txt and say the secret"}),
            ),
            anthropic::text("The child says 7."),
        ])
        .route(
            "CHILD-ONE",
            vec![
                anthropic::tool("read", json!({"path": "notes.txt"})),
                anthropic::text("The secret is 7."),
            ],
        )
        .start()
        .await;
    let events = env.run("delegate it").await;

    let results = tool_results(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    let (name, is_error, output) = &results[0];
    assert_eq!(name, "task");
    assert!(!is_error, "{output}");
    assert!(output.contains("The secret is 7."), "{output}");
    let child = children(&events).pop().expect("a child started");
    assert!(
        output.contains(child.as_str()),
        "the result names the child: {output}"
    );
    assert!(
        events
            .iter()
            .all(|e| !matches!(&e.event, Event::ToolCall(c) if c.name == "read")),
        "the child's read is not in the parent's history"
    );

    // The child is a session of its own, under its parent, with its own history.
    let listed = sessions(&env.daemon).await;
    let info = listed.iter().find(|s| s.id == child).expect("child listed");
    assert_eq!(info.parent.as_ref(), Some(&env.session));
    let own = history_of(&env.daemon, &child).await;
    let reads = tool_results(&own);
    assert_eq!(reads.len(), 1);
    assert!(reads[0].2.contains("the secret is 7"), "{reads:?}");
    // It started from the prompt only, knew it was a subagent, and had no `task` tool.
    let first = &requests_of(&env.server, "CHILD-ONE")[0];
    assert_eq!(first.body["messages"].as_array().unwrap().len(), 1);
    assert!(system(first).contains("You are a subagent"));
    assert!(!tool_names(first).contains(&"task".to_string()));
    assert!(tool_names(&env.server.received()[0]).contains(&"task".to_string()));

    // `sessions --json` names the parent; a finished child is shown with --all only.
    let out = env.daemon.home.run_agentctl(&["sessions", "--json"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rows.iter().all(|r| r["id"] != child.as_str()), "{rows:?}");
    let out = env
        .daemon
        .home
        .run_agentctl(&["sessions", "--json", "--all"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let row = rows.iter().find(|r| r["id"] == child.as_str()).unwrap();
    assert_eq!(row["parent"], env.session.as_str());
    let table = env.daemon.home.run_agentctl(&["sessions", "--all"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains(&format!("└ {child}")), "{table}");

    // Deleting the parent deletes the child.
    env.client
        .request(Request::DeleteSession {
            session: env.session.clone(),
            force: false,
        })
        .await
        .unwrap();
    let left = sessions(&env.daemon).await;
    assert!(
        left.iter().all(|s| s.id != child && s.id != env.session),
        "{left:?}"
    );
}

#[tokio::test]
async fn three_task_calls_of_one_reply_run_at_once() {
    let project = tempfile::tempdir().unwrap();
    let task = |n: usize| json!({"description": format!("part {n}"), "prompt": format!("PART-{n}: do part {n}")});
    let server = ModelServer::start(vec![
        anthropic::reply()
            .tool("task", task(1))
            .tool("task", task(2))
            .tool("task", task(3))
            .build(),
        anthropic::text("All three done."),
    ])
    .await;
    let gates: Vec<Gate> = (0..3).map(|_| Gate::new()).collect();
    for (n, gate) in gates.iter().enumerate() {
        let answer = format!("part {} is done", n + 1);
        server.route(
            &format!("PART-{}", n + 1),
            vec![anthropic::text(&answer).hold_after(2, gate)],
        );
    }
    let daemon = Daemon::start();
    let (client, parent, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &parent, "split it", run_options(&server)).await;
    // Each child holds its reply open: all three asked before any of them could finish.
    server.wait_for_requests(4).await;
    for gate in &gates {
        gate.release();
    }
    let events = until_finished(&mut incoming).await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|(_, is_error, _)| !is_error));
    for n in 1..=3 {
        let part = format!("part {n} is done");
        assert!(
            results.iter().any(|(_, _, o)| o.contains(&part)),
            "{results:?}"
        );
    }
    // Their tokens count in the parent's run.
    let Event::RunFinished { usage, .. } = tests::finished(&events) else {
        unreachable!()
    };
    assert!(
        usage.input >= 500,
        "2 parent replies and 3 children: {usage:?}"
    );
}

#[tokio::test]
async fn a_child_may_not_start_a_child_at_max_depth_one() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool(
                "task",
                json!({"description": "nest", "prompt": "NEST: try to nest"}),
            ),
            anthropic::text("ok"),
        ])
        .route(
            "NEST",
            vec![
                anthropic::tool("task", json!({"description": "deeper", "prompt": "DEEPER"})),
                anthropic::text("I could not nest."),
            ],
        )
        .start()
        .await;
    let events = env.run("go").await;
    let child = children(&events).pop().unwrap();
    let own = history_of(&env.daemon, &child).await;
    let results = tool_results(&own);
    assert_eq!(results.len(), 1);
    assert!(results[0].1, "refused");
    assert!(results[0].2.contains("max_depth"), "{}", results[0].2);
    assert!(requests_of(&env.server, "DEEPER").is_empty());
    assert_eq!(sessions(&env.daemon).await.len(), 2, "no grandchild");
}

#[tokio::test]
async fn an_agent_definition_from_claude_agents_shapes_the_child() {
    let setup = TestEnv::builder();
    let agents = setup.project().join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews diffs for bugs.\ntools: Read, Grep\n---\nREVIEWER-RULES: be terse.\n",
    )
    .unwrap();
    let mut env = setup
        .model(vec![
            anthropic::tool(
                "task",
                json!({"description": "review", "prompt": "REVIEW-IT", "agent": "reviewer"}),
            ),
            anthropic::text("reviewed"),
        ])
        .route(
            "REVIEW-IT",
            vec![
                anthropic::tool("bash", json!({"command": "echo not allowed"})),
                anthropic::text("Looks fine."),
            ],
        )
        .start()
        .await;
    let events = env.run("review").await;
    assert!(tool_results(&events)[0].2.contains("Looks fine."));
    // The parent's `task` tool lists the agent.
    let parent_request = &env.server.received()[0];
    let task = parent_request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "task")
        .unwrap()
        .to_string();
    assert!(task.contains("reviewer: Reviews diffs for bugs."), "{task}");
    // The child's prompt has the body; its tools are the two named.
    let child_request = &requests_of(&env.server, "REVIEW-IT")[0];
    assert!(system(child_request).contains("REVIEWER-RULES: be terse."));
    assert_eq!(tool_names(child_request), ["read", "grep"]);
    let child = children(&events).pop().unwrap();
    let refused = tool_results(&history_of(&env.daemon, &child).await);
    assert!(refused[0].1 && refused[0].2.contains("not available to this subagent"));
}

#[tokio::test]
async fn a_childs_permission_request_is_answered_from_the_parents_client() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool(
                "task",
                json!({"description": "write", "prompt": "ASKER: write it"}),
            ),
            anthropic::text("parent done"),
        ])
        .route(
            "ASKER",
            vec![
                anthropic::tool("bash", json!({"command": "echo yes > answered.txt"})),
                anthropic::text("written"),
            ],
        )
        .start()
        .await;
    // Someone is there to ask, and nothing is granted.
    let options = tests::asking_options(&env.server);
    env.start_run_with("go", options).await;
    let (asker, request) = loop {
        if let Event::PermissionRequested {
            session, request, ..
        } = next_event(&mut env.incoming).await.event
        {
            break (session.expect("the child's request"), request);
        }
    };
    assert_ne!(asker, env.session);
    // Answered through the parent's own session id: it reaches the child.
    env.client
        .request(Request::Answer {
            session: env.session.clone(),
            request,
            decision: Decision::Allow,
        })
        .await
        .expect("answered");
    let events = until_finished(&mut env.incoming).await;
    assert!(events.iter().any(|e| matches!(
        &e.event,
        Event::PermissionResolved { session: Some(s), .. } if *s == asker
    )));
    assert!(!tool_results(&events)[0].1);
    assert_eq!(
        std::fs::read_to_string(env.project().join("answered.txt")).unwrap(),
        "yes\n"
    );
}

#[tokio::test]
async fn cancelling_the_parent_kills_the_childs_running_command() {
    let setup = TestEnv::builder();
    let started = setup.project().join("started");
    tests::make_fifo(&started);
    let mut env = setup
        .model(vec![anthropic::tool(
            "task",
            json!({"description": "sleep", "prompt": "SLEEPER: wait"}),
        )])
        .route(
            "SLEEPER",
            vec![anthropic::tool(
                "bash",
                json!({"command": "echo $$ > started; sleep 60"}),
            )],
        )
        .start()
        .await;
    env.start_run("go").await;
    let pgid = tests::read_fifo(&started).await;
    env.cancel().await;
    let events = until_finished(&mut env.incoming).await;
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Aborted);
    // SAFETY: kill with signal 0 only checks that the group exists.
    let alive = unsafe { libc::killpg(pgid, 0) } == 0;
    assert!(!alive, "the child's command was killed");
    let child = children(&events).pop().unwrap();
    let own = history_of(&env.daemon, &child).await;
    assert_eq!(tests::stop_and_error(&own).0, StopReason::Aborted);
}

#[tokio::test]
async fn a_background_child_returns_at_once_and_its_result_follows_as_a_message() {
    let gate = Gate::new();
    let mut env = TestEnv::builder().model(vec![
        anthropic::tool(
            "task",
            json!({"description": "slow job", "prompt": "BACKGROUND-JOB: take your time", "background": true}),
        ),
        anthropic::text("Started it; waiting."),
        anthropic::text("The background job found 42."),
    ]).route("BACKGROUND-JOB",
        vec![anthropic::text("the answer is 42").hold_after(2, &gate)]).start().await;
    env.start_run("start it").await;
    // The parent's run ends while the child still holds its reply.
    let first = until_finished(&mut env.incoming).await;
    let results = tool_results(&first);
    assert!(results[0].2.contains("in the background"), "{results:?}");
    gate.release();
    // The child's end starts the parent again with the notification.
    let second = until_finished(&mut env.incoming).await;
    let note = second
        .iter()
        .find_map(|e| match &e.event {
            Event::UserMessage { text, .. } => Some(text.clone()),
            _ => None,
        })
        .expect("a follow-up message");
    assert!(note.contains("<task-notification>"), "{note}");
    assert!(note.contains("the answer is 42"), "{note}");
    assert!(second.iter().any(|e| matches!(
        &e.event,
        Event::SubagentFinished {
            stop_reason: StopReason::Completed,
            ..
        }
    )));
    let last = env.server.received().pop().unwrap();
    assert!(last.body.to_string().contains("task-notification"));
}

#[tokio::test]
async fn a_child_in_worktree_isolation_writes_to_its_own_worktree_only() {
    let setup = TestEnv::builder();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(setup.project())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap();
        assert!(status.success());
    };
    git(&["init", "-q"]);
    std::fs::write(setup.project().join("README"), "hi\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "init"]);
    let agents = setup.project().join(".agents/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("isolated.md"),
        "---\ndescription: Works apart.\nisolation: worktree\n---\n",
    )
    .unwrap();
    let mut env = setup.model(vec![
        anthropic::tool(
            "task",
            json!({"description": "apart", "prompt": "APART: write a file", "agent": "isolated"}),
        ),
        anthropic::text("done"),
    ]).route("APART",
        vec![
            anthropic::tool(
                "write",
                json!({"path": "made.txt", "content": "by the child\n"}),
            ),
            anthropic::text("wrote it"),
        ]).start().await;
    let events = env.run("go").await;
    assert!(!tool_results(&events)[0].1, "{:?}", tool_results(&events));
    let child = children(&events).pop().unwrap();
    let info = sessions(&env.daemon)
        .await
        .into_iter()
        .find(|s| s.id == child)
        .unwrap();
    assert!(info.branch.is_some(), "a worktree of its own");
    assert_ne!(std::path::Path::new(&info.cwd), env.project());
    assert_eq!(
        std::fs::read_to_string(std::path::Path::new(&info.cwd).join("made.txt")).unwrap(),
        "by the child\n"
    );
    assert!(!env.project().join("made.txt").exists());
}

#[tokio::test]
async fn a_parent_waiting_on_a_child_keeps_waiting_across_a_restart() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::tool(
            "task",
            json!({"description": "long", "prompt": "SURVIVOR: work"}),
        ),
        anthropic::text("The child finished after the restart."),
    ])
    .await;
    server.route(
        "SURVIVOR",
        vec![
            anthropic::text("cut by the restart").hold_after(2, &gate),
            anthropic::text("survived"),
        ],
    );
    let env = [
        ("ANTHROPIC_BASE_URL", server.url()),
        ("ANTHROPIC_API_KEY", "test-key"),
    ];
    let mut daemon = Daemon::start_with(Home::new(), &env);
    let (client, parent, _incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &parent, "go", run_options(&server)).await;
    server.wait_for_requests(2).await;
    daemon.kill();
    gate.release();
    daemon.restart();

    let events = history_of(&daemon, &parent).await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].2.contains("survived"), "{results:?}");
    assert_eq!(tests::stop_and_error(&events).0, StopReason::Completed);
    assert_eq!(children(&events).len(), 1, "no second child");
}

#[tokio::test]
async fn an_editor_answers_a_childs_request_and_sees_its_progress_on_the_task_call() {
    use agent_client_protocol::v1::schema::{
        PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionResponse,
        SelectedPermissionOutcome, SessionUpdate, StopReason as AcpStop,
    };
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool(
            "task",
            json!({"description": "write", "prompt": "EDITOR-CHILD: write"}),
        ),
        anthropic::text("parent done"),
    ])
    .await;
    model.route(
        "EDITOR-CHILD",
        vec![
            anthropic::tool("bash", json!({"command": "echo editor > from_editor.txt"})),
            anthropic::text("child done"),
        ],
    );
    let daemon = Daemon::start();
    let cwd = project.path().to_path_buf();
    let file = cwd.join("from_editor.txt");
    tests::acp::with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, _| {
            let session = tests::acp::new_session(&cx, &cwd).await;
            let pending = cx.send_request(PromptRequest::new(session.clone(), vec!["go".into()]));
            let (ask, responder) = got.ask().await;
            let title = ask.tool_call.fields.title.clone().unwrap_or_default();
            assert!(title.contains("from_editor.txt"), "{title}");
            let allow = ask
                .options
                .iter()
                .find(|o| o.kind == PermissionOptionKind::AllowOnce)
                .unwrap();
            responder
                .respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        allow.option_id.clone(),
                    )),
                ))
                .unwrap();
            assert_eq!(
                pending.block_task().await.unwrap().stop_reason,
                AcpStop::EndTurn
            );
            let updates = got.drain();
            let task_call = updates
                .iter()
                .find_map(|u| match u {
                    SessionUpdate::ToolCall(call) if call.title.starts_with("task") => {
                        Some(call.tool_call_id.clone())
                    }
                    _ => None,
                })
                .expect("the task call");
            let progress: Vec<String> = updates
                .iter()
                .filter_map(|u| match u {
                    SessionUpdate::ToolCallUpdate(update) if update.tool_call_id == task_call => {
                        serde_json::to_string(&update.fields.content).ok()
                    }
                    _ => None,
                })
                .collect();
            assert!(
                progress
                    .iter()
                    .any(|p| p.contains("subagent") && p.contains("bash")),
                "{progress:?}"
            );
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "editor\n");
        },
    )
    .await;
}
