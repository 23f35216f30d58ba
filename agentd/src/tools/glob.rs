//! `glob`: files whose path matches a pattern, newest first, honouring `.gitignore`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::json;

use super::{ToolContext, ToolOutput, display, plural, resolve};
use crate::provider::ToolSpec;

/// Files listed before the rest is summarised.
pub const MAX_FILES: usize = 200;

/// The model's description of `glob`.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "glob",
        description: "Find files by path pattern, e.g. `**/*.rs` or `src/**/test_*.py` (`*` does \
                      not cross `/`; `**` does). Honours .gitignore. Newest files first.",
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
pub struct Args {
    pattern: String,
    path: Option<String>,
}

/// Lists matching files.
pub async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let cwd = ctx.cwd.clone();
    let root = resolve(&cwd, args.path.as_deref().unwrap_or("."));
    let found = tokio::task::spawn_blocking(move || find(&root, &args.pattern)).await;
    match found {
        Ok(Ok(files)) if files.is_empty() => ToolOutput::ok("No files matched."),
        Ok(Ok(files)) => ToolOutput::ok(list(&cwd, files)),
        Ok(Err(message)) => ToolOutput::error(message),
        Err(err) => ToolOutput::error(format!("glob failed: {err}")),
    }
}

fn list(cwd: &Path, files: Vec<(PathBuf, SystemTime)>) -> String {
    let total = files.len();
    let mut out: Vec<String> = files
        .iter()
        .take(MAX_FILES)
        .map(|(p, _)| display(cwd, p))
        .collect();
    if total > MAX_FILES {
        out.push(format!(
            "({} more not shown; use a narrower pattern or path)",
            plural(total - MAX_FILES, "file")
        ));
    }
    out.join("\n")
}

/// Matching files under `root` with their modification times, newest first.
pub fn find(root: &Path, pattern: &str) -> Result<Vec<(PathBuf, SystemTime)>, String> {
    if !root.is_dir() {
        return Err(format!("{} is not a directory", root.display()));
    }
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("invalid glob pattern `{pattern}`: {e}"))?
        .compile_matcher();
    let mut files = Vec::new();
    for entry in walker(root).build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        if matcher.is_match(rel) {
            let modified = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            files.push((entry.path().to_path_buf(), modified));
        }
    }
    sort_newest_first(&mut files);
    Ok(files)
}

/// Newest first; ties by path so the order is stable.
pub fn sort_newest_first(files: &mut [(PathBuf, SystemTime)]) {
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

/// A directory walker that honours `.gitignore` (also outside a git repository) and `.ignore`,
/// shows hidden files, and never enters `.git`.
pub fn walker(root: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
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
            find(dir.path(), pattern)
                .unwrap()
                .into_iter()
                .map(|(p, _)| display(dir.path(), &p))
                .collect::<Vec<_>>()
        };
        let mut all = names("**/*.rs");
        all.sort();
        assert_eq!(all, vec!["src/a.rs", "top.rs"]);
        assert_eq!(names("*.rs"), vec!["top.rs"]);
    }
}
