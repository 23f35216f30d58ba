//! `grep`: search file contents with a regular expression, honouring `.gitignore`; ripgrep's
//! own searcher does the work.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::walk::{Newest, modified, walk_files};
use super::{MAX_OUTPUT_BYTES, ToolContext, ToolOutput, display, plural, resolve};
use crate::regular_file;
use crate::tool_spec::ToolSpec;

/// Output lines shown before the rest is summarised.
pub(crate) const MAX_LINES: usize = 300;
/// Characters of one matching line shown before it is cut.
const MAX_LINE_CHARS: usize = 500;
/// The longest line searched; a file with a longer one is skipped.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Output bytes kept free for the notes on what was left out.
const NOTE_ROOM: usize = 200;

/// The model's description of `grep`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "grep".into(),
        description: "Search file contents with a regular expression (Rust regex syntax). \
                      Honours .gitignore; files newest first. `output`: `content` (matching \
                      lines as path:line:text, the default), `files` (paths only) or `count`. \
                      `glob` filters files, e.g. `*.rs`. `context` adds lines around matches."
            .into(),
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
pub(crate) struct Args {
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

/// What one file gave.
struct FileHits {
    matches: usize,
    /// Rendered lines, at most [`MAX_LINES`] (content output only).
    lines: Vec<String>,
}

/// Searches.
pub(crate) async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let cwd = ctx.cwd.clone();
    let cancel = ctx.cancel.clone();
    let hidden = ctx.hidden.clone();
    let found = tokio::task::spawn_blocking(move || {
        search(&cwd, &args, &cancel, hidden).map(|found| render(&cwd, &args, found))
    })
    .await;
    match found {
        Ok(Ok(text)) => ToolOutput::ok(text),
        Ok(Err(message)) => ToolOutput::error(message),
        Err(err) => ToolOutput::error(format!("grep failed: {err}")),
    }
}

/// What a search found: the newest files' findings that the output can show, and counts.
struct Found {
    hits: Newest<FileHits>,
    matches: usize,
}

impl Found {
    fn add(&mut self, path: PathBuf, modified: SystemTime, sink: Collect, mode: OutputMode) {
        self.matches += sink.matches;
        let weight = match mode {
            OutputMode::Content => sink.line_count,
            OutputMode::Files | OutputMode::Count => 1,
        };
        let hits = FileHits {
            matches: sink.matches,
            lines: sink.lines,
        };
        self.hits.insert(path, modified, weight, hits);
    }
}

fn search(
    cwd: &Path,
    args: &Args,
    cancel: &CancellationToken,
    hidden: std::sync::Arc<crate::sandbox::hidden::HiddenPaths>,
) -> Result<Found, String> {
    let root = resolve(cwd, args.path.as_deref().unwrap_or("."));
    let shown_root = display(cwd, &root);
    let meta = std::fs::metadata(&root).map_err(|_| format!("{shown_root} does not exist"))?;
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
        args.context.min(MAX_LINES)
    } else {
        0
    };
    let mut builder = SearcherBuilder::new();
    builder
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(0))
        .heap_limit(Some(MAX_LINE_BYTES));
    let found = Mutex::new(Found {
        hits: Newest::new(MAX_LINES),
        matches: 0,
    });
    let mode = args.output;
    let search_one = |searcher: &mut Searcher, path: &Path, file: std::fs::File| {
        let mut sink = Collect::new(display(cwd, path), mode);
        if searcher.search_file(&matcher, &file, &mut sink).is_err() || sink.matches == 0 {
            return None;
        }
        Some(sink)
    };
    if !meta.is_dir() {
        // One file named by the model: it must be a regular file.
        let file =
            regular_file::open(&root).map_err(|e| format!("cannot search {shown_root}: {e}"))?;
        hidden.check_opened(&file, &shown_root)?;
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if let Some(sink) = search_one(&mut builder.build(), &root, file) {
            lock(&found).add(root.clone(), modified, sink, mode);
        }
        return Ok(found.into_inner().unwrap_or_else(|e| e.into_inner()));
    }
    let wanted = |path: &Path| match &filter {
        None => true,
        Some(filter) => {
            let rel = path.strip_prefix(&root).unwrap_or(path);
            let name = Path::new(path.file_name().unwrap_or_default());
            filter.is_match(rel)
                || (!args.glob.as_deref().unwrap_or("").contains('/') && filter.is_match(name))
        }
    };
    walk_files(&root, cancel, hidden.clone(), || {
        let mut searcher = builder.build();
        let (found, wanted, search_one, hidden) = (&found, &wanted, &search_one, &hidden);
        move |entry: &ignore::DirEntry| {
            let path = entry.path();
            if !wanted(path) {
                return;
            }
            let Ok(file) = regular_file::open_listed(path) else {
                return;
            };
            // A directory swapped for a link since it was listed leads elsewhere.
            if hidden.check_opened(&file, "").is_err() {
                return;
            }
            if let Some(sink) = search_one(&mut searcher, path, file) {
                let modified = modified(entry);
                lock(found).add(path.to_path_buf(), modified, sink, mode);
            }
        }
    })
    .map_err(|e| e.to_string())?;
    Ok(found.into_inner().unwrap_or_else(|e| e.into_inner()))
}

