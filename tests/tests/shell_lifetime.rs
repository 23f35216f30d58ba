//! How long background shells live (docs/architecture.md#background-shells): they outlive the
//! run that started them (a cancel leaves them), end with their session or the daemon, and the
//! next run, resumed or new, is told which were lost; a fork does not inherit them.

use protocol::{Event, Reply, Request, ShellEnd};
use serde_json::json;
use tests::model_server::{Gate, anthropic};
use tests::restart::after_restart;
use tests::shells::{
    alive, assert_third_request_says_shell_1_is_lost, background, read_pid, shell_events, shells,
};
use tests::{TestEnv, events_until, group_is_gone, until_finished};

#[tokio::test]
async fn deleting_the_session_ends_its_shells() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::reply()
                .tool("bash", background("echo $$ > one.pid; exec sleep 600"))
                .tool(
                    "bash",
                    background("setsid sleep 600 & echo $! > two.pid; exec sleep 600"),
                )
                .build(),
            anthropic::text("Two running."),
        ])
        .start()
        .await;
    env.run("start two").await;
    let one = read_pid(env.project(), "one.pid").await;
    let left = read_pid(env.project(), "two.pid").await;
    assert!(alive(one) && alive(left));
    let id = env.session.0.clone();
    let removed = env.daemon.home.run_agentctl(&["rm", &id]);
    assert!(
        removed.status.success(),
        "{}",
        String::from_utf8_lossy(&removed.stderr)
    );
    assert!(group_is_gone(one).await, "shell 1 ({one}) still runs");
    // A process that left the shell's group is found by its marker.
    assert!(
        group_is_gone(left).await,
        "the detached process ({left}) still runs"
    );
    let events = events_until(&mut env.incoming, |e| matches!(e, Event::SessionDeleted)).await;
    assert_eq!(
        shell_events(&events)
            .into_iter()
            .filter(|(_, end)| end.is_some())
            .collect::<Vec<_>>(),
        [(1, Some(ShellEnd::Lost)), (2, Some(ShellEnd::Lost))]
    );
}

#[tokio::test]
async fn shells_end_with_the_daemon_and_the_next_run_is_told_which_were_lost() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", background("echo $$ > dev.pid; exec sleep 600")),
            anthropic::text("The dev server runs."),
            anthropic::text("It is gone; starting it again would be next."),
        ])
        .start()
        .await;
    env.run("start the dev server").await;
    let pid = read_pid(env.project(), "dev.pid").await;
    let stopped = env.daemon.home.run_agentctl(&["daemon", "stop"]);
    assert!(
        stopped.status.success(),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    env.daemon.wait_exit();
    assert!(
        group_is_gone(pid).await,
        "the shell ({pid}) outlived the daemon"
    );

    env.daemon.restart();
    let mut client = env.daemon.client().await;
    tests::subscribe(&client, &env.session, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    let events = events_until(&mut incoming, |e| matches!(e, Event::Notice { .. })).await;
    assert_eq!(
        shell_events(&events).last(),
        Some(&(1, Some(ShellEnd::Lost)))
    );
    let Event::Notice { text } = &events.last().unwrap().event else {
        unreachable!()
    };
    assert!(
        text.contains("shell 1 (`echo $$ > dev.pid; exec sleep 600`)"),
        "{text}"
    );

    tests::start_run(&client, &env.session, "is it up?", env.options()).await;
    until_finished(&mut incoming).await;
    assert_third_request_says_shell_1_is_lost(&env.server).await;
    // Told once: the first run after the loss only.
    env.server.push(vec![anthropic::text("Still gone.")]);
    tests::start_run(&client, &env.session, "and now?", env.options()).await;
    until_finished(&mut incoming).await;
    let asked = env.server.wait_for_requests(4).await;
    let messages = asked[3].body["messages"].to_string();
    assert_eq!(
        messages
            .matches("these background shells no longer run")
            .count(),
        1
    );
}

#[tokio::test]
async fn a_run_resumed_after_a_restart_is_told_which_shells_were_lost() {
    let gate = Gate::new();
    let mut env = TestEnv::builder()
        .provider_in_daemon()
        .model(vec![
            anthropic::tool("bash", background("echo $$ > watch.pid; exec sleep 600")),
            anthropic::text("Watching").hold_after(2, &gate),
            anthropic::text("Picking up again."),
        ])
        .start()
        .await;
    env.start_run("watch the files").await;
    env.server.wait_for_requests(2).await;
    let pid = read_pid(env.project(), "watch.pid").await;
    assert!(env.daemon.terminate());
    gate.release();
    assert!(
        group_is_gone(pid).await,
        "the shell ({pid}) outlived the daemon"
    );
    env.daemon.restart();

    let events = after_restart(&env.daemon, &env.session).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e.event, Event::RunResumed { .. })),
        "the run was resumed"
    );
    assert!(shell_events(&events).contains(&(1, Some(ShellEnd::Lost))));
    assert_third_request_says_shell_1_is_lost(&env.server).await;
}

