//! `grep`: search file contents with a regular expression, honouring `.gitignore`; ripgrep's
//! own searcher does the work.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::Deserialize;
use serde_json::json;

use super::glob::{sort_newest_first, walker};
use super::{MAX_OUTPUT_CHARS, ToolContext, ToolOutput, cap, display, plural, resolve};
use crate::provider::ToolSpec;

/// Output lines shown before the rest is summarised.
pub const MAX_LINES: usize = 300;

/// The model's description of `grep`.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "grep",
        description: "Search file contents with a regular expression (Rust regex syntax). \
                      Honours .gitignore; files newest first. `output`: `content` (matching \
                      lines as path:line:text, the default), `files` (paths only) or `count`. \
                      `glob` filters files, e.g. `*.rs`. `context` adds lines around matches.",
        input_schema: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The regular expression."},
                "path": {"type": "string", "description": "File or directory to search (default: the working directory)."},
                "glob": {"type": "string", "description": "Only search files matching this glob, e.g. `*.ts` or `src/**/*.rs`."},
                "case_insensitive": {"type": "boolean", "description": "Ignore case (default false)."},
                "output": {"type": "string", "enum": ["content", "files", "count"], "description": "What to show (default content)."},
                "context": {"type": "integer", "minimum": 0, "description": "Lines of context before and after each match (content output)."}
            },
            "required": ["pattern"]
        }),
    }
}

/// What `grep` shows.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum OutputMode {
    #[default]
    Content,
    Files,
    Count,
}

/// The arguments of `grep`.
#[derive(Debug, Deserialize)]
pub struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    output: OutputMode,
    #[serde(default)]
    context: usize,
}

/// One file's findings.
struct FileHits {
    path: PathBuf,
    modified: SystemTime,
    matches: usize,
    lines: Vec<String>,
}

/// Searches.
pub async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let cwd = ctx.cwd.clone();
    let found = tokio::task::spawn_blocking(move || {
        search(&cwd, &args).map(|hits| render(&cwd, &args, hits))
    })
    .await;
    match found {
        Ok(Ok(text)) => ToolOutput::ok(cap(&text, MAX_OUTPUT_CHARS)),
        Ok(Err(message)) => ToolOutput::error(message),
        Err(err) => ToolOutput::error(format!("grep failed: {err}")),
    }
}

fn search(cwd: &Path, args: &Args) -> Result<Vec<FileHits>, String> {
    let root = resolve(cwd, args.path.as_deref().unwrap_or("."));
    if !root.exists() {
        return Err(format!("{} does not exist", display(cwd, &root)));
    }
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| format!("invalid regular expression `{}`: {e}", args.pattern))?;
    let filter = match &args.glob {
        Some(glob) => Some(
            globset::GlobBuilder::new(glob)
                .literal_separator(glob.contains('/'))
                .build()
                .map_err(|e| format!("invalid glob `{glob}`: {e}"))?
                .compile_matcher(),
        ),
        None => None,
    };
    let context = if args.output == OutputMode::Content {
        args.context
    } else {
        0
    };
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut hits = Vec::new();
    for entry in walker(&root).build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        if let Some(filter) = &filter {
            let rel = path.strip_prefix(&root).unwrap_or(path);
            let name = Path::new(path.file_name().unwrap_or_default());
            if !(filter.is_match(rel)
                || (!args.glob.as_deref().unwrap_or("").contains('/') && filter.is_match(name)))
            {
                continue;
            }
        }
        let mut sink = Collect {
            shown: display(cwd, path),
            lines: Vec::new(),
            matches: 0,
        };
        if searcher.search_path(&matcher, path, &mut sink).is_err() || sink.matches == 0 {
            continue;
        }
        hits.push(FileHits {
            path: path.to_path_buf(),
            modified: entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH),
            matches: sink.matches,
            lines: sink.lines,
        });
    }
    let mut order: Vec<(PathBuf, SystemTime)> =
        hits.iter().map(|h| (h.path.clone(), h.modified)).collect();
    sort_newest_first(&mut order);
    let position = |p: &PathBuf| order.iter().position(|(q, _)| q == p).unwrap_or(usize::MAX);
    hits.sort_by_key(|h| position(&h.path));
    Ok(hits)
}

fn render(cwd: &Path, args: &Args, hits: Vec<FileHits>) -> String {
    if hits.is_empty() {
        return format!("No matches for `{}`.", args.pattern);
    }
    let total_matches: usize = hits.iter().map(|h| h.matches).sum();
    let files = hits.len();
    let lines: Vec<String> = match args.output {
        OutputMode::Files => hits.iter().map(|h| display(cwd, &h.path)).collect(),
        OutputMode::Count => hits
            .iter()
            .map(|h| format!("{}:{}", display(cwd, &h.path), h.matches))
            .collect(),
        OutputMode::Content => {
            let mut out = Vec::new();
            for (i, hit) in hits.into_iter().enumerate() {
                if i > 0 && args.context > 0 {
                    out.push("--".to_string());
                }
                out.extend(hit.lines);
            }
            out
        }
    };
    let shown = lines.len().min(MAX_LINES);
    let mut text = lines[..shown].join("\n");
    if lines.len() > shown {
        text.push_str(&format!(
            "\n({} more not shown; narrow the pattern, path or glob)",
            plural(lines.len() - shown, "line")
        ));
    }
    text.push_str(&format!(
        "\n[{} in {}]",
        plural(total_matches, "match").replace("matchs", "matches"),
        plural(files, "file")
    ));
    text
}

/// Collects a file's matching and context lines as `path:line:text` / `path-line-text`.
struct Collect {
    shown: String,
    lines: Vec<String>,
    matches: usize,
}

impl Collect {
    fn push(&mut self, separator: char, number: Option<u64>, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let text: String = if text.chars().count() > 500 {
            text.chars().take(500).collect::<String>() + "…"
        } else {
            text.to_string()
        };
        self.lines.push(format!(
            "{}{separator}{}{separator}{text}",
            self.shown,
            number.unwrap_or(0)
        ));
    }
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.matches += 1;
        self.push(':', found.line_number(), found.bytes());
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.push('-', context.line_number(), context.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        self.lines.push("--".to_string());
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pattern: &str, output: OutputMode) -> Args {
        Args {
            pattern: pattern.into(),
            path: None,
            glob: None,
            case_insensitive: false,
            output,
            context: 0,
        }
    }

    #[test]
    fn matches_are_listed_with_paths_and_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\nneedle here\nthree\n").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "ignored.txt\n").unwrap();
        std::fs::write(dir.path().join("ignored.txt"), "needle\n").unwrap();
        let cwd = dir.path();
        let a = args("needle", OutputMode::Content);
        let text = render(cwd, &a, search(cwd, &a).unwrap());
        assert_eq!(text, "a.txt:2:needle here\n[1 match in 1 file]");
        let c = args("e", OutputMode::Count);
        let text = render(cwd, &c, search(cwd, &c).unwrap());
        assert!(text.contains("a.txt:3"), "{text}");
    }

    #[test]
    fn a_bad_regex_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let err = search(dir.path(), &args("(", OutputMode::Files))
            .err()
            .unwrap();
        assert!(err.contains("invalid regular expression"), "{err}");
    }
}
