//! `edit`: replace an exact, unique piece of text in a file and show the diff.

use serde::Deserialize;
use serde_json::json;

use super::{MAX_OUTPUT_BYTES, ToolContext, ToolOutput, cap, display, resolve, write_whole};
use crate::stale_files::TRACKED_BYTES;
use crate::tool_spec::ToolSpec;

/// How long the diff of an edit may take before a coarser one is shown.
const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The model's description of `edit`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "edit".into(),
        description: "Replace `old_string` with `new_string` in a file. `old_string` must match \
                      the file exactly (whitespace included) and occur exactly once, unless \
                      `replace_all` is true. The file must have been read first. Returns a \
                      unified diff."
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
pub(crate) struct Args {
    /// The file to change.
    pub(crate) path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// Applies the edit.
pub(crate) async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let path = resolve(&ctx.cwd, &args.path);
    let shown = display(&ctx.cwd, &path);
    let (reading, hidden) = (path.clone(), ctx.hidden.clone());
    let read = tokio::task::spawn_blocking(move || {
        super::read_visible(&reading, &hidden, TRACKED_BYTES as usize)
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
    // What the file is comes first; then whether the agent knows what it would change.
    if let Err(why) = ctx.files.check_read(&path, &shown) {
        return super::first_read::refusal("edit", &path, &shown, &why, &ctx).await;
    }
    let (after, how) = match super::edit_match::replace(
        &before,
        &args.old_string,
        &args.new_string,
        args.replace_all,
    ) {
        Ok(done) => done,
        Err(refused) => {
            let region = refused.region.map(|r| format!("\n{r}")).unwrap_or_default();
            return ToolOutput::error(format!("cannot edit {shown}: {}.{region}", refused.message));
        }
    };
    if let Err(err) = write_whole(&ctx, &path, after.as_bytes()).await {
        return ToolOutput::error(format!("cannot write {shown}: {err}"));
    }
    let how = how.map(|h| format!(" ({h})")).unwrap_or_default();
    let output = ToolOutput::ok(format!(
        "Edited {shown}{how}\n{}",
        change_diff(&shown, &before, &after)
    ));
    super::diagnostics::checked(output, &path, &shown, (Some(&before), &after), &ctx).await
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
