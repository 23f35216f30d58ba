//! What a refused `edit` shows the model so that its next call can succeed: the lines of the
//! file closest to the `old_string` it gave, numbered as `read` numbers them, and how they
//! differ from it.

use similar::{ChangeTag, TextDiff};

/// Lines of context shown around a region.
const CONTEXT: usize = 2;
/// The most lines of a region shown.
const MAX_REGION_LINES: usize = 60;
/// Line pairs compared by characters before only equal lines are counted (big files).
const MAX_FINE_PAIRS: usize = 50_000;
/// Below this average likeness (0 to 1) no region counts as close.
const CLOSE_ENOUGH: f32 = 0.3;
/// Lines of the file shown when nothing is close and the file is short.
const SHORT_FILE_LINES: usize = 40;

/// The lines `from..to` (0-based, end exclusive) of `lines`, numbered like `read` numbers them.
pub(crate) fn numbered(lines: &[&str], from: usize, to: usize) -> String {
    let to = to.min(lines.len()).min(from + MAX_REGION_LINES);
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate().take(to).skip(from) {
        out.push_str(&format!("{:>6}\t{}\n", i + 1, line.trim_end_matches('\r')));
    }
    if to < lines.len() && to == from + MAX_REGION_LINES {
        out.push_str("(more lines follow; read the file to see them)\n");
    }
    out
}

/// Where the text `old` (lines) sits, or the place closest to it: the first line and the
/// number of lines, with how alike they are (1 for the same up to whitespace at the ends).
fn closest(lines: &[&str], old: &[&str]) -> Option<(usize, usize, f32)> {
    if lines.is_empty() || old.is_empty() {
        return None;
    }
    let n = old.len().min(lines.len());
    let fine = lines.len().saturating_mul(n) <= MAX_FINE_PAIRS;
    let likeness = |a: &str, b: &str| -> f32 {
        let (a, b) = (a.trim(), b.trim());
        if a == b {
            1.0
        } else if fine {
            TextDiff::from_chars(a, b).ratio()
        } else {
            0.0
        }
    };
    let mut best: Option<(usize, f32)> = None;
    for at in 0..=lines.len() - n {
        let score: f32 = old
            .iter()
            .zip(&lines[at..at + n])
            .map(|(o, l)| likeness(o, l))
            .sum::<f32>()
            / old.len() as f32;
        if best.is_none_or(|(_, s)| score > s) {
            best = Some((at, score));
        }
    }
    best.map(|(at, score)| (at, n, score))
}

/// The lines of `text` closest to `old`, numbered with a little context, then how `old`
/// differs from them; when nothing is close, the start of a short file or a pointer to `read`.
pub(crate) fn closest_region(text: &str, old: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let wanted: Vec<&str> = old.trim_matches('\n').lines().collect();
    match closest(&lines, &wanted) {
        Some((at, n, score)) if score >= CLOSE_ENOUGH => {
            let from = at.saturating_sub(CONTEXT);
            let to = (at + n + CONTEXT).min(lines.len());
            let mut out = format!(
                "The closest text in the file is at {}:\n{}",
                span(at, n),
                numbered(&lines, from, to)
            );
            let differences = differences(&wanted, &lines[at..at + n]);
            if !differences.is_empty() {
                out.push_str(&format!(
                    "How old_string differs from those lines (- old_string, + the file):\n{differences}"
                ));
            }
            out
        }
        _ if lines.len() <= SHORT_FILE_LINES => format!(
            "Nothing in the file is close to old_string. The whole file:\n{}",
            numbered(&lines, 0, lines.len())
        ),
        _ => format!(
            "Nothing in the file is close to old_string; read the part you want to change ({} lines in all).",
            lines.len()
        ),
    }
}

