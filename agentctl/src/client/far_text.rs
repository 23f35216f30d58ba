//! Text that comes from the far end of the connection (a daemon's error, its version, what a
//! remote shell printed) made safe to print outside the views: the control characters a
//! terminal would obey (escape sequences, carriage returns, backspaces, bidirectional
//! overrides) are shown as `�`, and the length is capped. The far end may be another machine
//! (docs/architecture.md#another-machine-over-ssh), so none of its text is trusted.

/// The most characters of a daemon's message shown (errors, reasons a connection ended).
pub const MESSAGE_CHARS: usize = 2000;

/// The most characters of a short name the daemon gives (its version).
pub const NAME_CHARS: usize = 64;

/// The most characters of a path the daemon gives (a session's directory: a daemon takes at
/// most 4096 bytes).
pub const PATH_CHARS: usize = 4096;

/// `text` with every character a terminal would obey shown as `�` (tabs and newlines stay),
/// cut after `max_chars` characters with `…` added.
pub fn printable(text: &str, max_chars: usize) -> String {
    shown(text, max_chars, true)
}

/// [`printable`] for what must stay on one line (a version, a name): newlines and tabs are
/// shown as `�` too.
pub fn one_line(text: &str, max_chars: usize) -> String {
    shown(text, max_chars, false)
}

/// Whether a terminal would obey `c` rather than show it; tabs and newlines are shown as such
/// when `keep_lines`.
pub fn obeyed(c: char, keep_lines: bool) -> bool {
    (c.is_control() && !(keep_lines && (c == '\t' || c == '\n')))
        || ('\u{80}'..='\u{9f}').contains(&c)
        // Bidirectional overrides and isolates reorder what follows them on screen.
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// The shown form of `text`: obeyed characters replaced, at most `max_chars` kept.
fn shown(text: &str, max_chars: usize, keep_lines: bool) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)));
    for (n, c) in text.chars().enumerate() {
        if n == max_chars {
            out.push('…');
            break;
        }
        out.push(if obeyed(c, keep_lines) { '\u{fffd}' } else { c });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_shown_not_obeyed() {
        assert_eq!(
            printable("a\x1b]0;pwned\x07b\x1b[2J\r\n\tc\u{202e}d\u{9b}", 100),
            "a\u{fffd}]0;pwned\u{fffd}b\u{fffd}[2J\u{fffd}\n\tc\u{fffd}d\u{fffd}"
        );
    }

    #[test]
    fn one_line_text_keeps_no_line_breaks() {
        assert_eq!(one_line("1.0\n\tfake", 100), "1.0\u{fffd}\u{fffd}fake");
    }

    #[test]
    fn long_text_is_cut_with_an_ellipsis() {
        let long = "é".repeat(100_000);
        let shown = printable(&long, 10);
        assert_eq!(shown, format!("{}…", "é".repeat(10)));
        assert_eq!(printable("exactly ten", 11), "exactly ten");
        assert_eq!(printable("", 0), "");
        assert_eq!(printable("x", 0), "…");
    }
}
