//! Compaction: the older history gives way to a summary, when a run finds it long (before a
//! model call) or when a client asks for it between runs.

use kameo::prelude::*;
use protocol::{ErrorCode, ErrorInfo, Event, RunId};
use tokio_util::sync::CancellationToken;

use super::SessionActor;
use super::loop_messages::TurnInput;
use crate::store::Record;

/// Replace the older history by a summary (compaction): the first `cut` messages of the
/// history of `generation` give way to `summary`. Messages added since are all kept; a summary
/// of a history that was compacted meanwhile is refused.
pub struct ApplyCompaction {
    /// Whether the model's window is small: the compact system prompt.
    pub compact_prompt: bool,
    /// The run that compacted.
    pub run: RunId,
    /// The summary.
    pub summary: String,
    /// How many messages it summarises, from the start.
    pub cut: usize,
    /// The generation of the history it summarises.
    pub generation: u64,
}

impl Message<ApplyCompaction> for SessionActor {
    /// The next model call's input after compaction.
    type Reply = Result<TurnInput, ErrorInfo>;

    async fn handle(
        &mut self,
        msg: ApplyCompaction,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        self.active(msg.run)?;
        self.apply_compaction(msg.summary, msg.cut, msg.generation)?;
        Ok(self.turn_input(msg.compact_prompt))
    }
}

impl SessionActor {
    /// Replaces the first `cut` messages of the history by `summary`, if the history is still
    /// of `generation`.
    fn apply_compaction(
        &mut self,
        summary: String,
        cut: usize,
        generation: u64,
    ) -> Result<(), ErrorInfo> {
        if generation != self.history_generation || cut > self.history.len() {
            return Err(ErrorInfo::new(
                ErrorCode::Busy,
                "the history was compacted meanwhile, so this summary is out of date and was dropped",
            ));
        }
        let before_tokens = crate::compact::estimate_all(&self.history);
        let summary = self.with_running_children(summary);
        let keep_last = self.history.len() - cut;
        self.record(&Record::Compaction {
            summary: summary.clone(),
            keep_last,
        });
        self.replace_history(summary, keep_last);
        self.compact_requested = false;
        let after_tokens = crate::compact::estimate_all(&self.history);
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
pub struct CompactNow;

impl Message<CompactNow> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, _: CompactNow, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if self.run.is_some() {
            self.compact_requested = true;
            return Ok(());
        }
        if self.compaction.is_some() {
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
        let (provider, model) = config
            .provider(
                &self.env.http,
                self.last_options
                    .provider
                    .as_deref()
                    .or(self.info.provider.as_deref()),
                self.last_options
                    .model
                    .as_deref()
                    .or(self.info.model.as_deref()),
                &self.last_options.env,
            )
            .map_err(|e| ErrorInfo::new(ErrorCode::InvalidRequest, e.to_string()))?;
        let cancel = CancellationToken::new();
        self.compaction = Some(cancel.clone());
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
pub struct CompactionDone {
    summary: Result<String, crate::provider::ProviderError>,
    cut: usize,
    generation: u64,
}

impl Message<CompactionDone> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: CompactionDone, _: &mut Context<Self, Self::Reply>) {
        self.compaction = None;
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
