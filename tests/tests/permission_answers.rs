//! Attacks on the permission flow (docs/architecture.md#permissions-and-modes) and the socket's
//! peer check (docs/architecture.md#sandbox): each tries to get a call that asks run without a
//! person allowing it, or a client that must be refused served, and asserts the safe outcome.

use agentctl::client::{Client, ClientError, Incoming};
use protocol::{Decision, ErrorCode, Event, PermissionRequestId, SessionId};
use serde_json::json;
use tests::model_server::anthropic;
use tests::{TestEnv, TestEnvBuilder, answer, next_event, subscribe, until_finished};
use tokio::sync::mpsc::UnboundedReceiver;

/// Waits for the `PermissionRequested` of the session itself (`None`) and of a child (`Some`),
/// in whatever order they come: (own request, (child, child's request)).
async fn own_and_childs_requests(
    incoming: &mut UnboundedReceiver<Incoming>,
) -> (PermissionRequestId, (SessionId, PermissionRequestId)) {
    let (mut own, mut child) = (None, None);
    while own.is_none() || child.is_none() {
        if let Event::PermissionRequested {
            session, request, ..
        } = next_event(incoming).await.event
        {
            match session {
                None => own = Some(request),
                Some(s) => child = Some((s, request)),
            }
        }
    }
    (own.expect("own request"), child.expect("child's request"))
}

/// Waits for the `PermissionResolved` of the session's own request `request`.
async fn own_resolved(incoming: &mut UnboundedReceiver<Incoming>, request: PermissionRequestId) {
    loop {
        if let Event::PermissionResolved {
            session: None,
            request: r,
            ..
        } = next_event(incoming).await.event
            && r == request
        {
            return;
        }
    }
}

/// A parent and its background child, each with a permission request open under the same
/// number (each session numbers its own), the child's stream followed.
struct Asking {
    env: TestEnv,
    /// The parent's own request.
    own: PermissionRequestId,
    /// The child.
    child: SessionId,
    /// The child's request.
    childs: PermissionRequestId,
    /// The child's events, to see its run end.
    child_events: UnboundedReceiver<Incoming>,
    /// The client those events come on, kept open.
    _watcher: Client,
}

/// Starts a parent (set up by `builder`) that starts a background child whose
/// `touch child_ran` asks, then asks for `parent_command` itself; returns once both ask.
async fn parent_and_child_asking(builder: TestEnvBuilder, parent_command: &str) -> Asking {
    let mut env = builder
        .model(vec![
            anthropic::tool(
                "task",
                json!({"description": "rm", "prompt": "CHILD-RM: do it", "background": true}),
            ),
            anthropic::tool("bash", json!({"command": parent_command})),
            anthropic::text("parent done"),
            anthropic::text("noted"),
        ])
        .route(
            "CHILD-RM",
            vec![
                anthropic::tool("bash", json!({"command": "touch child_ran"})),
                anthropic::text("child done"),
            ],
        )
        .start()
        .await;
    env.start_run_with("go", tests::asking_options(&env.server))
        .await;
    let (own, (child, childs)) = own_and_childs_requests(&mut env.incoming).await;
    assert_eq!(own, childs, "the two sessions number their requests alike");
    let mut watcher = env.daemon.client().await;
    subscribe(&watcher, &child, 0).await;
    let child_events = watcher.take_incoming().expect("incoming");
    Asking {
        env,
        own,
        child,
        childs,
        child_events,
        _watcher: watcher,
    }
}

/// A parent that starts a child in the background whose `bash` call asks, then asks for a
/// `bash` call of its own: both requests are open at once, and (each session numbering its
/// own) carry the same number. A second answer to the parent's request, once the first
/// decided it, must be refused: it must not become the answer to the child's request, which
/// nobody allowed.
#[tokio::test]
async fn a_second_answer_to_a_decided_request_does_not_answer_a_childs_request() {
    let Asking {
        mut env,
        own,
        child,
        childs,
        mut child_events,
        _watcher,
    } = parent_and_child_asking(TestEnv::builder(), "touch parent_ran").await;
    // The first person allows the parent's `touch parent_ran`.
    answer(&env.client, &env.session, own, Decision::Allow)
        .await
        .expect("the first answer decides");
    own_resolved(&mut env.incoming, own).await;
    // A second client, which saw the same request, allows it too: too late.
    let other = env.daemon.client().await;
    let late = answer(&other, &env.session, own, Decision::Allow).await;
    let late_code = match &late {
        Err(ClientError::Daemon(info)) => Some(info.code),
        _ => None,
    };
    // The child's request is still the child's to decide: denied here.
    let denied = answer(&env.client, &child, childs, Decision::Deny).await;
    until_finished(&mut child_events).await;
    let child_ran = env.project().join("child_ran").exists();
    assert!(
        !child_ran,
        "the child's `touch child_ran` ran, allowed by a second answer to the parent's own \
         request {own} (late answer: {late:?}; child's deny: {denied:?})"
    );
    assert_eq!(late_code, Some(ErrorCode::AlreadyDecided), "{late:?}");
    assert!(denied.is_ok(), "{denied:?}");
}

