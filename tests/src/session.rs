//! Driving sessions over the protocol client: create, subscribe, run, and read what the events
//! say (results, stop reasons, the order of calls).

use std::path::Path;
use std::time::Duration;

use agentctl::client::{Client, Incoming};
use protocol::{CreateSession, Event, Reply, Request, SessionEvent, SessionId, SessionInfo};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::{Daemon, WAIT, model_server};

/// Creates a session in `cwd` (the temp dir by default) and returns its listing.
pub async fn create_session(client: &Client, cwd: &Path) -> SessionInfo {
    create(client, CreateSession::in_dir(cwd.to_string_lossy())).await
}

/// Creates the session `request` asks for and returns its listing.
async fn create(client: &Client, request: CreateSession) -> SessionInfo {
    let reply = client
        .request(Request::CreateSession(request))
        .await
        .expect("session created");
    match reply {
        Reply::SessionCreated(info) => info,
        other => panic!("unexpected reply {other:?}"),
    }
}

/// A session in `cwd` with `mode`, watched by a new client: the client, the session and its
/// events.
pub async fn session_with_mode(
    daemon: &Daemon,
    cwd: &Path,
    mode: protocol::Mode,
) -> (Client, SessionId, UnboundedReceiver<Incoming>) {
    let mut client = daemon.client().await;
    let request = CreateSession {
        mode: Some(mode),
        ..CreateSession::in_dir(cwd.to_string_lossy())
    };
    let info = create(&client, request).await;
    subscribe(&client, &info.id, 0).await;
    let incoming = client.take_incoming().expect("incoming");
    (client, info.id, incoming)
}

/// A session titled `title` in `cwd`, subscribed by `client` from the start.
pub async fn titled(client: &Client, cwd: &Path, title: &str) -> SessionId {
    let request = CreateSession {
        title: Some(title.to_string()),
        ..CreateSession::in_dir(cwd.to_string_lossy())
    };
    let info = create(client, request).await;
    subscribe(client, &info.id, 0).await;
    info.id
}

/// [`run_options`] that grant nothing and wait for a person on every ask.
pub fn asking_options(server: &model_server::ModelServer) -> protocol::RunOptions {
    protocol::RunOptions {
        grants: Vec::new(),
        deny_unanswered: false,
        ..run_options(server)
    }
}

/// Waits for an event of `session` that is `what` (events of other sessions pass by).
pub async fn until_event_of(
    incoming: &mut UnboundedReceiver<Incoming>,
    session: &SessionId,
    what: fn(&Event) -> bool,
) {
    loop {
        let event = next_event(incoming).await;
        if event.session == *session && what(&event.event) {
            return;
        }
    }
}

/// A daemon, a session in `cwd` subscribed by a client, and that client's events.
pub async fn session_in(
    daemon: &Daemon,
    cwd: &Path,
) -> (Client, SessionId, UnboundedReceiver<Incoming>) {
    let mut client = daemon.client().await;
    let session = create_session(&client, cwd).await.id;
    subscribe(&client, &session, 0).await;
    let incoming = client.take_incoming().expect("incoming");
    (client, session, incoming)
}

/// Subscribes `client` to `session` from `from_seq`.
pub async fn subscribe(client: &Client, session: &SessionId, from_seq: u64) -> SessionInfo {
    match client
        .request(Request::Subscribe {
            session: session.clone(),
            from_seq,
        })
        .await
        .expect("subscribed")
    {
        Reply::Subscribed(info) => info,
        other => panic!("unexpected reply {other:?}"),
    }
}

/// Receives the next event, failing the test after [`WAIT`].
/// The end-of-replay marker is passed over.
pub async fn next_event(incoming: &mut UnboundedReceiver<Incoming>) -> SessionEvent {
    loop {
        match tokio::time::timeout(WAIT, incoming.recv()).await {
            Ok(Some(Incoming::Event(event))) => return event,
            Ok(Some(Incoming::ReplayDone { .. })) => {}
            Ok(other) => panic!("expected an event, got {other:?}"),
            Err(_) => panic!("no event within {WAIT:?}"),
        }
    }
}

/// Receives events until one matches `done`, returning all of them.
pub async fn events_until(
    incoming: &mut UnboundedReceiver<Incoming>,
    done: impl Fn(&Event) -> bool,
) -> Vec<SessionEvent> {
    let mut events = Vec::new();
    loop {
        let event = next_event(incoming).await;
        let finished = done(&event.event);
        events.push(event);
        if finished {
            return events;
        }
    }
}

