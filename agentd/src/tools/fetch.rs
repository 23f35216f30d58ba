//! `fetch`: not built yet.

use serde::Deserialize;
use serde_json::json;

use super::{ToolContext, ToolOutput};
use crate::tool_spec::ToolSpec;

/// The model's description of `fetch`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "fetch".into(),
        description: "Not available yet.".into(),
        input_schema: json!({"type": "object", "properties": {}}),
    }
}

/// The arguments of `fetch`.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {}

/// Runs the call.
pub(crate) async fn run(_args: Args, _ctx: ToolContext) -> ToolOutput {
    ToolOutput::error("fetch is not available yet")
}
