//! A small model asked for a change often answers with the code in prose ("Here's the
//! implementation: …") and stops, with nothing changed. Once per run it is told that nothing
//! changed and to make the change with its tools, and its next reply must call a tool (asked
//! of the API: `tool_choice` required, or `any`); the views see a notice.

use protocol::Event;

use super::{Gone, Run};
use crate::conversation::Message;

/// What the model is told: that nothing changed, and the call to make, in the JSON form tool
/// calls take.
fn nudge(file: Option<&str>) -> String {
    let (which, path) = match file {
        Some(path) => (path.to_string(), path.to_string()),
        None => ("any file".to_string(), "PATH".to_string()),
    };
    let call = serde_json::json!({
        "name": "write",
        "arguments": {"path": path, "content": "THE WHOLE FILE WITH YOUR CHANGE MADE"}
    });
    format!(
        "You have not changed {which}, so the task is not done yet: code in an answer changes \
         nothing. Make the change now by calling the write tool:\n```json\n{call}\n```"
    )
}

impl Run {
    /// Whether a run about to complete goes on because a small model was asked for a change
    /// and made none (told so once per run).
    pub(super) async fn nudge_to_act(&mut self) -> Result<bool, Gone> {
        let acted = self.acted.load(std::sync::atomic::Ordering::Relaxed);
        if !self.small || !self.asked_change || acted || self.nudged.is_some() {
            return Ok(false);
        }
        self.nudged = Some(self.turns);
        self.emit(Event::Notice {
            text:
                "the model answered without changing anything; it was asked once to make the change"
                    .to_string(),
        });
        let file = self.named.first().cloned();
        self.push(
            Message::Notice {
                text: nudge(file.as_deref()),
            },
            None,
        )
        .await?;
        Ok(true)
    }
}
