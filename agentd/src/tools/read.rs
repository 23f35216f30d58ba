//! `read`: a file's lines, numbered like `cat -n`.

use std::io::BufRead;
use std::path::Path;

use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{Tool, ToolContext, ToolOutput, display, resolve};
pub(crate) use crate::regular_file::describe;
use crate::regular_file::{self, OpenError};
use crate::stale_files::{Stamp, StampBuilder, TRACKED_BYTES};
use crate::tool_spec::ToolSpec;

/// Lines shown when no limit is given.
pub(crate) const DEFAULT_LIMIT: usize = 2000;
/// Characters of one line shown before it is cut.
pub(crate) const MAX_LINE_CHARS: usize = 2000;
/// Bytes of one line kept while reading: enough for [`MAX_LINE_CHARS`] characters and a CR.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4 + 1;
/// Output bytes kept free for the note on paging.
const NOTE_ROOM: usize = 200;
/// Bytes looked at to tell a binary file.
const SNIFF_BYTES: usize = 8192;

/// The model's description of `read`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "read".into(),
        description: "Read a text file or an image. Returns numbered lines (like `cat -n`). \
                      Reads up to 2000 lines from `offset` (1-based, default 1); use offset and \
                      limit to page through long files. A PNG, JPEG, GIF or WebP image is shown \
                      to you as an image. Paths are relative to the working directory."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file to read."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show (default 2000)."}
            },
            "required": ["path"]
        }),
    }
}

/// The arguments of `read`.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

/// Reads the file.
pub(crate) async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let path = resolve(&ctx.cwd, &args.path);
    let shown = display(&ctx.cwd, &path);
    if let Some(image) = super::read_image::read(&path, &shown, &ctx).await {
        return image;
    }
    let window = Window::new(
        args.offset.unwrap_or(1),
        args.limit.unwrap_or(DEFAULT_LIMIT),
        Tool::Read.output_limit(),
    );
    match read_window(path.clone(), window, &ctx).await {
        Ok(text) => {
            super::diagnostics::opened(&path, &ctx);
            ToolOutput::ok(text)
        }
        Err(message) => ToolOutput::error(format!("cannot read {shown}: {message}")),
    }
}

/// The file as `read` with no offset or limit shows it, remembered as read: what a refused
/// `edit` or `write` hands back, so that the model's next call can succeed.
pub(crate) async fn as_read(path: &Path, ctx: &ToolContext) -> Result<String, String> {
    let window = Window::new(1, DEFAULT_LIMIT, Tool::Read.output_limit());
    read_window(path.to_path_buf(), window, ctx).await
}

/// Reads `window` of `path` off the runtime's threads; a file read whole is remembered as read.
async fn read_window(
    path: std::path::PathBuf,
    window: Window,
    ctx: &ToolContext,
) -> Result<String, String> {
    let tracked = path.clone();
    let cancel = ctx.cancel.clone();
    let hidden = ctx.hidden.clone();
    let result =
        tokio::task::spawn_blocking(move || read_lines(&path, window, &cancel, &hidden)).await;
    match result {
        Ok(Ok(read)) => {
            if let Some(stamp) = read.stamp {
                ctx.files.read(&tracked, stamp);
            }
            Ok(read.text)
        }
        Ok(Err(message)) => Err(message),
        Err(err) => Err(err.to_string()),
    }
}

/// Which lines to show, and the bytes of output they may take.
#[derive(Debug, Clone, Copy)]
struct Window {
    /// The first line (1-based).
    offset: usize,
    /// The last line (1-based, inclusive); saturates for any limit.
    last: usize,
    /// Output bytes.
    budget: usize,
}

impl Window {
    fn new(offset: usize, limit: usize, budget: usize) -> Window {
        let offset = offset.max(1);
        Window {
            offset,
            last: offset.saturating_add(limit.max(1) - 1),
            budget,
        }
    }

    fn shows(&self, line: usize) -> bool {
        (self.offset..=self.last).contains(&line)
    }
}

/// What a read found.
struct Read {
    /// The numbered lines and the note on paging.
    text: String,
    /// The content's stamp, when the whole file was read and is small enough to remember.
    stamp: Option<Stamp>,
}

