//! `kill_shell`: not built yet.

use serde::Deserialize;
use serde_json::json;

use super::{ToolContext, ToolOutput};
use crate::tool_spec::ToolSpec;

/// The model's description of `kill_shell`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "kill_shell".into(),
        description: "Not available yet.".into(),
        input_schema: json!({"type": "object", "properties": {}}),
    }
}

/// The arguments of `kill_shell`.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {}

/// Runs the call.
pub(crate) async fn run(_args: Args, _ctx: ToolContext) -> ToolOutput {
    ToolOutput::error("kill_shell is not available yet")
}
