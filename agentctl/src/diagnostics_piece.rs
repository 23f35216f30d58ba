//! The diagnostics piece of an `edit` or `write` result: the errors (and few warnings) the change
//! introduced, as the daemon's language server reported them, after the diff. Shown apart from
//! the diff: the header yellow, each error red, each warning yellow.

use crate::style::{Style, printable};

/// The piece's lines shown at most (the daemon sends a header and at most ten more).
const SHOWN_LINES: usize = 12;

/// `output` split into what comes before the diagnostics piece and the piece, when it has one.
/// The piece starts at a line beginning `diagnostics (` (a diff's lines never do: each starts
/// with a space, `+`, `-`, `@` or `\`).
pub fn split(output: &str) -> (&str, Option<&str>) {
    if output.starts_with("diagnostics (") {
        return ("", Some(output));
    }
    match output.find("\ndiagnostics (") {
        Some(at) => (&output[..=at], Some(&output[at + 1..])),
        None => (output, None),
    }
}

/// The piece's lines as a person sees them under the change, indented like the diff.
pub fn shown(piece: &str, style: Style) -> Vec<String> {
    piece
        .lines()
        .take(SHOWN_LINES)
        .enumerate()
        .map(|(i, line)| {
            let line = printable(line.trim_start());
            if i == 0 {
                format!("  {}", style.yellow(&line))
            } else if line.contains(" error: ") {
                format!("    {}", style.red(&line))
            } else if line.contains(" warning: ") {
                format!("    {}", style.yellow(&line))
            } else {
                format!("    {}", style.dim(&line))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EDITED: &str = "Edited m.py\n--- m.py\n+++ m.py\n@@ -5 +5 @@\n-x: int = 1\n+x: int = \"s\"\ndiagnostics (pyright): 1 new error\n  m.py:5:10 error: Type \"Literal['s']\" is not assignable to declared type \"int\" [reportAssignmentType]";

    #[test]
    fn the_piece_is_split_from_the_diff_and_shown_under_it() {
        let (diff, piece) = split(EDITED);
        assert!(diff.ends_with("+x: int = \"s\"\n"), "{diff}");
        let shown = shown(piece.expect("a piece"), Style::plain());
        assert_eq!(
            shown,
            [
                "  diagnostics (pyright): 1 new error",
                "    m.py:5:10 error: Type \"Literal['s']\" is not assignable to declared type \"int\" [reportAssignmentType]"
            ]
        );
        let created = "Created n.py (1 line, 9 bytes)\ndiagnostics (pyright): 1 error (all errors in the file)\n  n.py:1:1 error: x";
        assert_eq!(split(created).0, "Created n.py (1 line, 9 bytes)\n");
        assert_eq!(
            split("Edited m.py\n@@ -1 +1 @@\n diagnostics (x)\n").1,
            None
        );
    }

    #[test]
    fn a_servers_escapes_are_shown_not_obeyed() {
        let piece = "diagnostics (evil): 1 new error\n  m.py:1:1 error: \u{1b}]52;c;aGk=\u{7}boom";
        let shown = shown(piece, Style::plain()).join("\n");
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        assert!(!shown.contains('\u{7}'), "{shown:?}");
    }
}
