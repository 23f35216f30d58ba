//! Cutting styled text (ANSI colors in it) into terminal rows by display width: the colors
//! a row ends inside are closed at its end and opened again at the start of the next row.

use unicode_width::UnicodeWidthChar;

/// A piece of styled text: an escape sequence (no width) or one character.
enum Piece<'a> {
    Escape(&'a str),
    Char(char, usize),
}

/// The pieces of `text`: CSI sequences (`ESC [ … final`) whole, everything else by character.
/// Other control characters have no width.
fn pieces(text: &str) -> impl Iterator<Item = Piece<'_>> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let c = rest.chars().next()?;
        if c == '\x1b' && rest[1..].starts_with('[') {
            let end = rest[2..]
                .find(|c: char| ('@'..='~').contains(&c))
                .map_or(rest.len(), |i| i + 3);
            let (escape, after) = rest.split_at(end);
            rest = after;
            return Some(Piece::Escape(escape));
        }
        rest = &rest[c.len_utf8()..];
        Some(Piece::Char(c, c.width().unwrap_or(0)))
    })
}

/// The columns `text` takes on a terminal (its escape sequences take none).
pub fn width(text: &str) -> usize {
    pieces(text)
        .map(|p| match p {
            Piece::Char(_, w) => w,
            Piece::Escape(_) => 0,
        })
        .sum()
}

/// Whether an escape sequence ends all styling (`ESC[0m`, `ESC[m`).
fn is_reset(escape: &str) -> bool {
    escape == "\x1b[0m" || escape == "\x1b[m"
}

/// `text` as rows at most `cols` wide (at least one row, also for empty text). Tabs count as
/// one column each: callers replace them first where it matters.
pub fn wrap(text: &str, cols: usize) -> Vec<String> {
    let cols = cols.max(1);
    let mut rows = Vec::new();
    let mut row = String::new();
    let mut used = 0;
    // The styling in force: opened again at the start of each new row.
    let mut styling = String::new();
    for piece in pieces(text) {
        match piece {
            Piece::Escape(escape) => {
                if is_reset(escape) {
                    styling.clear();
                } else if escape.ends_with('m') {
                    styling.push_str(escape);
                }
                row.push_str(escape);
            }
            Piece::Char(c, w) => {
                if used + w > cols && used > 0 {
                    if !styling.is_empty() {
                        row.push_str("\x1b[0m");
                    }
                    rows.push(std::mem::take(&mut row));
                    row.push_str(&styling);
                    used = 0;
                }
                row.push(c);
                used += w;
            }
        }
    }
    rows.push(row);
    rows
}

/// `text` on one row at most `cols` wide: cut with `…` when it is wider.
pub fn truncate(text: &str, cols: usize) -> String {
    if width(text) <= cols {
        return text.to_string();
    }
    let room = cols.saturating_sub(1);
    let mut out = String::new();
    let mut used = 0;
    let mut styled = false;
    for piece in pieces(text) {
        match piece {
            Piece::Escape(escape) => {
                styled = true;
                out.push_str(escape);
            }
            Piece::Char(c, w) => {
                if used + w > room {
                    break;
                }
                out.push(c);
                used += w;
            }
        }
    }
    out.push('…');
    if styled {
        out.push_str("\x1b[0m");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_never_wider_than_the_terminal_and_keep_their_colors() {
        assert_eq!(wrap("abcdef", 4), vec!["abcd", "ef"]);
        assert_eq!(wrap("", 4), vec![""]);
        let rows = wrap("\x1b[1mabcdef\x1b[0mgh", 4);
        assert_eq!(rows, vec!["\x1b[1mabcd\x1b[0m", "\x1b[1mef\x1b[0mgh"]);
        assert!(rows.iter().all(|r| width(r) <= 4));
        // Wide characters are not split across the edge.
        assert_eq!(wrap("ab界", 3), vec!["ab", "界"]);
    }

    #[test]
    fn a_cut_row_ends_with_an_ellipsis() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
        assert_eq!(width(&truncate("\x1b[2mabcdef\x1b[0m", 4)), 4);
    }
}