/// Run options that point the daemon at `server` and allow writes and commands.
pub fn run_options(server: &model_server::ModelServer) -> protocol::RunOptions {
    protocol::RunOptions {
        max_turns: None,
        grants: vec![
            protocol::PermissionClass::Write,
            protocol::PermissionClass::Command,
        ],
        deny_unanswered: true,
        model: None,
        provider: None,
        env: vec![
            ("ANTHROPIC_BASE_URL".to_string(), server.url().to_string()),
            ("ANTHROPIC_API_KEY".to_string(), "test-key".to_string()),
        ],
        ignore_config: false,
    }
}

/// Answers permission request `request` of `session` with `decision`; the daemon's reply or
/// refusal, for the test to judge.
pub async fn answer(
    client: &Client,
    session: &SessionId,
    request: protocol::PermissionRequestId,
    decision: protocol::Decision,
) -> Result<Reply, agentctl::client::ClientError> {
    client
        .request(Request::Answer {
            session: session.clone(),
            request,
            decision,
        })
        .await
}

/// Sends `text` to an idle session and returns the run it started.
pub async fn start_run(
    client: &Client,
    session: &SessionId,
    text: &str,
    options: protocol::RunOptions,
) -> protocol::RunId {
    match client
        .request(Request::Send {
            session: session.clone(),
            text: text.to_string(),
            images: Vec::new(),
            delivery: protocol::Delivery::FollowUp,
            options,
        })
        .await
        .expect("message sent")
    {
        Reply::Sent { started: Some(run) } => run,
        other => panic!("expected a new run, got {other:?}"),
    }
}

/// Receives events until a run finishes, returning all of them.
pub async fn until_finished(incoming: &mut UnboundedReceiver<Incoming>) -> Vec<SessionEvent> {
    events_until(incoming, |e| matches!(e, Event::RunFinished { .. })).await
}

/// The `RunFinished` event among `events`.
pub fn finished(events: &[SessionEvent]) -> &Event {
    events
        .iter()
        .map(|e| &e.event)
        .find(|e| matches!(e, Event::RunFinished { .. }))
        .expect("the run finished")
}

/// The stop reason and error of the `RunFinished` event among `events`.
pub fn stop_and_error(events: &[SessionEvent]) -> (protocol::StopReason, Option<String>) {
    match finished(events) {
        Event::RunFinished {
            stop_reason, error, ..
        } => (*stop_reason, error.clone()),
        _ => unreachable!("finished returns a RunFinished event"),
    }
}

/// The results of tool calls among `events`, in order: (name, is_error, output).
pub fn tool_results(events: &[SessionEvent]) -> Vec<(String, bool, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolResult {
                name,
                is_error,
                output,
                ..
            } => Some((name.clone(), *is_error, output.clone())),
            _ => None,
        })
        .collect()
}

/// The tool calls and results among `events`, in order, as "call" and "result".
pub fn call_order(events: &[SessionEvent]) -> Vec<&'static str> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolCall(_) => Some("call"),
            Event::ToolResult { .. } => Some("result"),
            _ => None,
        })
        .collect()
}

/// Asks the daemon's status until it has read its configuration `generation` times.
pub async fn wait_for_config(client: &Client, generation: u64) -> protocol::DaemonStatus {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let Reply::Status(status) = client.request(Request::Status).await.expect("status") else {
            panic!("Status answered with something else")
        };
        if status.config_generation >= generation {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon did not see the config change"
        );
        // The change arrives through the file watcher; there is no event to wait on.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A session in `cwd` whose first run ("first question") answered "first answer" and whose
/// second ("second question") is under way, its reply "second answer" held after the first
/// text delta: the client, the session, its events, the model server and the gate that lets
/// the reply finish.
pub async fn session_mid_reply(
    daemon: &Daemon,
    cwd: &Path,
) -> (
    Client,
    SessionId,
    UnboundedReceiver<Incoming>,
    model_server::ModelServer,
    model_server::Gate,
) {
    use model_server::anthropic;
    let gate = model_server::Gate::new();
    let server = model_server::ModelServer::start(vec![
        anthropic::text("first answer"),
        anthropic::reply()
            .text("second ")
            .text("answer")
            .build()
            .hold_after(4, &gate),
    ])
    .await;
    let (client, session, mut incoming) = session_in(daemon, cwd).await;
    start_run(&client, &session, "first question", run_options(&server)).await;
    until_finished(&mut incoming).await;
    start_run(&client, &session, "second question", run_options(&server)).await;
    events_until(&mut incoming, |e| matches!(e, Event::TextDelta { .. })).await;
    (client, session, incoming, server, gate)
}

/// The reasoning the run showed, its thinking deltas joined.
pub fn thinking(events: &[SessionEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ThinkingDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The tokens of the run's first model turn.
pub fn first_turn_usage(events: &[SessionEvent]) -> Option<protocol::TokenUsage> {
    events.iter().find_map(|e| match &e.event {
        Event::Usage { turn, .. } => Some(*turn),
        _ => None,
    })
}
