//! `read`: a file's lines, numbered like `cat -n`.

use std::io::{BufRead, BufReader, Read};

use serde::Deserialize;
use serde_json::json;

use super::{ToolContext, ToolOutput, display, resolve};
use crate::provider::ToolSpec;

/// Lines shown when no limit is given.
pub const DEFAULT_LIMIT: usize = 2000;
/// Characters of one line shown before it is cut.
pub const MAX_LINE_CHARS: usize = 2000;
/// Bytes looked at to tell a binary file.
const SNIFF_BYTES: usize = 8192;

/// The model's description of `read`.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "read",
        description: "Read a text file. Returns numbered lines (like `cat -n`). Reads up to 2000 \
                      lines from `offset` (1-based, default 1); use offset and limit to page \
                      through long files. Paths are relative to the working directory.",
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
pub struct Args {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

/// Reads the file.
pub async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let path = resolve(&ctx.cwd, &args.path);
    let shown = display(&ctx.cwd, &path);
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let tracked = path.clone();
    let result = tokio::task::spawn_blocking(move || read_lines(&path, offset, limit)).await;
    match result {
        Ok(Ok((text, content))) => {
            if let Some(content) = content {
                ctx.files.read(&tracked, &content);
            }
            ToolOutput::ok(text)
        }
        Ok(Err(message)) => ToolOutput::error(format!("cannot read {shown}: {message}")),
        Err(err) => ToolOutput::error(format!("cannot read {shown}: {err}")),
    }
}

/// Files up to this size are read whole, so that the stale-file guard can remember them.
const TRACKED_BYTES: u64 = 16 * 1024 * 1024;

/// The numbered lines, and the whole content when the file is small enough to remember.
fn read_lines(
    path: &std::path::Path,
    offset: usize,
    limit: usize,
) -> Result<(String, Option<Vec<u8>>), String> {
    let meta = std::fs::metadata(path).map_err(|e| describe(&e))?;
    if meta.is_dir() {
        return Err("it is a directory; use glob to list files".to_string());
    }
    let content = if meta.len() <= TRACKED_BYTES {
        Some(std::fs::read(path).map_err(|e| describe(&e))?)
    } else {
        None
    };
    let mut reader: Box<dyn BufRead> = match &content {
        Some(bytes) => Box::new(&bytes[..]),
        None => Box::new(BufReader::new(
            std::fs::File::open(path).map_err(|e| describe(&e))?,
        )),
    };
    let head = reader.fill_buf().map_err(|e| describe(&e))?;
    if head[..head.len().min(SNIFF_BYTES)].contains(&0) {
        return Err(format!(
            "it is a binary file ({} bytes); only text files can be read",
            meta.len()
        ));
    }
    let mut out = String::new();
    let mut total = 0usize;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader
            .by_ref()
            .read_until(b'\n', &mut line)
            .map_err(|e| describe(&e))?;
        if n == 0 {
            break;
        }
        total += 1;
        if total < offset || total >= offset + limit {
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        if text.chars().count() > MAX_LINE_CHARS {
            let cut: String = text.chars().take(MAX_LINE_CHARS).collect();
            out.push_str(&format!(
                "{total:>6}\t{cut}… (line cut at {MAX_LINE_CHARS} characters)\n"
            ));
        } else {
            out.push_str(&format!("{total:>6}\t{text}\n"));
        }
    }
    drop(reader);
    if total == 0 {
        return Ok(("(empty file)".to_string(), content));
    }
    if offset > total {
        return Err(format!(
            "offset {offset} is past the end of the file ({total} lines)"
        ));
    }
    let last = (offset + limit - 1).min(total);
    if offset > 1 || last < total {
        out.push_str(&format!(
            "\n(lines {offset}-{last} of {total}; use offset and limit to read more)\n"
        ));
    }
    Ok((out, content))
}

/// An I/O error in words a model acts on.
pub fn describe(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_and_paged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "a\nb\nc\nd\n").unwrap();
        assert_eq!(
            read_lines(&path, 1, 10).unwrap().0,
            "     1\ta\n     2\tb\n     3\tc\n     4\td\n"
        );
        let page = read_lines(&path, 2, 2).unwrap().0;
        assert!(page.starts_with("     2\tb\n     3\tc\n"), "{page}");
        assert!(page.contains("(lines 2-3 of 4;"), "{page}");
        assert!(
            read_lines(&path, 9, 1)
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
            read_lines(&path, 1, 10)
                .unwrap_err()
                .contains("binary file (4 bytes)")
        );
        assert!(
            read_lines(dir.path(), 1, 10)
                .unwrap_err()
                .contains("directory")
        );
        assert_eq!(
            read_lines(&dir.path().join("none"), 1, 1).unwrap_err(),
            "no such file"
        );
    }
}
