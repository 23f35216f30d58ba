//! An editor for the tests: the Agent Client Protocol's client side (the official crate) over
//! the pipes of a real `agentctl acp`, collecting the session updates and the permission
//! requests it receives so that a test can wait on them.

use std::path::Path;
use std::process::Stdio;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    InitializeRequest, InitializeResponse, RequestPermissionRequest, RequestPermissionResponse,
    SessionNotification, SessionUpdate,
};
use agent_client_protocol::{Agent, ByteStreams, Client, v1};
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// A permission request the editor received, with the way to answer it.
pub type PermissionAsk = (
    RequestPermissionRequest,
    v1::Responder<RequestPermissionResponse>,
);

/// What the editor received, in order.
pub struct Received {
    /// Session updates.
    pub updates: mpsc::UnboundedReceiver<SessionNotification>,
    /// Permission requests.
    pub asks: mpsc::UnboundedReceiver<PermissionAsk>,
}

impl Received {
    /// The next update, failing the test after [`crate::WAIT`].
    pub async fn update(&mut self) -> SessionUpdate {
        tokio::time::timeout(crate::WAIT, self.updates.recv())
            .await
            .expect("an update within the wait")
            .expect("the connection is open")
            .update
    }

    /// Updates until one matches `done`, all of them returned.
    pub async fn updates_until(
        &mut self,
        done: impl Fn(&SessionUpdate) -> bool,
    ) -> Vec<SessionUpdate> {
        let mut seen = Vec::new();
        loop {
            let update = self.update().await;
            let finished = done(&update);
            seen.push(update);
            if finished {
                return seen;
            }
        }
    }

    /// The next permission request, failing the test after [`crate::WAIT`].
    pub async fn ask(&mut self) -> PermissionAsk {
        tokio::time::timeout(crate::WAIT, self.asks.recv())
            .await
            .expect("a permission request within the wait")
            .expect("the connection is open")
    }

    /// Every update received so far, without waiting.
    pub fn drain(&mut self) -> Vec<SessionUpdate> {
        let mut seen = Vec::new();
        while let Ok(note) = self.updates.try_recv() {
            seen.push(note.update);
        }
        seen
    }
}

/// The text of the agent message chunks among `updates`.
pub fn agent_text(updates: &[SessionUpdate]) -> String {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                agent_client_protocol::v1::schema::ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The text of each user message chunk among `updates`, in order.
pub fn user_texts(updates: &[SessionUpdate]) -> Vec<String> {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::UserMessageChunk(chunk) => serde_json::to_value(&chunk.content).ok(),
            _ => None,
        })
        .map(|c| c["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Starts `agentctl acp` for `home` in `cwd` (with the scripted model's address in its
/// environment), initializes it and runs `body` as the editor. Returns what `body` returned
/// and the `agentctl` process, whose stdin is closed once `body` is done.
pub async fn with_editor<R: Send + 'static>(
    home: &crate::Home,
    model: &crate::model_server::ModelServer,
    cwd: &Path,
    body: impl AsyncFnOnce(v1::ConnectionTo<Agent>, Received, InitializeResponse) -> R + Send + 'static,
) -> (R, tokio::process::Child) {
    with_editor_running(home, model, cwd, &["acp"], body).await
}

/// [`with_editor`] for `agentctl ARGS…` (`acp` with global flags, such as `--host NAME acp`).
pub async fn with_editor_running<R: Send + 'static>(
    home: &crate::Home,
    model: &crate::model_server::ModelServer,
    cwd: &Path,
    args: &[&str],
    body: impl AsyncFnOnce(v1::ConnectionTo<Agent>, Received, InitializeResponse) -> R + Send + 'static,
) -> (R, tokio::process::Child) {
    let mut child = home
        .agentctl_with(model, cwd, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("agentctl acp starts");
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let transport = ByteStreams::new(stdin.compat_write(), stdout.compat());
    let (update_tx, updates) = mpsc::unbounded_channel();
    let (ask_tx, asks) = mpsc::unbounded_channel();
    let result = Client
        .v1()
        .name("test-editor")
        .on_receive_notification(
            async move |note: SessionNotification, _cx: v1::ConnectionTo<Agent>| {
                let _ = update_tx.send(note);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest,
                        responder: v1::Responder<RequestPermissionResponse>,
                        _cx: v1::ConnectionTo<Agent>| {
                let _ = ask_tx.send((request, responder));
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: v1::ConnectionTo<Agent>| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            Ok(body(cx, Received { updates, asks }, init).await)
        })
        .await
        .expect("the editor's connection works");
    (result, child)
}

/// Opens a new daemon session in `cwd` through the editor's connection.
pub async fn new_session(
    cx: &v1::ConnectionTo<Agent>,
    cwd: &Path,
) -> agent_client_protocol::v1::schema::SessionId {
    cx.send_request(agent_client_protocol::v1::schema::NewSessionRequest::new(
        cwd.to_path_buf(),
    ))
    .block_task()
    .await
    .expect("session/new works")
    .session_id
}
