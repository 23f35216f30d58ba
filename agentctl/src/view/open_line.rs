//! The unfinished line of a terminal view: what ends a line is taken out of it as it comes,
//! and so is a line that grows past [`OPEN_LINE_BYTES`] without ending (it goes up as a line:
//! it is shown anyway), so that text which never ends a line (a hostile far end's) takes no
//! more memory as it grows.

/// The most bytes of an unfinished line a view keeps.
pub const OPEN_LINE_BYTES: usize = 64 * 1024;

/// Takes out of `open` its whole lines (without their newline) and, of what is left, pieces
/// of [`OPEN_LINE_BYTES`] while it is longer than that; `open` keeps the rest.
pub fn take_lines(open: &mut String) -> Vec<String> {
    let mut lines = Vec::new();
    let mut from = 0;
    loop {
        let rest = &open[from..];
        let (line, next) = match rest.find('\n') {
            Some(end) => (&rest[..end], from + end + 1),
            None if rest.len() > OPEN_LINE_BYTES => {
                let cut = char_floor(rest, OPEN_LINE_BYTES);
                (&rest[..cut], from + cut)
            }
            None => break,
        };
        lines.push(line.to_string());
        from = next;
    }
    open.drain(..from);
    if open.capacity() > 2 * OPEN_LINE_BYTES {
        open.shrink_to(OPEN_LINE_BYTES);
    }
    lines
}

/// The largest index at most `at` where `text` can be cut.
fn char_floor(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_lines_are_taken_and_the_rest_stays() {
        let mut open = "one\ntwo\n\nthr".to_string();
        assert_eq!(take_lines(&mut open), ["one", "two", ""]);
        assert_eq!(open, "thr");
        open.push_str("ee");
        assert!(take_lines(&mut open).is_empty());
        assert_eq!(open, "three");
    }

    #[test]
    fn a_line_that_never_ends_is_kept_to_the_cap() {
        let mut open = String::new();
        let mut shown = 0;
        // 4 MiB of `é` in pieces of 65 KB, never a newline: a cut never splits a character.
        for _ in 0..64 {
            open.push_str(&"é".repeat(32 * 1024 + 500));
            for line in take_lines(&mut open) {
                assert!(line.len() <= OPEN_LINE_BYTES);
                assert!(line.chars().all(|c| c == 'é'));
                shown += line.len();
            }
            assert!(open.len() <= OPEN_LINE_BYTES, "{} bytes kept", open.len());
            assert!(open.capacity() <= 2 * OPEN_LINE_BYTES + 65_536);
        }
        assert_eq!(shown + open.len(), 64 * 2 * (32 * 1024 + 500));
    }
}
