//! Requests about a session's background shells: listing them, and ending one
//! (docs/architecture.md#background-shells).

use protocol::{ErrorInfo, Reply, SessionId};

use super::super::Connection;
use crate::session::actor::{KillShell, ListShells};

impl Connection {
    /// The session's shells, running and ended, in the order they started.
    pub(super) async fn shells(&self, session: SessionId) -> Result<Reply, ErrorInfo> {
        let shells = self.ask_session(&session, ListShells).await?;
        Ok(Reply::Shells(shells))
    }

    /// Ends shell `shell` of the session; answered once its `ShellEnded` event was sent.
    pub(super) async fn kill_shell(
        &self,
        session: SessionId,
        shell: u32,
    ) -> Result<Reply, ErrorInfo> {
        self.ask_session(&session, KillShell(shell)).await?;
        Ok(Reply::Done)
    }
}
