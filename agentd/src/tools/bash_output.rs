//! `bash_output`: not built yet.

use serde::Deserialize;
use serde_json::json;

use super::{ToolContext, ToolOutput};
use crate::tool_spec::ToolSpec;

/// The model's description of `bash_output`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "bash_output".into(),
        description: "Not available yet.".into(),
        input_schema: json!({"type": "object", "properties": {}}),
    }
}

/// The arguments of `bash_output`.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {}

/// Runs the call.
pub(crate) async fn run(_args: Args, _ctx: ToolContext) -> ToolOutput {
    ToolOutput::error("bash_output is not available yet")
}
