//! Editors as clients (docs/architecture.md#editors-acp): a real `agentctl acp` and daemon, driven
//! by the Agent Client Protocol's own client side, with the scripted model.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{
    CancelNotification, ListSessionsRequest, LoadSessionRequest, NewSessionRequest,
    PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionUpdate, SetSessionModeRequest, StopReason, ToolCallStatus,
    ToolKind,
};
use protocol::{Event, Request, SessionState};
use serde_json::json;
use tests::acp::{agent_text, with_editor};
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::{Daemon, session_in, start_run, until_finished};

fn pick(
    options: &[agent_client_protocol::v1::schema::PermissionOption],
    kind: PermissionOptionKind,
) -> RequestPermissionResponse {
    let option = options
        .iter()
        .find(|o| o.kind == kind)
        .expect("the option is offered");
    RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
        SelectedPermissionOutcome::new(option.option_id.clone()),
    ))
}

#[tokio::test]
async fn a_prompt_streams_text_and_a_tool_call_and_ends_its_turn() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "the contents\n").unwrap();
    let model = ModelServer::start(vec![
        anthropic::reply()
            .text("Reading it.")
            .tool("read", json!({"path": "a.txt"}))
            .build(),
        anthropic::text("All done."),
    ])
    .await;
    let daemon = Daemon::start();
    let cwd = project.path().to_path_buf();
    let ((), mut child) = with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, init| {
            assert!(init.agent_capabilities.load_session);
            assert!(init.agent_capabilities.session_capabilities.list.is_some());
            assert!(init.agent_capabilities.prompt_capabilities.embedded_context);
            let session = cx
                .send_request(NewSessionRequest::new(cwd.clone()))
                .block_task()
                .await
                .unwrap();
            let modes = session.modes.expect("modes are offered");
            assert_eq!(&*modes.current_mode_id.0, "default");
            assert!(
                modes
                    .available_modes
                    .iter()
                    .any(|m| &*m.id.0 == "accept-edits")
            );
            let answer = cx
                .send_request(PromptRequest::new(
                    session.session_id.clone(),
                    vec!["read a.txt".into()],
                ))
                .block_task()
                .await
                .unwrap();
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
            let updates = got.drain();
            assert_eq!(agent_text(&updates), "Reading it.All done.");
            // The editor's own prompt is not echoed back.
            assert!(
                !updates
                    .iter()
                    .any(|u| matches!(u, SessionUpdate::UserMessageChunk(_)))
            );
            let call = updates
                .iter()
                .find_map(|u| match u {
                    SessionUpdate::ToolCall(call) => Some(call.clone()),
                    _ => None,
                })
                .expect("a tool call");
            assert_eq!(call.kind, ToolKind::Read);
            assert_eq!(call.title, "read a.txt");
            assert_eq!(call.locations[0].path, cwd.join("a.txt"));
            let update = updates
                .iter()
                .find_map(|u| match u {
                    SessionUpdate::ToolCallUpdate(update) => Some(update.clone()),
                    _ => None,
                })
                .expect("its result");
            assert_eq!(update.tool_call_id, call.tool_call_id);
            assert_eq!(update.fields.status, Some(ToolCallStatus::Completed));
            let shown = serde_json::to_string(&update.fields.content).unwrap();
            assert!(shown.contains("the contents"), "{shown}");
        },
    )
    .await;
    assert!(child.wait().await.unwrap().success());
}

