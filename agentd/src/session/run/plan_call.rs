//! A `todo` call, run by the loop itself (docs/architecture.md#the-plan): the plan is checked,
//! and the session hears it as a `PlanUpdated` event before the call's result, on the same
//! way as the run's other events, so the log holds the plan in the order it changed.

use protocol::Event;
use serde_json::Value;

use super::Run;
use crate::tools::{MAX_OUTPUT_BYTES, ToolOutput, cap, todo};

impl Run {
    /// Replaces the session's plan by the one `args` set; what the model is told. A plan
    /// that breaks a rule is refused and changes nothing.
    pub(super) fn update_plan(&self, args: Value) -> ToolOutput {
        match todo::plan_of(args) {
            Ok(items) => {
                let told = cap(&todo::said_back(&items), MAX_OUTPUT_BYTES);
                self.emit(Event::PlanUpdated { items });
                ToolOutput::ok(told)
            }
            Err(refused) => refused,
        }
    }
}