#[tokio::test]
async fn cancelling_the_run_leaves_its_background_shell_running() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", background("echo $$ > keep.pid; exec sleep 600")),
            anthropic::tool("bash", json!({"command": "echo $$ > fore.pid; sleep 600"})),
        ])
        .start()
        .await;
    env.start_run("start and wait").await;
    let fore = read_pid(env.project(), "fore.pid").await;
    env.cancel().await;
    until_finished(&mut env.incoming).await;
    let kept = read_pid(env.project(), "keep.pid").await;
    assert!(
        group_is_gone(fore).await,
        "the foreground command was killed"
    );
    assert!(alive(kept), "the background shell still runs");
    let listed = shells(&env.client, &env.session).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].end, None);
    env.client
        .request(Request::KillShell {
            session: env.session.clone(),
            shell: 1,
        })
        .await
        .unwrap();
    assert!(group_is_gone(kept).await);
}

#[tokio::test]
async fn a_fork_does_not_inherit_the_shells_of_its_original() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", background("echo $$ > dev.pid; exec sleep 600")),
            anthropic::text("The dev server runs."),
            anthropic::text("In the fork."),
        ])
        .start()
        .await;
    env.run("start the dev server").await;
    let Reply::SessionCreated(fork) = env
        .client
        .request(Request::Fork {
            session: env.session.clone(),
            turn: None,
        })
        .await
        .unwrap()
    else {
        panic!("Fork answered with something else")
    };
    let Reply::Shells(forked) = env
        .client
        .request(Request::Shells {
            session: fork.id.clone(),
        })
        .await
        .unwrap()
    else {
        panic!("Shells answered with something else")
    };
    assert_eq!(forked.len(), 1);
    assert_eq!(forked[0].end, Some(ShellEnd::Lost));
    // The original's shell goes on.
    assert_eq!(shells(&env.client, &env.session).await[0].end, None);
    assert!(alive(read_pid(env.project(), "dev.pid").await));
    // The fork's model hears that it has no shell running.
    tests::subscribe(&env.client, &fork.id, 0).await;
    tests::start_run(&env.client, &fork.id, "go on", env.options()).await;
    assert_third_request_says_shell_1_is_lost(&env.server).await;
}

#[tokio::test]
async fn a_shell_left_by_a_crashed_daemon_is_killed_by_the_next_one() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", background("echo $$ > dev.pid; exec sleep 600")),
            anthropic::text("The dev server runs."),
        ])
        .start()
        .await;
    env.run("start the dev server").await;
    let pid = read_pid(env.project(), "dev.pid").await;
    env.daemon.kill();
    assert!(
        alive(pid),
        "a daemon killed with SIGKILL cannot end its shells"
    );
    env.daemon.restart();
    assert!(
        group_is_gone(pid).await,
        "the next daemon killed the shell ({pid})"
    );
    let client = env.daemon.client().await;
    assert_eq!(
        shells(&client, &env.session).await[0].end,
        Some(ShellEnd::Lost)
    );
}