#[tokio::test]
async fn permissions_are_asked_in_the_editor_once_always_and_rejected() {
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool("write", json!({"path": "x.txt", "content": "one"})),
        anthropic::text("ok"),
        anthropic::tool(
            "edit",
            json!({"path": "x.txt", "old_string": "one", "new_string": "two"}),
        ),
        anthropic::text("ok"),
        anthropic::tool("write", json!({"path": "x.txt", "content": "three"})),
        anthropic::text("ok"),
        anthropic::tool("write", json!({"path": "y.txt", "content": "no"})),
        anthropic::text("ok"),
    ])
    .await;
    let daemon = Daemon::start();
    let cwd = project.path().to_path_buf();
    let file = cwd.join("x.txt");
    with_editor(&daemon.home, &model, project.path(), async move |cx, mut got, _| {
        let session = tests::acp::new_session(&cx, &cwd).await;
        let prompt = |text: &str| cx.send_request(PromptRequest::new(session.clone(), vec![text.into()]));
        // Allow once.
        let pending = prompt("write one");
        let (ask, responder) = got.ask().await;
        let title = ask.tool_call.fields.title.clone().unwrap_or_default();
        assert!(title.contains("x.txt"), "{title}");
        responder.respond(pick(&ask.options, PermissionOptionKind::AllowOnce)).unwrap();
        assert_eq!(pending.block_task().await.unwrap().stop_reason, StopReason::EndTurn);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "one");
        got.drain();
        // Allow always: the next change of that file does not ask.
        let pending = prompt("edit it");
        let (ask, responder) = got.ask().await;
        responder.respond(pick(&ask.options, PermissionOptionKind::AllowAlways)).unwrap();
        assert_eq!(pending.block_task().await.unwrap().stop_reason, StopReason::EndTurn);
        let updates = got.drain();
        let diff = updates
            .iter()
            .find_map(|u| match u {
                SessionUpdate::ToolCallUpdate(update) => serde_json::to_value(update).ok(),
                _ => None,
            })
            .expect("the edit's result");
        let diff = &diff["content"].as_array().unwrap().iter().find(|c| c["type"] == "diff").cloned().expect("a diff");
        assert_eq!(diff["oldText"], "one");
        assert_eq!(diff["newText"], "two");
        let answer = prompt("write three").block_task().await.unwrap();
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "three");
        // Reject.
        let pending = prompt("write y");
        let (ask, responder) = got.ask().await;
        responder.respond(pick(&ask.options, PermissionOptionKind::RejectOnce)).unwrap();
        assert_eq!(pending.block_task().await.unwrap().stop_reason, StopReason::EndTurn);
        assert!(!cwd.join("y.txt").exists());
        let failed = got.drain().into_iter().any(|u| {
            matches!(u, SessionUpdate::ToolCallUpdate(update) if update.fields.status == Some(ToolCallStatus::Failed))
        });
        assert!(failed);
    })
    .await;
}

#[tokio::test]
async fn a_permission_answered_in_a_terminal_is_withdrawn_from_the_editor() {
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool("write", json!({"path": "z.txt", "content": "z"})),
        anthropic::text("ok"),
    ])
    .await;
    let daemon = Daemon::start();
    let cwd = project.path().to_path_buf();
    let home = daemon.home.path().to_path_buf();
    let bin = tests::binary("agentctl");
    with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, _| {
            let session = tests::acp::new_session(&cx, &cwd).await;
            let pending =
                cx.send_request(PromptRequest::new(session.clone(), vec!["write z".into()]));
            let (_ask, responder) = got.ask().await;
            let approved = tokio::process::Command::new(&bin)
                .args(["approve", &session.0, "1"])
                .env("AGENTD_HOME", &home)
                .output()
                .await
                .unwrap();
            assert!(approved.status.success(), "{approved:?}");
            // The editor's request is withdrawn (`$/cancel_request`).
            tokio::time::timeout(tests::WAIT, responder.cancellation().cancelled())
                .await
                .expect("the editor's request is withdrawn");
            assert_eq!(
                pending.block_task().await.unwrap().stop_reason,
                StopReason::EndTurn
            );
            assert_eq!(std::fs::read_to_string(cwd.join("z.txt")).unwrap(), "z");
        },
    )
    .await;
}

