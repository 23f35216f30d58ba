//! What the daemon answers a language server: its diagnostics are recorded, and every request a
//! server makes of its client gets an answer (an unanswered one stalls some servers): settings by
//! section, `null` for registrations and progress tokens, the workspace folder, and no to edits.

use std::ops::ControlFlow;

use async_lsp::router::Router;
use async_lsp::{ResponseError, ServerSocket};
use lsp_types::notification::{LogMessage, Notification, PublishDiagnostics, ShowMessage};
use lsp_types::request::{
    ApplyWorkspaceEdit, CodeLensRefresh, InlayHintRefreshRequest, RegisterCapability,
    SemanticTokensRefresh, ShowMessageRequest, UnregisterCapability, WorkDoneProgressCreate,
    WorkspaceConfiguration, WorkspaceDiagnosticRefresh, WorkspaceFoldersRequest,
};
use lsp_types::{ApplyWorkspaceEditResponse, WorkspaceFolder};
use serde_json::Value;

use super::published::PublishedStore;

/// rust-analyzer's `experimental/serverStatus`: whether it has work pending (`quiescent`). Read
/// as JSON: a form the daemon did not expect must not end the connection.
enum ServerStatus {}

impl Notification for ServerStatus {
    type Params = Value;
    const METHOD: &'static str = "experimental/serverStatus";
}

/// The event that ends a server's main loop (the way async-lsp means it to end: dropping the
/// last socket would make the loop panic).
pub(crate) struct Stop;

/// What the handlers need.
pub(crate) struct ClientState {
    /// The server's name, for the log.
    name: String,
    /// Where diagnostics go.
    published: PublishedStore,
    /// The configured settings, answered by section.
    settings: Value,
    /// The workspace folder.
    folder: WorkspaceFolder,
    /// A socket kept by the loop itself, so that the loop never sees every socket gone.
    _socket: ServerSocket,
}

/// The router of a server's messages.
pub(crate) fn router(
    socket: ServerSocket,
    name: String,
    published: PublishedStore,
    settings: Value,
    folder: WorkspaceFolder,
) -> Router<ClientState> {
    let mut router = Router::new(ClientState {
        name,
        published,
        settings,
        folder,
        _socket: socket,
    });
    router
        .notification::<PublishDiagnostics>(|state, params| {
            // Only the root's files are edited through this server: what it says of others
            // is not kept.
            if let Ok(path) = params.uri.to_file_path()
                && let Ok(root) = state.folder.uri.to_file_path()
                && path.starts_with(&root)
            {
                state
                    .published
                    .record(path, params.version, params.diagnostics);
            }
            ControlFlow::Continue(())
        })
        .notification::<LogMessage>(|state, params| {
            tracing::debug!(server = %state.name, "language server says: {}", capped(&params.message));
            ControlFlow::Continue(())
        })
        .notification::<ShowMessage>(|state, params| {
            tracing::debug!(server = %state.name, "language server says: {}", capped(&params.message));
            ControlFlow::Continue(())
        })
        .notification::<ServerStatus>(|state, params| {
            if let Some(quiescent) = params.get("quiescent").and_then(Value::as_bool) {
                state.published.set_busy(!quiescent);
            }
            ControlFlow::Continue(())
        })
        .unhandled_notification(|_, _| ControlFlow::Continue(()))
        .event::<Stop>(|_, _| ControlFlow::Break(Ok(())))
        .request::<WorkspaceConfiguration, _>(|state, params| {
            let answers: Vec<Value> = params
                .items
                .iter()
                .map(|item| section(&state.settings, item.section.as_deref()))
                .collect();
            async move { Ok::<_, ResponseError>(answers) }
        })
        .request::<WorkspaceFoldersRequest, _>(|state, _| {
            let folder = state.folder.clone();
            async move { Ok(Some(vec![folder])) }
        })
        .request::<RegisterCapability, _>(|_, _| async { Ok(()) })
        .request::<UnregisterCapability, _>(|_, _| async { Ok(()) })
        .request::<WorkDoneProgressCreate, _>(|_, _| async { Ok(()) })
        .request::<ShowMessageRequest, _>(|_, _| async { Ok(None) })
        .request::<WorkspaceDiagnosticRefresh, _>(|_, _| async { Ok(()) })
        .request::<SemanticTokensRefresh, _>(|_, _| async { Ok(()) })
        .request::<InlayHintRefreshRequest, _>(|_, _| async { Ok(()) })
        .request::<CodeLensRefresh, _>(|_, _| async { Ok(()) })
        .request::<ApplyWorkspaceEdit, _>(|_, _| async {
            Ok(ApplyWorkspaceEditResponse {
                applied: false,
                failure_reason: Some("this client does not apply edits".to_string()),
                failed_change: None,
            })
        });
    router
}

/// The settings under a dotted `section` (`python.analysis`), `null` when there are none; the
/// whole settings without a section.
fn section(settings: &Value, section: Option<&str>) -> Value {
    let Some(section) = section.filter(|s| !s.is_empty()) else {
        return settings.clone();
    };
    section
        .split('.')
        .try_fold(settings, |value, key| value.get(key))
        .cloned()
        .unwrap_or(Value::Null)
}

/// A server's message, capped for the log.
fn capped(message: &str) -> String {
    message.chars().take(500).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_answered_by_section() {
        let settings = serde_json::json!({"python": {"analysis": {"mode": "strict"}}});
        assert_eq!(
            section(&settings, Some("python.analysis")),
            serde_json::json!({"mode": "strict"})
        );
        assert_eq!(section(&settings, Some("pylsp")), Value::Null);
        assert_eq!(section(&Value::Null, Some("a.b")), Value::Null);
        assert_eq!(section(&settings, None), settings);
    }
}
