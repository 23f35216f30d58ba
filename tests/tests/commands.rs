//! One-shot commands from any shell: `run --detach`, `run --continue`, `steer`, `queue`,
//! `cancel`, `approve`, `deny`, `show`, `sessions`.

use protocol::Event;
use serde_json::{Value, json};
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::{Daemon, agentctl_output, next_event, subscribe, until_finished};

#[tokio::test]
async fn a_detached_run_is_steered_queued_cancelled_and_shown_from_other_shells() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server =
        ModelServer::start(vec![anthropic::text("working on it").hold_after(3, &gate)]).await;
    let daemon = Daemon::start();
    let started = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["run", "--detach", "start the work"],
    )
    .await;
    assert_eq!(started.code, Some(0), "{}", started.stderr);
    let id = started.stdout.trim().to_string();
    server.wait_for_requests(1).await;

    let mut watcher = daemon.client().await;
    subscribe(&watcher, &protocol::SessionId(id.clone()), 0).await;
    let mut events = watcher.take_incoming().unwrap();

    let listed: Value = serde_json::from_str(
        &agentctl_output(&daemon, &server, project.path(), &["sessions", "--json"])
            .await
            .stdout,
    )
    .unwrap();
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["state"], "running");

    let steer = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["steer", &id, "use the new API"],
    )
    .await;
    assert_eq!(
        steer.stdout.trim(),
        "queued to steer the running run at its next turn"
    );
    let queue = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["queue", &id[..5], "then write docs"],
    )
    .await;
    assert_eq!(
        queue.stdout.trim(),
        "queued as a follow-up of the running run"
    );
    let table = agentctl_output(&daemon, &server, project.path(), &["sessions"])
        .await
        .stdout;
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("running") && l.contains("1/1")),
        "{table}"
    );

    let cancel = agentctl_output(&daemon, &server, project.path(), &["cancel", &id]).await;
    assert_eq!(cancel.code, Some(0));
    let finished = until_finished(&mut events).await;
    let Some(Event::RunFinished {
        returned_messages, ..
    }) = finished.last().map(|e| &e.event)
    else {
        panic!()
    };
    let texts: Vec<&str> = returned_messages.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["use the new API", "then write docs"]);

    let shown = agentctl_output(&daemon, &server, project.path(), &["show", &id]).await;
    assert!(shown.stdout.contains("cancelled"), "{}", shown.stdout);
    assert!(shown.stdout.contains("use the new API"), "{}", shown.stdout);
    let json = agentctl_output(&daemon, &server, project.path(), &["show", &id, "--json"]).await;
    let kinds: Vec<String> = json
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("run_started"));
    assert_eq!(kinds.last().map(String::as_str), Some("run_finished"));
    gate.release();
}

#[tokio::test]
async fn approve_and_deny_answer_from_another_shell_and_a_late_answer_is_told_who_decided() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "echo ok > approved.txt"})),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start();
    let started = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["run", "--detach", "make a file"],
    )
    .await;
    let id = started.stdout.trim().to_string();
    let mut watcher = daemon.client().await;
    subscribe(&watcher, &protocol::SessionId(id.clone()), 0).await;
    let mut events = watcher.take_incoming().unwrap();
    loop {
        if let Event::PermissionRequested { request, .. } = next_event(&mut events).await.event {
            assert_eq!(request.0, 1);
            break;
        }
    }
    let table = agentctl_output(&daemon, &server, project.path(), &["sessions"])
        .await
        .stdout;
    assert!(table.contains("awaiting approval"), "{table}");
    let approve = agentctl_output(&daemon, &server, project.path(), &["approve", &id, "1"]).await;
    assert_eq!(
        (approve.code, approve.stdout.trim()),
        (Some(0), "request 1 allowed")
    );
    let late = agentctl_output(&daemon, &server, project.path(), &["deny", &id, "1"]).await;
    assert_eq!(late.code, Some(1));
    assert!(
        late.stderr.contains("already decided by agentctl"),
        "{}",
        late.stderr
    );
    until_finished(&mut events).await;
    assert!(project.path().join("approved.txt").exists());
}

#[tokio::test]
async fn run_continue_goes_on_in_the_latest_session_of_this_directory() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![
        anthropic::text("first answer"),
        anthropic::text("second answer"),
    ])
    .await;
    let daemon = Daemon::start();
    let first = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["run", "remember the number 7"],
    )
    .await;
    assert_eq!(first.code, Some(0));
    let other = tempfile::tempdir().unwrap();
    let client = daemon.client().await;
    tests::create_session(&client, other.path()).await;
    let again = agentctl_output(
        &daemon,
        &server,
        project.path(),
        &["run", "--continue", "what was the number?"],
    )
    .await;
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    let messages = &server.received()[1].body["messages"];
    assert_eq!(messages[0]["content"][0]["text"], "remember the number 7");
    assert_eq!(messages[1]["content"][0]["text"], "first answer");
    assert_eq!(messages[2]["content"][0]["text"], "what was the number?");

    let nowhere = tempfile::tempdir().unwrap();
    let none = agentctl_output(
        &daemon,
        &server,
        nowhere.path(),
        &["run", "--continue", "hi"],
    )
    .await;
    assert_eq!(none.code, Some(1));
    assert!(none.stderr.contains("no session in"), "{}", none.stderr);
}
