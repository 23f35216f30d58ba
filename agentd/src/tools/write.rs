//! `write`: create or replace a whole file.

use serde::Deserialize;
use serde_json::json;

use super::edit::change_diff;
use super::{ToolContext, ToolOutput, display, plural, resolve, write_whole};
use crate::provider::ToolSpec;
use crate::stale_files::TRACKED_BYTES;

/// The model's description of `write`.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "write".into(),
        description: "Create a file or replace its whole content. Missing parent directories are \
                      created. Prefer `edit` for changing part of an existing file."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file to write."},
                "content": {"type": "string", "description": "The complete new content."}
            },
            "required": ["path", "content"]
        }),
    }
}

/// The arguments of `write`.
#[derive(Debug, Deserialize)]
pub struct Args {
    /// The file to write.
    pub path: String,
    /// The complete new content.
    pub content: String,
}

/// Writes the file.
pub async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let path = resolve(&ctx.cwd, &args.path);
    let shown = display(&ctx.cwd, &path);
    let existed = tokio::fs::try_exists(&path).await.unwrap_or(false);
    // A new file needs no read; an existing one is replaced only once it was read.
    if existed && let Err(why) = ctx.files.check_read(&path, &shown) {
        return super::first_read::refusal("write", &path, &shown, &why, &ctx).await;
    }
    // The text it replaces, for the diff: only a regular UTF-8 file of a readable size.
    let before = if existed {
        let (reading, hidden) = (path.clone(), ctx.hidden.clone());
        tokio::task::spawn_blocking(move || {
            super::read_visible(&reading, &hidden, TRACKED_BYTES as usize)
        })
        .await
        .ok()
        .and_then(Result::ok)
        .filter(|(_, truncated)| !truncated)
        .and_then(|(bytes, _)| String::from_utf8(bytes).ok())
    } else {
        None
    };
    if let Err(err) = write_whole(&ctx, &path, args.content.as_bytes()).await {
        return ToolOutput::error(format!("cannot write {shown}: {err}"));
    }
    let lines = args.content.lines().count();
    let verb = if existed { "Replaced" } else { "Created" };
    let summary = format!(
        "{verb} {shown} ({}, {} bytes)",
        plural(lines, "line"),
        args.content.len()
    );
    match before {
        Some(before) if before != args.content => ToolOutput::ok(format!(
            "{summary}\n{}",
            change_diff(&shown, &before, &args.content)
        )),
        _ => ToolOutput::ok(summary),
    }
}
