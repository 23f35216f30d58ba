//! A small model asked for a change often answers with the code in prose ("Here's the
//! implementation: …") and stops, with nothing changed. Once per run it is told that nothing
//! changed and to make the change with its tools; the views see a notice.

use protocol::Event;

use super::{Gone, Run};
use crate::conversation::Message;

/// What the model is told.
const NUDGE: &str = "You have not changed any file, so the task is not done yet: code in an \
                     answer changes nothing. Make the change now with a tool call: write the \
                     whole file with the change made.";

impl Run {
    /// Whether a run about to complete goes on because a small model was asked for a change
    /// and made none (told so once per run).
    pub(super) async fn nudge_to_act(&mut self) -> Result<bool, Gone> {
        let acted = self
            .changes
            .acted
            .load(std::sync::atomic::Ordering::Relaxed);
        if !self.harness.small || !self.changes.asked || acted || self.changes.nudged {
            return Ok(false);
        }
        self.changes.nudged = true;
        self.emit(Event::Notice {
            text:
                "the model answered without changing anything; it was asked once to make the change"
                    .to_string(),
        });
        self.push(
            Message::Notice {
                text: NUDGE.to_string(),
            },
            None,
        )
        .await?;
        Ok(true)
    }
}
