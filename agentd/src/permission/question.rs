//! What a permission question says (docs/architecture.md#permissions-and-modes): one line for
//! the call a person is asked about, and the answer a run gets when nobody can be asked.

use protocol::PermissionClass;

use super::{Call, CallTool, network};
use crate::tools::{Tool, display, resolve};

/// One line saying what the call would do, for a permission question.
pub(crate) fn summary(call: Call<'_>) -> String {
    let path = || {
        call.args["path"]
            .as_str()
            .map(|p| display(call.cwd, &resolve(call.cwd, p)))
            .unwrap_or_else(|| "?".to_string())
    };
    let CallTool::Builtin(tool) = call.tool else {
        let CallTool::Mcp { server, tool, .. } = call.tool else {
            unreachable!("a call is built-in or of an MCP server")
        };
        let args = call.args.to_string();
        let shown: String = args.chars().take(200).collect();
        let more = if shown.len() < args.len() { "…" } else { "" };
        return format!("call {server}/{tool} (MCP) with {shown}{more}");
    };
    match tool {
        Tool::Write => {
            let lines = call.args["content"]
                .as_str()
                .map_or(0, |c| c.lines().count());
            format!("write {} ({} lines)", path(), lines)
        }
        Tool::Edit => format!("edit {}", path()),
        Tool::Bash => format!("run `{}`", call.command().unwrap_or("?")),
        Tool::Fetch | Tool::WebSearch => network::summary(&call),
        other => format!("{} {}", other.name(), path()),
    }
}

/// The result the model gets when a run without a terminal has no grant for the call.
pub(crate) fn unattended_denial(class: PermissionClass) -> String {
    match class {
        PermissionClass::Command => "denied: run with --allow bash to permit commands".to_string(),
        PermissionClass::Mcp => {
            "denied: run with --allow mcp to permit MCP tool calls, or list the tool in the server's `allow`".to_string()
        }
        PermissionClass::Network => {
            "denied: run with --allow network to permit web access, or allow the host with a rule such as `fetch:docs.rs` in config.toml".to_string()
        }
        _ => "denied: run with --allow write to permit file changes".to_string(),
    }
}