fn lock(found: &Mutex<Found>) -> std::sync::MutexGuard<'_, Found> {
    found.lock().unwrap_or_else(|e| e.into_inner())
}

fn render(cwd: &Path, args: &Args, found: Found) -> String {
    let files = found.hits.files;
    if files == 0 {
        return format!("No matches for `{}`.", args.pattern);
    }
    let separators = if args.context > 0 { files - 1 } else { 0 };
    let total_lines = found.hits.weight + separators;
    let total_matches = found.matches;
    let mut text = String::new();
    let mut shown = 0;
    let mut push = |line: &str| {
        if shown >= MAX_LINES || text.len() + line.len() + NOTE_ROOM > MAX_OUTPUT_BYTES {
            return false;
        }
        text.push_str(line);
        text.push('\n');
        shown += 1;
        true
    };
    'files: for (i, (path, hit)) in found.hits.into_kept().enumerate() {
        let fits = match args.output {
            OutputMode::Files => push(&display(cwd, &path)),
            OutputMode::Count => push(&format!("{}:{}", display(cwd, &path), hit.matches)),
            OutputMode::Content => {
                if i > 0 && args.context > 0 && !push("--") {
                    break 'files;
                }
                hit.lines.iter().all(|line| push(line))
            }
        };
        if !fits {
            break;
        }
    }
    if total_lines > shown {
        text.push_str(&format!(
            "(not shown: {}; narrow the pattern, path or glob)\n",
            plural(total_lines - shown, "line")
        ));
    }
    let summary = match args.output {
        OutputMode::Files => format!("[{}]", plural(files, "file")),
        _ => format!(
            "[{} in {}]",
            plural(total_matches, "match").replace("matchs", "matches"),
            plural(files, "file")
        ),
    };
    text.push_str(&summary);
    text
}

/// Collects a file's matching and context lines as `path:line:text` / `path-line-text`,
/// holding at most [`MAX_LINES`] of them and counting the rest.
struct Collect {
    shown: String,
    mode: OutputMode,
    lines: Vec<String>,
    line_count: usize,
    matches: usize,
}

impl Collect {
    fn new(shown: String, mode: OutputMode) -> Collect {
        Collect {
            shown,
            mode,
            lines: Vec::new(),
            line_count: 0,
            matches: 0,
        }
    }

    fn push(&mut self, separator: char, number: Option<u64>, bytes: &[u8]) {
        self.line_count += 1;
        if self.mode != OutputMode::Content || self.lines.len() >= MAX_LINES {
            return;
        }
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let text: String = if text.chars().count() > MAX_LINE_CHARS {
            text.chars().take(MAX_LINE_CHARS).collect::<String>() + "…"
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
        // For a list of files, one match says all.
        if self.mode == OutputMode::Files {
            return Ok(false);
        }
        self.push(':', found.line_number(), found.bytes());
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.push('-', context.line_number(), context.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        self.line_count += 1;
        if self.lines.len() < MAX_LINES {
            self.lines.push("--".to_string());
        }
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
        let none = CancellationToken::new();
        let text = render(cwd, &a, search(cwd, &a, &none, Default::default()).unwrap());
        assert_eq!(text, "a.txt:2:needle here\n[1 match in 1 file]");
        let c = args("e", OutputMode::Count);
        let text = render(cwd, &c, search(cwd, &c, &none, Default::default()).unwrap());
        assert!(text.contains("a.txt:3"), "{text}");
    }

    #[test]
    fn long_output_stays_within_the_limit_with_one_note() {
        let dir = tempfile::tempdir().unwrap();
        let line = format!("needle {}\n", "x".repeat(400));
        for i in 0..50 {
            std::fs::write(dir.path().join(format!("f{i}.txt")), line.repeat(100)).unwrap();
        }
        let a = args("needle", OutputMode::Content);
        let text = render(
            dir.path(),
            &a,
            search(
                dir.path(),
                &a,
                &CancellationToken::new(),
                Default::default(),
            )
            .unwrap(),
        );
        assert!(text.len() <= MAX_OUTPUT_BYTES, "{}", text.len());
        assert_eq!(text.matches("not shown").count(), 1);
        assert!(text.ends_with("\n[5000 matches in 50 files]"));
        let shown = text.lines().filter(|l| l.contains(":needle ")).count();
        assert!(
            text.contains(&format!("(not shown: {} lines;", 5000 - shown)),
            "{shown}"
        );
    }

    #[test]
    fn a_cancelled_search_stops() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "needle\n").unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let err = search(
            dir.path(),
            &args("needle", OutputMode::Count),
            &cancel,
            Default::default(),
        )
        .err()
        .unwrap();
        assert!(err.contains("interrupted"), "{err}");
    }

    #[test]
    fn a_bad_regex_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let err = search(
            dir.path(),
            &args("(", OutputMode::Files),
            &CancellationToken::new(),
            Default::default(),
        )
        .err()
        .unwrap();
        assert!(err.contains("invalid regular expression"), "{err}");
    }
}