#[tokio::test]
async fn cancel_during_a_command_ends_the_prompt_cancelled_and_kills_it() {
    let project = tempfile::tempdir().unwrap();
    let started = project.path().join("started");
    tests::make_fifo(&started);
    let model = ModelServer::start(vec![anthropic::tool(
        "bash",
        json!({"command": "echo $$ > started; exec sleep 600"}),
    )])
    .await;
    let daemon = Daemon::start();
    let cwd = project.path().to_path_buf();
    with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, _| {
            let session = tests::acp::new_session(&cx, &cwd).await;
            let pending =
                cx.send_request(PromptRequest::new(session.clone(), vec!["sleep".into()]));
            let (ask, responder) = got.ask().await;
            responder
                .respond(pick(&ask.options, PermissionOptionKind::AllowOnce))
                .unwrap();
            let pgid = tests::read_fifo(&started).await;
            cx.send_notification(CancelNotification::new(session.clone()))
                .unwrap();
            assert_eq!(
                pending.block_task().await.unwrap().stop_reason,
                StopReason::Cancelled
            );
            assert!(tests::group_is_gone(pgid).await);
        },
    )
    .await;
}

#[tokio::test]
async fn an_editor_opens_a_session_a_terminal_started_replayed_then_live() {
    let project = tempfile::tempdir().unwrap();
    let daemon = Daemon::start();
    let (_client, session, mut incoming, model, gate) =
        tests::session_mid_reply(&daemon, project.path()).await;
    let cwd = project.path().to_path_buf();
    let id = session.as_str().to_string();
    let release = gate.clone();
    with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, _| {
            cx.send_request(LoadSessionRequest::new(id.clone(), cwd.clone()))
                .block_task()
                .await
                .unwrap();
            // The history came before the answer.
            let replayed = got.drain();
            assert_eq!(
                tests::acp::user_texts(&replayed),
                ["first question", "second question"]
            );
            assert!(
                agent_text(&replayed).starts_with("first answer"),
                "{}",
                agent_text(&replayed)
            );
            // Then live: the rest of the reply that was held.
            release.release();
            let mut text = agent_text(&replayed);
            while !text.ends_with("second answer") {
                text.push_str(&agent_text(&[got.update().await]));
            }
            assert_eq!(text, "first answersecond answer");
        },
    )
    .await;
    let finished = until_finished(&mut incoming).await;
    assert_eq!(
        tests::stop_and_error(&finished).0,
        protocol::StopReason::Completed
    );
}

#[tokio::test]
async fn a_prompt_sent_while_running_is_queued_and_answered_when_the_run_ends() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let model = ModelServer::start(vec![
        anthropic::reply()
            .text("working ")
            .text("on it")
            .build()
            .hold_after(4, &gate),
        anthropic::text("done with both"),
    ])
    .await;
    let daemon = Daemon::start();
    let cwd = project.path().to_path_buf();
    let release = gate.clone();
    let socket = daemon.paths().socket;
    with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, _| {
            let session = tests::acp::new_session(&cx, &cwd).await;
            let first = cx.send_request(PromptRequest::new(session.clone(), vec!["first".into()]));
            got.updates_until(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)))
                .await;
            let second =
                cx.send_request(PromptRequest::new(session.clone(), vec!["second".into()]));
            // The daemon holds it as a follow-up of the running run.
            let mut watcher = agentctl::client::Client::connect(&socket, "test")
                .await
                .unwrap();
            let id = protocol::SessionId(session.0.to_string());
            tests::subscribe(&watcher, &id, 0).await;
            let mut events = watcher.take_incoming().unwrap();
            tests::events_until(
                &mut events,
                |e| matches!(e, Event::QueueChanged { follow_up, .. } if !follow_up.is_empty()),
            )
            .await;
            release.release();
            assert_eq!(
                first.block_task().await.unwrap().stop_reason,
                StopReason::EndTurn
            );
            assert_eq!(
                second.block_task().await.unwrap().stop_reason,
                StopReason::EndTurn
            );
        },
    )
    .await;
    let requests = model.received();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].body.to_string().contains("second"));
}