/// Reads `path` a piece at a time: the lines of the window are numbered, the rest only counted.
/// Memory stays within the output budget and one line's cut, whatever the file says its size
/// is; a file too large to track is read only as far as the window goes. Stops at `cancel`.
fn read_lines(
    path: &Path,
    window: Window,
    cancel: &CancellationToken,
    hidden: &crate::sandbox::hidden::HiddenPaths,
) -> Result<Read, String> {
    let file = regular_file::open(path).map_err(|err| match err {
        OpenError::NotRegular {
            kind: "a directory",
        } => "it is a directory; use glob to list files".to_string(),
        other => other.to_string(),
    })?;
    hidden.check_opened(&file, &path.display().to_string())?;
    let size = file.metadata().map_err(|e| describe(&e))?.len();
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
    let mut lines = Lines::new(window);
    let mut stamp = StampBuilder::default();
    let mut sniffed = false;
    loop {
        if cancel.is_cancelled() {
            return Err("interrupted: the run was cancelled".to_string());
        }
        let buf = reader.fill_buf().map_err(|e| describe(&e))?;
        if buf.is_empty() {
            break;
        }
        if !sniffed {
            sniffed = true;
            if buf.iter().take(SNIFF_BYTES).any(|&b| b == 0) {
                return Err(format!(
                    "it is a binary file ({size} bytes); only text files can be read"
                ));
            }
        }
        stamp.write(buf);
        for piece in buf.split_inclusive(|&b| b == b'\n') {
            lines.take(piece);
        }
        let consumed = buf.len();
        reader.consume(consumed);
        // A file too large to remember is read only as far as it is shown.
        let tracked = size <= TRACKED_BYTES && stamp.len() <= TRACKED_BYTES;
        if !tracked && lines.done() {
            let text = lines.finish(None, stamp.len());
            return Ok(Read { text, stamp: None });
        }
    }
    lines.end_of_file();
    let total = lines.number;
    if total == 0 {
        return Ok(Read {
            text: "(empty file)".to_string(),
            stamp: Some(stamp.finish()),
        });
    }
    if window.offset > total {
        return Err(format!(
            "offset {} is past the end of the file ({total} lines)",
            window.offset
        ));
    }
    let tracked = stamp.len() <= TRACKED_BYTES;
    let text = lines.finish(Some(total), stamp.len());
    Ok(Read {
        text,
        stamp: tracked.then(|| stamp.finish()),
    })
}

/// Lines being read: the numbered output so far and the line in progress.
struct Lines {
    window: Window,
    out: String,
    /// The kept part of the line in progress (at most [`MAX_LINE_BYTES`]).
    line: Vec<u8>,
    /// Whether bytes of an unfinished line were seen.
    in_line: bool,
    /// Whether the line in progress was longer than what is kept of it.
    line_cut: bool,
    /// Complete lines seen.
    number: usize,
    /// The first line that no longer fit the output budget.
    full_at: Option<usize>,
}

impl Lines {
    fn new(window: Window) -> Lines {
        Lines {
            window,
            out: String::new(),
            line: Vec::new(),
            in_line: false,
            line_cut: false,
            number: 0,
            full_at: None,
        }
    }

    /// Whether every line to show has been seen.
    fn done(&self) -> bool {
        self.full_at.is_some() || self.number >= self.window.last
    }

    /// Takes a piece of the file that ends at a newline or at the end of what was read.
    fn take(&mut self, piece: &[u8]) {
        let ends_line = piece.ends_with(b"\n");
        let content = if ends_line {
            piece.get(..piece.len() - 1).unwrap_or_default()
        } else {
            piece
        };
        if self.window.shows(self.number.saturating_add(1)) && self.full_at.is_none() {
            let room = MAX_LINE_BYTES.saturating_sub(self.line.len());
            let kept = content.get(..room.min(content.len())).unwrap_or_default();
            self.line.extend_from_slice(kept);
            self.line_cut |= content.len() > room;
        }
        if ends_line {
            self.end_line();
        } else {
            self.in_line |= !piece.is_empty();
        }
    }

    /// A last line without a newline counts too.
    fn end_of_file(&mut self) {
        if self.in_line {
            self.end_line();
        }
    }

