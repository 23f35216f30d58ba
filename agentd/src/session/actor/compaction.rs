//! Compaction: the older history gives way to a summary, when a run finds it long (before a
//! model call) or when a client asks for it between runs.

use kameo::prelude::*;
use protocol::{ErrorCode, ErrorInfo, Event};
use tokio_util::sync::CancellationToken;

use super::SessionActor;
use crate::store::Record;

impl SessionActor {
    /// Replaces the first `cut` messages of the history by `summary`, if the history is still
    /// of `generation`; messages added since are all kept.
    pub(super) fn apply_compaction(
        &mut self,
        summary: String,
        cut: usize,
        generation: u64,
    ) -> Result<(), ErrorInfo> {
        let keep_last = self.history.kept_after(cut, generation)?;
        let before_tokens = self.history.tokens();
        let summary = self.family.with_running_children(summary);
        // The model keeps its plan when the calls that set it are summarised away.
        let summary = crate::tools::todo::with_plan(summary, self.shown.plan());
        self.durable.record(&Record::Compaction {
            summary: summary.clone(),
            keep_last,
        });
        self.history.compacted(summary, keep_last);
        let after_tokens = self.history.tokens();
        self.emit(Event::Compacted {
            before_tokens,
            after_tokens,
        });
        Ok(())
    }
}

/// Compact the history now (or, while a run is going, before its next model call). The reply
/// comes at once; the summary is made in the background, cancellable by any client, and ends
/// with `Compacted` or an `Error` event.
pub(crate) struct CompactNow;

impl Message<CompactNow> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, _: CompactNow, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if self.runs.is_running() {
            self.history.request_compaction();
            return Ok(());
        }
        if self.history.compacting() {
            return Err(ErrorInfo::new(
                ErrorCode::Busy,
                "a compaction is already under way",
            ));
        }
        let input = self.turn_input(false);
        let Some(cut) =
            crate::compact::cut_point(&input.messages, crate::compact::KEEP_RECENT_TOKENS)
        else {
            return Err(ErrorInfo::new(
                ErrorCode::InvalidRequest,
                "the history is short enough; there is nothing to compact",
            ));
        };
        let config = self.env.config();
        let last = self.runs.last_options();
        let (provider, model) = config
            .provider(
                &self.env.http,
                last.provider.as_deref().or(self.shown.provider()),
                last.model.as_deref().or(self.shown.model()),
                &last.env,
            )
            .map_err(|e| ErrorInfo::new(ErrorCode::InvalidRequest, e.to_string()))?;
        let cancel = CancellationToken::new();
        self.history.begin_compaction(cancel.clone());
        let me = ctx.actor_ref().clone();
        tokio::spawn(async move {
            let specs = crate::tools::specs();
            let summary = crate::compact::summarize(
                &provider,
                &model,
                &input.system,
                &specs,
                input.messages.get(..cut).unwrap_or_default(),
                &cancel,
            )
            .await;
            let done = CompactionDone {
                summary,
                cut,
                generation: input.generation,
            };
            let _ = me.tell(done).await;
        });
        Ok(())
    }
}

/// A compaction a client asked for came to an end.
struct CompactionDone {
    summary: Result<String, crate::provider::ProviderError>,
    cut: usize,
    generation: u64,
}

impl Message<CompactionDone> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: CompactionDone, _: &mut Context<Self, Self::Reply>) {
        self.history.end_compaction();
        let failed = match msg.summary {
            Ok(summary) => self
                .apply_compaction(summary, msg.cut, msg.generation)
                .err()
                .map(|e| e.message),
            Err(crate::provider::ProviderError::Cancelled) => {
                Some("the compaction was cancelled".to_string())
            }
            Err(err) => Some(format!("compaction failed: {err}")),
        };
        if let Some(message) = failed {
            self.emit(Event::Error { message });
        }
    }
}