#[tokio::test]
async fn sessions_are_listed_and_modes_set() {
    let project = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let (_client, elsewhere, _incoming) = session_in(&daemon, other.path()).await;
    let cwd = project.path().to_path_buf();
    let id = with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, _| {
            let session = tests::acp::new_session(&cx, &cwd).await;
            let all = cx
                .send_request(ListSessionsRequest::new())
                .block_task()
                .await
                .unwrap();
            let ids: Vec<String> = all
                .sessions
                .iter()
                .map(|s| s.session_id.0.to_string())
                .collect();
            assert!(
                ids.contains(&session.0.to_string())
                    && ids.contains(&elsewhere.as_str().to_string())
            );
            let here = cx
                .send_request(ListSessionsRequest::new().cwd(cwd.clone()))
                .block_task()
                .await
                .unwrap();
            assert_eq!(here.sessions.len(), 1);
            assert_eq!(here.sessions[0].cwd, cwd);
            cx.send_request(SetSessionModeRequest::new(session.clone(), "accept-edits"))
                .block_task()
                .await
                .unwrap();
            let update = got
                .updates_until(|u| matches!(u, SessionUpdate::CurrentModeUpdate(_)))
                .await;
            let Some(SessionUpdate::CurrentModeUpdate(mode)) = update.last() else {
                unreachable!()
            };
            assert_eq!(&*mode.current_mode_id.0, "accept-edits");
            let refused = cx
                .send_request(SetSessionModeRequest::new(session.clone(), "bypass"))
                .block_task()
                .await;
            assert!(refused.is_err());
            // A shortened id is refused with the full one (events carry the full id).
            let prefix: String = elsewhere.as_str().chars().take(4).collect();
            let short = cx
                .send_request(LoadSessionRequest::new(prefix, cwd.clone()))
                .block_task()
                .await
                .expect_err("a prefix is refused");
            let shown = format!("{short:?}");
            assert!(shown.contains(elsewhere.as_str()), "{shown}");
            session.0.to_string()
        },
    )
    .await
    .0;
    let listed = daemon.home.run_agentctl(&["sessions", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let mine = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(mine["mode"], "accept-edits");
}

#[tokio::test]
async fn malformed_messages_and_unknown_methods_get_errors_and_the_adapter_goes_on() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let mut child = daemon
        .home
        .agentctl_with(&model, project.path(), &["acp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut exchange = async |send: &str| -> serde_json::Value {
        stdin
            .write_all(format!("{send}\n").as_bytes())
            .await
            .unwrap();
        let line = tokio::time::timeout(tests::WAIT, lines.next_line())
            .await
            .expect("an answer")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    };
    let init = exchange(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
    )
    .await;
    assert_eq!(init["result"]["protocolVersion"], 1);
    let garbage = exchange("{not json").await;
    assert_eq!(garbage["error"]["code"], -32700);
    let unknown = exchange(r#"{"jsonrpc":"2.0","id":2,"method":"session/fly","params":{}}"#).await;
    assert_eq!(unknown["error"]["code"], -32601);
    let bad = exchange(
        r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"nope"}}"#,
    )
    .await;
    assert!(bad["error"]["code"].is_i64(), "{bad}");
    let list = exchange(r#"{"jsonrpc":"2.0","id":4,"method":"session/list","params":{}}"#).await;
    assert!(list["result"]["sessions"].is_array(), "{list}");
    drop(stdin);
    assert!(child.wait().await.unwrap().success());
}

#[tokio::test]
async fn closing_the_editor_leaves_the_session_running_in_the_daemon() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let model = ModelServer::start(vec![
        anthropic::reply()
            .text("long ")
            .text("answer")
            .build()
            .hold_after(4, &gate),
    ])
    .await;
    let daemon = Daemon::start();
    let cwd = project.path().to_path_buf();
    let (id, mut child) = with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, _| {
            let session = tests::acp::new_session(&cx, &cwd).await;
            let pending = cx.send_request(PromptRequest::new(session.clone(), vec!["go".into()]));
            got.updates_until(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)))
                .await;
            pending.detach();
            session.0.to_string()
        },
    )
    .await;
    // The editor closed its end: the adapter leaves, the run does not.
    assert!(child.wait().await.unwrap().success());
    let session = protocol::SessionId(id);
    let mut watcher = daemon.client().await;
    let info = tests::subscribe(&watcher, &session, 0).await;
    assert_eq!(info.state, SessionState::Running);
    let mut incoming = watcher.take_incoming().unwrap();
    gate.release();
    let finished = until_finished(&mut incoming).await;
    assert_eq!(
        tests::stop_and_error(&finished).0,
        protocol::StopReason::Completed
    );
    let _ = watcher.request(Request::Unsubscribe { session }).await;
    let _: PathBuf = project.path().to_path_buf();
}

