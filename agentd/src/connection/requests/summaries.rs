//! The board's subscription (docs/architecture.md#the-board): every session's summary, then its
//! changes.

use protocol::{ErrorInfo, Reply};

use super::super::Connection;
use super::ask;
use crate::supervisor::WatchSummaries;

impl Connection {
    pub(super) async fn subscribe_summaries(&mut self) -> Result<Reply, ErrorInfo> {
        let (summaries, watcher) = ask(&self.shared.supervisor, WatchSummaries).await?;
        self.new_summaries = Some((summaries, watcher));
        Ok(Reply::Done)
    }

    pub(super) fn unsubscribe_summaries(&mut self) -> Result<Reply, ErrorInfo> {
        if let Some(task) = self.summaries.take() {
            task.abort();
        }
        Ok(Reply::Done)
    }
}
