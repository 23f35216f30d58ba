//! The board's one subscription (docs/architecture.md#the-board): a watcher of every change from
//! now on, and the summary of every session as of now, loaded or not (those not loaded from their
//! metadata).

use std::sync::Arc;

use kameo::prelude::*;
use protocol::{ErrorInfo, SessionSummary};

use super::Supervisor;
use crate::summaries::Watcher;

/// Start watching the summaries; replies the watcher and every session's summary.
pub(crate) struct WatchSummaries;

impl Message<WatchSummaries> for Supervisor {
    type Reply = Result<(Vec<SessionSummary>, Arc<Watcher>), ErrorInfo>;

    async fn handle(
        &mut self,
        _: WatchSummaries,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        // Watching first: a change that comes while the summaries are read is sent again.
        let watcher = self.summaries.watch();
        let summaries = self.sessions.values().map(|e| e.info.summary()).collect();
        Ok((summaries, watcher))
    }
}
