//! `edit`: replace an exact, unique piece of text in a file and show the diff.

use serde::Deserialize;
use serde_json::json;

use super::{
    MAX_OUTPUT_BYTES, ToolContext, ToolOutput, cap, display, plural, resolve, write_whole,
};
use crate::files::TRACKED_BYTES;
use crate::provider::ToolSpec;
use crate::regular_file;

/// How long the diff of an edit may take before a coarser one is shown.
const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The model's description of `edit`.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "edit".into(),
        description: "Replace `old_string` with `new_string` in a file. `old_string` must match \
                      the file exactly (whitespace included) and occur exactly once, unless \
                      `replace_all` is true. Read the file first. Returns a unified diff."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file to change."},
                "old_string": {"type": "string", "description": "The exact text to replace."},
                "new_string": {"type": "string", "description": "The text to put in its place."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
            },
            "required": ["path", "old_string", "new_string"]
        }),
    }
}

/// The arguments of `edit`.
#[derive(Debug, Deserialize)]
pub struct Args {
    /// The file to change.
    pub path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// Applies the edit.
pub async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let path = resolve(&ctx.cwd, &args.path);
    let shown = display(&ctx.cwd, &path);
    if let Err(message) = ctx.files.check_unchanged(&path) {
        return ToolOutput::error(format!("cannot edit {shown}: {message}"));
    }
    let reading = path.clone();
    let read = tokio::task::spawn_blocking(move || {
        regular_file::read_at_most(&reading, TRACKED_BYTES as usize)
    })
    .await;
    let before = match read {
        Ok(Ok((_, true))) => {
            return ToolOutput::error(format!(
                "cannot edit {shown}: it is larger than {} MiB; use bash for files this large",
                TRACKED_BYTES >> 20
            ));
        }
        Ok(Ok((bytes, false))) => match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(_) => {
                return ToolOutput::error(format!("cannot edit {shown}: it is not UTF-8 text"));
            }
        },
        Ok(Err(err)) => return ToolOutput::error(format!("cannot edit {shown}: {err}")),
        Err(err) => return ToolOutput::error(format!("cannot edit {shown}: {err}")),
    };
    let after = match replace(
        &before,
        &args.old_string,
        &args.new_string,
        args.replace_all,
    ) {
        Ok(after) => after,
        Err(message) => return ToolOutput::error(format!("cannot edit {shown}: {message}")),
    };
    if let Err(err) = write_whole(&ctx, &path, after.as_bytes()).await {
        return ToolOutput::error(format!("cannot write {shown}: {err}"));
    }
    ToolOutput::ok(format!(
        "Edited {shown}\n{}",
        change_diff(&shown, &before, &after)
    ))
}

/// The unified diff (three lines of context) of a file the agent changed, capped: the model
/// sees what it did, and the terminal view shows it colored.
pub(super) fn change_diff(shown: &str, before: &str, after: &str) -> String {
    let diff = similar::TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(shown, shown)
        .to_string();
    cap(&diff, MAX_OUTPUT_BYTES)
}

/// The text with the replacement made, or why it cannot be made.
fn replace(text: &str, old: &str, new: &str, all: bool) -> Result<String, String> {
    if old.is_empty() {
        return Err("old_string is empty; give the exact text to replace".to_string());
    }
    if old == new {
        return Err("old_string and new_string are the same; nothing would change".to_string());
    }
    match text.matches(old).count() {
        0 => Err("old_string was not found; read the file and copy the text exactly, whitespace included".to_string()),
        1 => Ok(text.replacen(old, new, 1)),
        _ if all => Ok(text.replace(old, new)),
        n => Err(format!(
            "old_string occurs {} in the file; include more surrounding lines to make it unique, or set replace_all",
            plural(n, "time")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_match_is_replaced() {
        assert_eq!(replace("a b c", "b", "x", false).unwrap(), "a x c");
    }

    #[test]
    fn a_repeated_match_says_how_often_it_occurs() {
        let err = replace("a b b", "b", "x", false).unwrap_err();
        assert!(err.contains("occurs 2 times"), "{err}");
        assert_eq!(replace("a b b", "b", "x", true).unwrap(), "a x x");
    }

    #[test]
    fn a_missing_match_is_reported() {
        assert!(
            replace("abc", "z", "x", false)
                .unwrap_err()
                .contains("not found")
        );
    }
}
