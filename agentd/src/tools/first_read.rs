//! A change refused because the agent had not read the file, or the file changed since it did:
//! the refusal carries the file's current content, which counts as reading it, so that the
//! model's next call can succeed instead of answering the user with advice.

use std::path::Path;

use super::{ToolContext, ToolOutput, read};

/// The refusal of `tool` (`edit` or `write`) on `path` (`shown` as the model names it) for
/// `why`, with the file as `read` shows it; only `why` when the file cannot be read.
pub(crate) async fn refusal(
    tool: &str,
    path: &Path,
    shown: &str,
    why: &crate::stale_files::Stale,
    ctx: &ToolContext,
) -> ToolOutput {
    let next = match tool {
        "edit" => {
            "call edit again with old_string copied exactly from these lines (without the line numbers)"
        }
        _ => "call write again with the whole new content",
    };
    match read::as_read(path, ctx).await {
        Ok(content) => ToolOutput::error(format!(
            "cannot {tool} {shown}: {why}. Nothing was changed. Its current content follows, and \
             it now counts as read: {next}.\n\n{content}"
        )),
        Err(_) => ToolOutput::error(format!("cannot {tool} {shown}: {why}; read it first")),
    }
}