    fn end_line(&mut self) {
        self.number = self.number.saturating_add(1);
        self.in_line = false;
        let number = self.number;
        let line = std::mem::take(&mut self.line);
        let cut = std::mem::take(&mut self.line_cut);
        if !self.window.shows(number) || self.full_at.is_some() {
            return;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches('\r');
        let rendered = if cut || text.chars().count() > MAX_LINE_CHARS {
            let kept: String = text.chars().take(MAX_LINE_CHARS).collect();
            format!("{number:>6}\t{kept}… (line cut at {MAX_LINE_CHARS} characters)\n")
        } else {
            format!("{number:>6}\t{text}\n")
        };
        if self.out.len() + rendered.len() + NOTE_ROOM > self.window.budget {
            self.full_at = Some(number);
        } else {
            self.out.push_str(&rendered);
        }
    }

    /// The numbered lines with one note on what else there is. `total` is `None` when the
    /// file was not read to its end.
    fn finish(self, total: Option<usize>, bytes_read: u64) -> String {
        let Window {
            offset,
            last,
            budget,
        } = self.window;
        let mut out = self.out;
        let note = match (self.full_at, total) {
            (Some(stopped), _) if stopped > offset => {
                let of = total.map_or_else(String::new, |t| format!(" of {t}"));
                Some(format!(
                    "lines {offset}-{}{of} shown: the output limit of {budget} bytes was reached; use offset {stopped} to read on",
                    stopped - 1
                ))
            }
            (Some(_), _) => Some(format!(
                "line {offset} does not fit the output limit of {budget} bytes"
            )),
            (None, Some(total)) if offset > 1 || last < total => Some(format!(
                "lines {offset}-{} of {total}; use offset and limit to read more",
                last.min(total)
            )),
            (None, Some(_)) => None,
            (None, None) => Some(format!(
                "lines {offset}-{last} of a large file ({bytes_read} bytes read so far); use offset and limit to read more"
            )),
        };
        if let Some(note) = note {
            out.push_str(&format!("\n({note})\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path, offset: usize, limit: usize) -> Result<String, String> {
        read_lines(
            path,
            Window::new(offset, limit, 100_000),
            &CancellationToken::new(),
            &Default::default(),
        )
        .map(|r| r.text)
    }

    #[test]
    fn lines_are_numbered_and_paged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "a\nb\nc\nd").unwrap();
        assert_eq!(
            read(&path, 1, 10).unwrap(),
            "     1\ta\n     2\tb\n     3\tc\n     4\td\n"
        );
        let page = read(&path, 2, 2).unwrap();
        assert!(page.starts_with("     2\tb\n     3\tc\n"), "{page}");
        assert!(page.contains("(lines 2-3 of 4;"), "{page}");
        assert!(read(&path, 9, 1).unwrap_err().contains("past the end"));
    }

    #[test]
    fn offsets_and_limits_near_the_largest_number_do_not_overflow() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "a\nb\n").unwrap();
        assert!(read(&path, 2, usize::MAX).unwrap().starts_with("     2\tb"));
        assert!(
            read(&path, usize::MAX, usize::MAX)
                .unwrap_err()
                .contains("past the end")
        );
    }

    #[test]
    fn binary_files_and_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.bin");
        std::fs::write(&path, [0u8, 1, 2, 3]).unwrap();
        assert!(
            read(&path, 1, 10)
                .unwrap_err()
                .contains("binary file (4 bytes)")
        );
        assert!(read(dir.path(), 1, 10).unwrap_err().contains("directory"));
        assert_eq!(
            read(&dir.path().join("none"), 1, 1).unwrap_err(),
            "no such file"
        );
    }

    #[test]
    fn output_stops_at_its_limit_with_one_note() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.txt");
        let line = "x".repeat(100);
        std::fs::write(&path, format!("{line}\n").repeat(5000)).unwrap();
        let text = read_lines(
            &path,
            Window::new(1, 2000, 10_000),
            &CancellationToken::new(),
            &Default::default(),
        )
        .unwrap()
        .text;
        assert!(text.len() <= 10_000, "{}", text.len());
        assert_eq!(text.matches("\n(").count(), 1, "{text}");
        assert!(text.contains("of 5000 shown"), "{text}");
        let next: usize = text
            .rsplit("use offset ")
            .next()
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(text.contains(&format!("{:>6}\t", next - 1)));
    }

    #[test]
    fn a_very_long_line_is_cut_without_holding_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("one-line.txt");
        std::fs::write(&path, "é".repeat(1_000_000)).unwrap();
        let text = read(&path, 1, 10).unwrap();
        assert!(text.contains("(line cut at 2000 characters)"));
        assert_eq!(text.matches('é').count(), 2000);
    }
}
