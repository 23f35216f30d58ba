//! `kill_shell`: ends a background shell and its whole process group, and says what it printed
//! last.

use serde::Deserialize;
use serde_json::json;

use super::{ToolContext, ToolOutput};
use crate::tool_spec::ToolSpec;

/// The model's description of `kill_shell`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "kill_shell".into(),
        description: "End a background shell (started by bash with \"background\": true) and \
                      every process it started."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer", "minimum": 1, "description": "The shell's id, as bash gave it."}
            },
            "required": ["id"]
        }),
    }
}

/// The arguments of `kill_shell`.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {
    /// The shell's number.
    #[serde(deserialize_with = "super::shells::id")]
    id: u32,
}

/// Runs the call.
pub(crate) async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let shell = match ctx.shells.find(args.id) {
        Ok(shell) => shell,
        Err(why) => return ToolOutput::error(why),
    };
    if let Some(end) = shell.end() {
        return ToolOutput::ok(format!("shell {} already ended: {end}", args.id));
    }
    // From here the shell is ended, whatever happens to the run.
    if !ctx.gate.commit() {
        return ToolOutput::error("[interrupted: the run was cancelled; the shell still runs]");
    }
    match ctx.shells.kill(args.id).await {
        Ok((end, _)) => {
            let tail = shell.tail();
            let last = if tail.is_empty() {
                String::new()
            } else {
                format!("; its last output:\n{tail}")
            };
            ToolOutput::ok(format!(
                "shell {} ended ({end}) with its processes{last}",
                args.id
            ))
        }
        Err(why) => ToolOutput::error(why),
    }
}