/// The next permission request of the session itself, or `None` when the run finished first.
async fn next_request(incoming: &mut UnboundedReceiver<Incoming>) -> Option<PermissionRequestId> {
    loop {
        match next_event(incoming).await.event {
            Event::PermissionRequested {
                session: None,
                request,
                ..
            } => return Some(request),
            Event::RunFinished { .. } => return None,
            _ => {}
        }
    }
}

/// "Allow always" for `ls` keeps a rule no broader than `ls`: a line that runs `ls` and
/// something else still asks.
#[tokio::test]
async fn allow_always_for_ls_does_not_cover_a_line_that_runs_more() {
    let lines = [
        "ls; touch evil1",
        "ls && touch evil2",
        "ls $(touch evil3)",
        "ls | tee evil4",
        "ls > evil5",
        "ls\ntouch evil6",
        "ls `touch evil7`",
        "ls -a; touch evil8",
    ];
    let mut script = vec![anthropic::tool("bash", json!({"command": "ls"}))];
    script.extend(
        lines
            .iter()
            .map(|line| anthropic::tool("bash", json!({ "command": line }))),
    );
    // The rule was made: a plain `ls` runs without asking.
    script.push(anthropic::tool("bash", json!({"command": "ls ."})));
    script.push(anthropic::text("listed"));
    let mut env = TestEnv::builder().model(script).start().await;
    env.start_run_with("list", tests::asking_options(&env.server))
        .await;
    let first = next_request(&mut env.incoming).await.expect("ls asks");
    answer(&env.client, &env.session, first, Decision::AllowAlways)
        .await
        .expect("answered");
    for line in lines {
        let asked = next_request(&mut env.incoming).await;
        let Some(request) = asked else {
            panic!("`{line}` ran without asking after \"allow always\" for `ls`");
        };
        answer(&env.client, &env.session, request, Decision::Deny)
            .await
            .expect("denied");
    }
    let asked = next_request(&mut env.incoming).await;
    assert_eq!(asked, None, "`ls .` asked: no rule was made");
    for n in 1..=lines.len() {
        let marker = env.project().join(format!("evil{n}"));
        assert!(!marker.exists(), "{} was made", marker.display());
    }
}

/// A request left open by a cancelled run is decided by the run's end: a later "allow" is
/// refused and the call never runs.
#[tokio::test]
async fn an_answer_after_a_cancel_is_refused_and_runs_nothing() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", json!({"command": "touch cancelled_ran"})),
            anthropic::text("never"),
        ])
        .start()
        .await;
    env.start_run_with("go", tests::asking_options(&env.server))
        .await;
    let request = next_request(&mut env.incoming).await.expect("it asks");
    env.cancel().await;
    until_finished(&mut env.incoming).await;
    let late = answer(&env.client, &env.session, request, Decision::AllowAlways).await;
    assert!(
        matches!(&late, Err(ClientError::Daemon(e)) if e.code == ErrorCode::AlreadyDecided),
        "{late:?}"
    );
    assert!(!env.project().join("cancelled_ran").exists());
}

/// A request's number names it in its own session only: a client answering the same number
/// in another session does not decide it.
#[tokio::test]
async fn an_answer_in_another_session_does_not_decide_a_request() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", json!({"command": "touch crossed"})),
            anthropic::text("done"),
        ])
        .start()
        .await;
    env.start_run_with("go", tests::asking_options(&env.server))
        .await;
    let request = next_request(&mut env.incoming).await.expect("it asks");
    let other_dir = tempfile::tempdir().expect("a second project");
    let other = env.daemon.client().await;
    let elsewhere = tests::create_session(&other, other_dir.path()).await.id;
    let crossed = answer(&other, &elsewhere, request, Decision::Allow).await;
    assert!(
        matches!(&crossed, Err(ClientError::Daemon(e)) if e.code == ErrorCode::UnknownPermissionRequest),
        "{crossed:?}"
    );
    // Still open in its own session: the person there denies it.
    answer(&env.client, &env.session, request, Decision::Deny)
        .await
        .expect("still open");
    until_finished(&mut env.incoming).await;
    assert!(!env.project().join("crossed").exists());
}