/// Where `old` occurs in `text`, numbered with a little context; `None` when it does not
/// occur as whole lines or a part of one.
pub(crate) fn region_of(text: &str, old: &str) -> Option<String> {
    let at = text.find(old)?;
    let first = text.get(..at)?.matches('\n').count();
    let n = old.trim_end_matches('\n').matches('\n').count() + 1;
    let lines: Vec<&str> = text.lines().collect();
    let from = first.saturating_sub(CONTEXT);
    let to = (first + n + CONTEXT).min(lines.len());
    Some(format!(
        "old_string is at {}:\n{}",
        span(first, n),
        numbered(&lines, from, to)
    ))
}

fn span(at: usize, n: usize) -> String {
    if n <= 1 {
        format!("line {}", at + 1)
    } else {
        format!("lines {}-{}", at + 1, at + n)
    }
}

/// The lines that differ between `old` and `found`, `-` for old_string's and `+` for the
/// file's, with a note on whitespace-only differences.
fn differences(old: &[&str], found: &[&str]) -> String {
    let (old, found) = (old.join("\n"), found.join("\n"));
    let diff = TextDiff::from_lines(&old, &found);
    let mut out = String::new();
    let mut shown = 0;
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            ChangeTag::Delete => '-',
            ChangeTag::Insert => '+',
            ChangeTag::Equal => continue,
        };
        shown += 1;
        if shown > MAX_REGION_LINES {
            out.push_str("(more differences left out)\n");
            break;
        }
        let line = change.value().trim_end_matches('\n');
        out.push_str(&format!("{sign} {}\n", visible_whitespace(line)));
    }
    if !out.is_empty() && old.split_whitespace().eq(found.split_whitespace()) {
        out.push_str("(they differ only in whitespace: copy the indentation exactly)\n");
    }
    out
}

/// Tabs and trailing spaces made visible, so a whitespace-only difference can be seen.
fn visible_whitespace(line: &str) -> String {
    let body = line.trim_end_matches(' ');
    let trailing = line.len() - body.len();
    let mut out = body.replace('\t', "→");
    out.extend(std::iter::repeat_n('·', trailing));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "import math\n\ndef area(r):\n    \"\"\"The area.\"\"\"\n    raise NotImplementedError(\"not written yet\")\n\nprint(area(2))\n";

    #[test]
    fn the_closest_lines_are_shown_numbered_with_how_they_differ() {
        let region = closest_region(FILE, "    raise NotImplementedError()\n");
        assert!(region.contains("at line 5:"), "{region}");
        assert!(
            region.contains("     5\t    raise NotImplementedError(\"not written yet\")"),
            "{region}"
        );
        assert!(region.contains("     3\tdef area(r):"), "{region}");
        assert!(
            region.contains("-     raise NotImplementedError()\n"),
            "{region}"
        );
        assert!(
            region.contains("+     raise NotImplementedError(\"not written yet\")\n"),
            "{region}"
        );
    }

    #[test]
    fn a_whitespace_difference_is_named() {
        let region = closest_region(FILE, "def area(r):\n  \"\"\"The area.\"\"\"");
        assert!(region.contains("lines 3-4"), "{region}");
        assert!(region.contains("only in whitespace"), "{region}");
    }

    #[test]
    fn nothing_close_in_a_short_file_shows_the_file() {
        let region = closest_region(FILE, "zzzzzzzzzzzzzzzzzzzz qqqqqqqq");
        assert!(region.contains("Nothing in the file is close"), "{region}");
        assert!(region.contains("     7\tprint(area(2))"), "{region}");
    }

    #[test]
    fn the_region_of_present_text_is_numbered() {
        let region = region_of(FILE, "def area(r):\n").unwrap();
        assert!(region.starts_with("old_string is at line 3:"), "{region}");
        assert!(region.contains("     1\timport math"), "{region}");
        assert!(region_of(FILE, "nowhere").is_none());
    }

    #[test]
    fn big_files_and_odd_input_do_not_panic() {
        let big = "x = 1\n".repeat(100_000);
        let region = closest_region(&big, "y = 2\nz = 3\n");
        assert!(!region.is_empty());
        assert!(closest_region("", "a").contains("Nothing"));
        assert!(closest_region("a\n", "\n\n").contains("Nothing"));
    }
}
