//! Compaction inside a run: the older part of the history summarised and replaced.

use super::{Gone, PortError, Run, TurnInput};
use crate::compact;
use crate::provider::{Provider, ProviderError};

impl Run {
    /// Summarises the older part of the history and has the session replace it.
    pub(super) async fn compact(
        &mut self,
        provider: &Provider,
        model: &str,
        input: &TurnInput,
    ) -> Result<Compaction, Gone> {
        let keep = compact::keep_recent(self.harness.window);
        let Some(cut) = compact::cut_point(&input.messages, keep) else {
            return Ok(Compaction::Nothing);
        };
        let trigger = if input.compact { "manual" } else { "auto" };
        self.pre_compact_hooks(trigger).await;
        let summary = compact::summarize(
            provider,
            model,
            &input.system,
            &self.harness.specs,
            input.messages.get(..cut).unwrap_or_default(),
            self.cancel(),
        )
        .await;
        let summary = match summary {
            Ok(summary) => summary,
            Err(ProviderError::Cancelled) => return Ok(Compaction::Cancelled),
            Err(err) => return Ok(Compaction::Failed(err)),
        };
        let applied = self
            .setup
            .session
            .apply_compaction(
                self.setup.run,
                self.harness.small,
                summary,
                cut,
                input.generation,
            )
            .await;
        match applied {
            Ok(compacted) => {
                // The results the model saw before are summarised now: repeats show again.
                self.guards.repeats.forget();
                Ok(Compaction::Done(compacted))
            }
            // Compacted meanwhile by someone else: go on with what there is.
            Err(PortError::Refused(err)) if err.code == protocol::ErrorCode::Busy => {
                Ok(Compaction::Nothing)
            }
            Err(err) => Err(err.into()),
        }
    }
}

/// What a compaction came to.
pub(super) enum Compaction {
    Done(TurnInput),
    Nothing,
    Cancelled,
    Failed(ProviderError),
}