/// A request open when the daemon stopped is asked again under a new number: an answer to the
/// old number is refused, and the call waits for an answer to the new one.
#[tokio::test]
async fn an_answer_to_a_request_from_before_a_restart_is_refused() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("bash", json!({"command": "touch restarted_ran"})),
            anthropic::text("done"),
        ])
        .provider_in_daemon()
        .start()
        .await;
    env.start_run_with("go", tests::asking_options(&env.server))
        .await;
    let old = next_request(&mut env.incoming).await.expect("it asks");
    env.daemon.kill();
    env.daemon.restart();
    let mut client = env.daemon.client().await;
    subscribe(&client, &env.session, 0).await;
    let mut incoming = client.take_incoming().expect("incoming");
    let mut resumed = false;
    let again = loop {
        match next_event(&mut incoming).await.event {
            Event::RunResumed { .. } => resumed = true,
            Event::PermissionRequested {
                session: None,
                request,
                ..
            } if resumed => break request,
            _ => {}
        }
    };
    assert_ne!(again, old);
    let late = answer(&client, &env.session, old, Decision::Allow).await;
    assert!(
        matches!(&late, Err(ClientError::Daemon(e)) if e.code == ErrorCode::AlreadyDecided),
        "{late:?}"
    );
    answer(&client, &env.session, again, Decision::Deny)
        .await
        .expect("the new request is open");
    until_finished(&mut incoming).await;
    assert!(!env.project().join("restarted_ran").exists());
}

/// A hook that allows only `touch parent_ok`, after the test lets it go (a FIFO), and says
/// nothing of other calls.
fn slow_allowing_hook(dir: &std::path::Path, gate: &std::path::Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let hook = dir.join("allow_parent.sh");
    let body = format!(
        "#!/bin/sh\ncase \"$(cat)\" in *parent_ok*) read go < {}; echo '{{\"hookSpecificOutput\":{{\"hookEventName\":\"PermissionRequest\",\"permissionDecision\":\"allow\"}}}}' ;; esac\n",
        gate.display()
    );
    std::fs::write(&hook, body).expect("hook written");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("mode");
    format!(
        "retry_base_ms = 5\nretry_max_ms = 20\n[[hooks.PermissionRequest]]\ncommand = \"{}\"\n",
        hook.display()
    )
}

/// A PermissionRequest hook's "allow" is the answer to the request it was run for: when a
/// person decided that request first, the hook's answer must not decide a child's request
/// of the same number (a call the hook never saw).
#[tokio::test]
async fn a_hooks_late_allow_does_not_answer_a_childs_request() {
    let hooks = tempfile::tempdir().expect("a hooks directory");
    let gate = hooks.path().join("gate");
    tests::make_fifo(&gate);
    let Asking {
        mut env,
        own,
        child,
        childs,
        mut child_events,
        _watcher,
    } = parent_and_child_asking(
        TestEnv::builder().config(&slow_allowing_hook(hooks.path(), &gate)),
        "touch parent_ok",
    )
    .await;
    // The person denies the parent's call while its hook still thinks.
    answer(&env.client, &env.session, own, Decision::Deny)
        .await
        .expect("the person decides first");
    own_resolved(&mut env.incoming, own).await;
    let release = tokio::task::spawn_blocking(move || std::fs::write(gate, "go\n"));
    tokio::time::timeout(tests::WAIT, release)
        .await
        .expect("the parent's hook runs")
        .expect("writer")
        .expect("the hook is let go");
    // The parent's call ends (refused) only after its hook's answer was handed in.
    loop {
        if let Event::ToolResult { name, .. } = next_event(&mut env.incoming).await.event
            && name == "bash"
        {
            break;
        }
    }
    let denied = answer(&env.client, &child, childs, Decision::Deny).await;
    until_finished(&mut child_events).await;
    assert!(
        !env.project().join("child_ran").exists(),
        "the child's `touch child_ran` ran, allowed by the hook run for the parent's \
         `touch parent_ok` (child's deny: {denied:?})"
    );
    assert!(!env.project().join("parent_ok").exists());
    assert!(denied.is_ok(), "{denied:?}");
}

/// A request the timeout denied stays denied: a late "allow" is refused and runs nothing.
#[tokio::test]
async fn an_answer_after_the_timeout_is_refused_and_runs_nothing() {
    let mut env = TestEnv::builder()
        .config("retry_base_ms = 5\nretry_max_ms = 20\npermission_timeout_secs = 1\n")
        .model(vec![
            anthropic::tool("bash", json!({"command": "touch late_ran"})),
            anthropic::text("done"),
        ])
        .start()
        .await;
    env.start_run_with("go", tests::asking_options(&env.server))
        .await;
    let request = next_request(&mut env.incoming).await.expect("it asks");
    until_finished(&mut env.incoming).await;
    let late = answer(&env.client, &env.session, request, Decision::AllowAlways).await;
    assert!(
        matches!(&late, Err(ClientError::Daemon(e)) if e.code == ErrorCode::AlreadyDecided),
        "{late:?}"
    );
    assert!(!env.project().join("late_ran").exists());
}