#[tokio::test]
async fn the_editors_mcp_servers_serve_that_session_only() {
    use agent_client_protocol::v1::schema::{EnvVariable, McpServer, McpServerStdio};
    let events = tests::mcp::ServerEvents::new();
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        anthropic::tool("mcp__ed__env", json!({"name": "EDITOR_SET"})),
        anthropic::text("ok"),
    ])
    .await;
    let daemon = Daemon::start();
    let cwd = project.path().to_path_buf();
    let server = McpServer::Stdio(McpServerStdio::new("ed", tests::binary("mcp_server")).env(
        vec![
            EnvVariable::new("EDITOR_SET", "from the editor"),
            EnvVariable::new("MCP_TEST_EVENTS", events.path().display().to_string()),
        ],
    ));
    let home = daemon.home.path().to_path_buf();
    let bin = tests::binary("agentctl");
    with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, init| {
            assert!(init.agent_capabilities.mcp_capabilities.http);
            let session = cx
                .send_request(NewSessionRequest::new(cwd.clone()).mcp_servers(vec![server]))
                .block_task()
                .await
                .unwrap()
                .session_id;
            let pending = cx.send_request(PromptRequest::new(session.clone(), vec!["env?".into()]));
            // An MCP call asks, like any in the default mode.
            let (ask, responder) = got.ask().await;
            let title = ask.tool_call.fields.title.clone().unwrap_or_default();
            assert!(title.contains("ed/env"), "{title}");
            responder
                .respond(pick(&ask.options, PermissionOptionKind::AllowOnce))
                .unwrap();
            assert_eq!(
                pending.block_task().await.unwrap().stop_reason,
                StopReason::EndTurn
            );
            let shown = serde_json::to_string(&got.drain()).unwrap();
            assert!(shown.contains("from the editor"), "{shown}");
            let listed = tokio::process::Command::new(&bin)
                .args(["mcp", "list", "--json"])
                .env("AGENTD_HOME", &home)
                .output()
                .await
                .unwrap();
            let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
            assert_eq!(listed[0]["name"], "ed");
            assert_eq!(listed[0]["scope"], "session");
            assert_eq!(listed[0]["session"], session.0.to_string());
            session
        },
    )
    .await;
    events.until("started").await;
    // Another session does not get them.
    model.push(vec![anthropic::text("other")]);
    let (client, other, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &other, "hi", tests::run_options(&model)).await;
    until_finished(&mut incoming).await;
    let last = model.received().last().unwrap().body.to_string();
    assert!(
        last.contains("\"read\"") && !last.contains("mcp__ed__"),
        "{last}"
    );
}

#[tokio::test]
async fn a_session_whose_last_seq_lies_past_its_last_event_loads_whole() {
    // A daemon killed mid-reply leaves numbers reserved for deltas that never came.
    let home = tests::Home::new();
    tests::write_session(&home, "plain01", 50);
    tests::write_session(&home, "reserved01", 50);
    tests::reserve_through(&home, "reserved01", 150);
    let model = ModelServer::start(vec![]).await;
    let daemon = Daemon::start_in(home);
    let project = tempfile::tempdir().unwrap();
    let ((plain, reserved), _adapter) = with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, _| {
            let mut counts = Vec::new();
            for id in ["plain01", "reserved01"] {
                cx.send_request(LoadSessionRequest::new(id, "/"))
                    .block_task()
                    .await
                    .unwrap();
                counts.push(got.drain().len());
            }
            (counts[0], counts[1])
        },
    )
    .await;
    assert!(plain > 0);
    assert_eq!(plain, reserved, "the whole history came before the answer");
}
