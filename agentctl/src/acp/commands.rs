//! The slash commands an editor offers: the command files of the session's project and of
//! the user, sent as `available_commands_update` when a session opens
//! (docs/architecture.md#skills-and-commands).

use agent_client_protocol::v1;
use protocol::{Reply, Request};

use super::bridge::Bridge;
use agent_client_protocol::Client as Editor;

/// Tells the editor the slash commands of the session's project and of the user
/// (`available_commands_update`); typed as `/NAME ARGS`, they expand in the daemon.
pub(super) async fn announce(
    bridge: &Bridge,
    editor: &v1::ConnectionTo<Editor>,
    session: agent_client_protocol::v1::schema::SessionId,
    cwd: &std::path::Path,
) {
    use agent_client_protocol::v1::schema::{
        AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionNotification,
        SessionUpdate, UnstructuredCommandInput,
    };
    let request = Request::Extensions {
        cwd: cwd.to_string_lossy().into_owned(),
    };
    let Ok(Reply::Extensions(found)) = bridge.daemon().request(request).await else {
        return;
    };
    let commands = found
        .commands
        .into_iter()
        .map(|c| {
            let mut command = AvailableCommand::new(c.name, c.description);
            if let Some(hint) = c.argument_hint {
                command = command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint),
                ));
            }
            command
        })
        .collect();
    let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands));
    let _ = editor.send_notification(SessionNotification::new(session, update));
}
