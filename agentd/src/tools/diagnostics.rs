//! The language servers' part in the file tools (docs/architecture.md#language-servers): a file
//! `read` is opened on its server (so that a later edit has diagnostics to compare with), and
//! `write` and `edit` add the diagnostics their change introduced to their result.

use std::path::Path;

use super::{ToolContext, ToolOutput};
use crate::lsp::FileText;
use crate::lsp::disk::OnDisk;

/// Opens `path`, which the agent just read, on its server in the background; nothing when no
/// server serves it.
pub(crate) fn opened(path: &Path, ctx: &ToolContext) {
    let Some(hub) = ctx.lsp.clone() else { return };
    if !hub.serves(path, &ctx.env) {
        return;
    }
    let (path, cwd, env, hidden) = (
        path.to_path_buf(),
        ctx.cwd.clone(),
        ctx.env.clone(),
        ctx.hidden.clone(),
    );
    tokio::spawn(async move {
        let reading = path.clone();
        let read =
            tokio::task::spawn_blocking(move || super::lsp_disk::server_text(&reading, &hidden))
                .await;
        let Ok(OnDisk::Text(text)) = read else { return };
        hub.opened(FileText {
            path: &path,
            text: &text,
            cwd: &cwd,
            env: &env,
        });
    });
}

/// `output` of a `write` or `edit` that left `path` holding `text` (and `before` it, when the
/// file existed), with the diagnostics the change introduced appended (`shown` is the path as
/// the model sees it). Adds nothing, at once, when no server serves the file; a cancel ends the
/// wait.
pub(crate) async fn checked(
    output: ToolOutput,
    path: &Path,
    shown: &str,
    (before, text): (Option<&str>, &str),
    ctx: &ToolContext,
) -> ToolOutput {
    let Some(hub) = &ctx.lsp else { return output };
    let file = FileText {
        path,
        text,
        cwd: &ctx.cwd,
        env: &ctx.env,
    };
    let piece = tokio::select! {
        piece = hub.changed(file, before, shown) => piece,
        () = ctx.cancel.cancelled() => None,
    };
    match piece {
        Some(piece) => ToolOutput {
            output: format!("{}\n{piece}", output.output.trim_end_matches('\n')),
            ..output
        },
        None => output,
    }
}
