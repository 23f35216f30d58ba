//! `write`: create or replace a whole file.

use serde::Deserialize;
use serde_json::json;

use super::edit::change_diff;
use super::{ToolContext, ToolOutput, display, plural, resolve, write_whole};
use crate::stale_files::TRACKED_BYTES;
use crate::tool_spec::ToolSpec;

/// The model's description of `write`.
pub(crate) fn spec() -> ToolSpec {
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
pub(crate) struct Args {
    /// The file to write.
    pub(crate) path: String,
    /// The complete new content.
    pub(crate) content: String,
}

/// Writes the file.
pub(crate) async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
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
    if let Some(before) = &before
        && let Some(refused) = unchanged(&shown, before, &args.content)
    {
        return refused;
    }
    if let Err(err) = write_whole(&ctx, &path, args.content.as_bytes()).await {
        return ToolOutput::error(format!("cannot write {shown}: {err}"));
    }
    let verb = if existed { "Replaced" } else { "Created" };
    let output = done(verb, &shown, before.as_deref(), &args.content);
    let texts = (before.as_deref(), args.content.as_str());
    super::diagnostics::checked(output, &path, &shown, texts, &ctx).await
}

/// The result of a write that was made: what it did, and the diff when the file was there.
fn done(verb: &str, shown: &str, before: Option<&str>, content: &str) -> ToolOutput {
    let lines = content.lines().count();
    let summary = format!(
        "{verb} {shown} ({}, {} bytes)",
        plural(lines, "line"),
        content.len()
    );
    match before {
        Some(before) if before != content => {
            let note = if same_code(before, content) {
                format!(
                    "\nOnly whitespace changed in {shown} (blank lines, spaces at line ends, the \
                     last newline); the code is as it was. If the task asked for a change to the \
                     code, it is not made yet: write the file again with the change made."
                )
            } else {
                String::new()
            };
            ToolOutput::ok(format!(
                "{summary}{note}\n{}",
                change_diff(shown, before, content)
            ))
        }
        _ => ToolOutput::ok(summary),
    }
}

/// The refusal of a write that would leave the file exactly as it is.
fn unchanged(shown: &str, before: &str, content: &str) -> Option<ToolOutput> {
    (before == content).then(|| {
        ToolOutput::error(format!(
            "cannot write {shown}: the content given is the file exactly as it is, so nothing \
             would change. Write the whole file with the change made."
        ))
    })
}

/// Whether two texts are the same code: the same lines once blank lines and spaces at line
/// ends are left out.
fn same_code(a: &str, b: &str) -> bool {
    let lines = |t: &str| -> Vec<String> {
        t.lines()
            .map(|l| l.trim_end().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    lines(a) == lines(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_that_changes_nothing_or_only_whitespace_says_so() {
        assert!(unchanged("a.py", "x = 1\n", "x = 1\n").is_some_and(|o| o.is_error));
        assert!(unchanged("a.py", "x = 1\n", "x = 2\n").is_none());
        assert!(same_code("\n\ndef f():\n    pass\n", "def f():\n    pass"));
        assert!(!same_code("def f():\n    pass\n", "def f():\n  pass\n"));
    }
}
