//! `bash_output`: what a background shell printed since the last look, from its ring, and
//! whether it still runs or how it ended; it may wait a little for output to come.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::shells::registry::{Look, RING_BYTES};
use super::{MAX_OUTPUT_BYTES, ToolContext, ToolOutput};
use crate::tool_spec::ToolSpec;

/// The longest wait a call may ask for.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// The model's description of `bash_output`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "bash_output".into(),
        description: "Read what a background shell (started by bash with \"background\": true) \
                      printed since the last look, and whether it still runs or how it ended. \
                      Each shell keeps its last 1 MiB of output; the result says how much was \
                      dropped when more came between two looks. Set wait_ms (at most 30000) to \
                      wait for new output or for the shell to end when there is none yet."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer", "minimum": 1, "description": "The shell's id, as bash gave it."},
                "wait_ms": {"type": "integer", "minimum": 0, "description": "Wait up to this many milliseconds for new output or the end (default 0, max 30000)."}
            },
            "required": ["id"]
        }),
    }
}

/// The arguments of `bash_output`.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {
    /// The shell's number.
    #[serde(deserialize_with = "super::shells::id")]
    id: u32,
    /// How long to wait for news, in milliseconds.
    #[serde(default)]
    wait_ms: Option<u64>,
}

/// Runs the call.
pub(crate) async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let shell = match ctx.shells.find(args.id) {
        Ok(shell) => shell,
        Err(why) => return ToolOutput::error(why),
    };
    let wait = Duration::from_millis(args.wait_ms.unwrap_or(0)).min(MAX_WAIT);
    if !wait.is_zero() {
        shell.wait_for_news(wait, &ctx.cancel).await;
    }
    ToolOutput::ok(report(args.id, shell.look(MAX_OUTPUT_BYTES)))
}

/// The result text of a look at shell `number`.
fn report(number: u32, look: Look) -> String {
    let mut text = String::new();
    if look.unread.dropped > 0 {
        text.push_str(&format!(
            "[{} bytes printed since the last look were dropped: a shell keeps only its last {} \
             KiB; look more often]\n",
            look.unread.dropped,
            RING_BYTES / 1024
        ));
    }
    let output = look.unread.text.trim_end();
    text.push_str(if output.is_empty() {
        "(no new output)"
    } else {
        output
    });
    text.push('\n');
    text.push_str(&match look.end {
        None => format!(
            "[shell {number} is still running; {} bytes printed so far]",
            look.written
        ),
        Some(end) => format!("[shell {number} {end}; {} bytes printed]", look.written),
    });
    text
}

#[cfg(test)]
mod tests {
    use super::super::shells::ring::Unread;
    use super::*;

    #[test]
    fn a_look_says_what_was_dropped_and_how_the_shell_stands() {
        let look = Look {
            unread: Unread {
                text: "serving\n".into(),
                dropped: 2048,
            },
            end: None,
            written: 4096,
        };
        assert_eq!(
            report(3, look),
            "[2048 bytes printed since the last look were dropped: a shell keeps only its last \
             1024 KiB; look more often]\nserving\n[shell 3 is still running; 4096 bytes printed \
             so far]"
        );
        let look = Look {
            unread: Unread {
                text: String::new(),
                dropped: 0,
            },
            end: Some(protocol::ShellEnd::Exited { code: 2 }),
            written: 10,
        };
        assert_eq!(
            report(1, look),
            "(no new output)\n[shell 1 exited with code 2; 10 bytes printed]"
        );
    }
}
