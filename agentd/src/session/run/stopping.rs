//! The loop during a planned stop of the daemon (see [`crate::stop`]): it starts no model turn
//! and no tool call, lets the calls already running finish, and then waits for the stop to end
//! it, storing nothing more. The next daemon resumes the run from what is stored: the results
//! of the calls that finished, and the calls that never started.

use super::{INTERRUPTED, Run};
use crate::conversation::{ToolCall, ToolResult};

impl Run {
    /// Whether a planned stop was asked for: nothing new starts.
    pub(super) fn stopping(&self) -> bool {
        self.setup.stop.is_asked()
    }

    /// While a planned stop is under way, waits until the run is cancelled (by the stop, or by
    /// a user); returns at once otherwise.
    pub(super) async fn hold_for_stop(&self) {
        if self.stopping() {
            self.cancel().cancelled().await;
        }
    }

    /// Every call of `calls` with its result, in call order. Calls a planned stop kept from
    /// starting get none while the stop lasts: the run waits to be stopped instead, so that
    /// the next daemon runs them. A cancel answers them "interrupted".
    pub(super) async fn answered(
        &self,
        calls: &[ToolCall],
        done: Vec<ToolResult>,
    ) -> Vec<ToolResult> {
        if done.len() < calls.len() {
            self.hold_for_stop().await;
        }
        self.fill(calls, done, INTERRUPTED)
    }
}
