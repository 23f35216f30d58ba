//! Requests about what runs changed: a run's diff, and rewinding to before a run.

use protocol::{ErrorInfo, Reply, RunId, SessionId};

use super::super::Connection;
use crate::session::actor::{Diff, Rewind};

impl Connection {
    pub(super) async fn diff(
        &self,
        session: SessionId,
        run: Option<RunId>,
    ) -> Result<Reply, ErrorInfo> {
        Ok(Reply::Diff(self.ask_session(&session, Diff(run)).await?))
    }

    pub(super) async fn rewind(
        &self,
        session: SessionId,
        run: Option<RunId>,
        force: bool,
        dry_run: bool,
    ) -> Result<Reply, ErrorInfo> {
        let rewind = Rewind {
            run,
            force,
            dry_run,
        };
        Ok(Reply::Rewound(self.ask_session(&session, rewind).await?))
    }
}
