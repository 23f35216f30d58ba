//! `glob`: files whose path matches a pattern, newest first, honouring `.gitignore`.

use std::path::Path;
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::walk::{Newest, modified, walk_files};
use super::{MAX_OUTPUT_BYTES, ToolContext, ToolOutput, display, plural, resolve};
use crate::tool_spec::ToolSpec;

/// Files listed before the rest is summarised.
pub(crate) const MAX_FILES: usize = 200;
/// Output bytes kept free for the note on what was left out.
const NOTE_ROOM: usize = 100;

/// The model's description of `glob`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "glob".into(),
        description: "Find files by path pattern, e.g. `**/*.rs` or `src/**/test_*.py` (`*` does \
                      not cross `/`; `**` does). Honours .gitignore. Newest files first."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, relative to `path`."},
                "path": {"type": "string", "description": "Directory to search (default: the working directory)."}
            },
            "required": ["pattern"]
        }),
    }
}

/// The arguments of `glob`.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {
    pattern: String,
    path: Option<String>,
}

/// Lists matching files.
pub(crate) async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let cwd = ctx.cwd.clone();
    let root = resolve(&cwd, args.path.as_deref().unwrap_or("."));
    let cancel = ctx.cancel.clone();
    let hidden = ctx.hidden.clone();
    let found =
        tokio::task::spawn_blocking(move || find(&root, &args.pattern, &cancel, hidden)).await;
    match found {
        Ok(Ok(found)) if found.files == 0 => ToolOutput::ok("No files matched."),
        Ok(Ok(found)) => ToolOutput::ok(list(&cwd, found)),
        Ok(Err(message)) => ToolOutput::error(message),
        Err(err) => ToolOutput::error(format!("glob failed: {err}")),
    }
}

fn list(cwd: &Path, found: Newest<()>) -> String {
    let total = found.files;
    let mut text = String::new();
    let mut shown = 0;
    for (path, ()) in found.into_kept() {
        let line = display(cwd, &path);
        if text.len() + line.len() + NOTE_ROOM > MAX_OUTPUT_BYTES {
            break;
        }
        text.push_str(&line);
        text.push('\n');
        shown += 1;
    }
    if total > shown {
        text.push_str(&format!(
            "(not shown: {}; use a narrower pattern or path)",
            plural(total - shown, "file")
        ));
    }
    text.trim_end().to_string()
}

/// Matching files under `root`, but for what is `hidden`: the newest [`MAX_FILES`] and how
/// many there are.
pub(crate) fn find(
    root: &Path,
    pattern: &str,
    cancel: &CancellationToken,
    hidden: std::sync::Arc<crate::sandbox::hidden::HiddenPaths>,
) -> Result<Newest<()>, String> {
    if !root.is_dir() {
        return Err(format!("{} is not a directory", root.display()));
    }
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("invalid glob pattern `{pattern}`: {e}"))?
        .compile_matcher();
    let found = Mutex::new(Newest::new(MAX_FILES));
    walk_files(root, cancel, hidden, || {
        let (matcher, found) = (&matcher, &found);
        move |entry: &ignore::DirEntry| {
            let Ok(rel) = entry.path().strip_prefix(root) else {
                return;
            };
            if matcher.is_match(rel) {
                let modified = modified(entry);
                found.lock().unwrap_or_else(|e| e.into_inner()).insert(
                    entry.path().to_path_buf(),
                    modified,
                    1,
                    (),
                );
            }
        }
    })
    .map_err(|e| e.to_string())?;
    Ok(found.into_inner().unwrap_or_else(|e| e.into_inner()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignored_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "").unwrap();
        std::fs::write(dir.path().join("target/b.rs"), "").unwrap();
        std::fs::write(dir.path().join("top.rs"), "").unwrap();
        let names = |pattern| {
            find(
                dir.path(),
                pattern,
                &CancellationToken::new(),
                Default::default(),
            )
            .unwrap()
            .into_kept()
            .map(|(p, ())| display(dir.path(), &p))
            .collect::<Vec<_>>()
        };
        let mut all = names("**/*.rs");
        all.sort();
        assert_eq!(all, vec!["src/a.rs", "top.rs"]);
        assert_eq!(names("*.rs"), vec!["top.rs"]);
    }
}
