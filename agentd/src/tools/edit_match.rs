//! Where `edit` replaces its text: exactly, or, when `old_string` is not found exactly, once
//! more ignoring trailing whitespace, then ignoring a uniform difference of indentation (a
//! model that copied a block with two spaces too few). A loose match applies only when exactly
//! one place matches; the file's own indentation is kept; the result says how it matched.
//! Line numbers copied from `read`'s output into both strings are taken off first.

use super::near_text;
use super::plural;

/// Why an edit cannot be made, with what the model needs to get its next call right.
#[derive(Debug)]
pub(crate) struct Refused {
    /// What is wrong.
    pub(crate) message: String,
    /// The part of the file to show with it.
    pub(crate) region: Option<String>,
}

impl Refused {
    fn plain(message: impl Into<String>) -> Refused {
        Refused {
            message: message.into(),
            region: None,
        }
    }
}

/// The text with the replacement made, and how it matched; or why it cannot be made.
pub(crate) fn replace(
    text: &str,
    old: &str,
    new: &str,
    all: bool,
) -> Result<(String, Option<&'static str>), Refused> {
    if old.is_empty() {
        return Err(Refused::plain(
            "old_string is empty; give the exact text to replace",
        ));
    }
    if old == new {
        return Err(Refused {
            message: "old_string and new_string are the same, so nothing would change; \
                      new_string must be the text that replaces old_string"
                .to_string(),
            region: Some(
                near_text::region_of(text, old)
                    .unwrap_or_else(|| near_text::closest_region(text, old)),
            ),
        });
    }
    if !text.contains(old)
        && let (Some(old), Some(new)) = (without_line_numbers(old), without_line_numbers(new))
        && text.contains(&old)
    {
        return replace(text, &old, &new, all).map(|(after, _)| {
            (
                after,
                Some("matched once the line numbers copied from read were taken off"),
            )
        });
    }
    match text.matches(old).count() {
        0 => loose(text, old, new).map_err(|message| Refused {
            region: Some(near_text::closest_region(text, old)),
            message,
        }),
        1 => Ok((text.replacen(old, new, 1), None)),
        _ if all => Ok((text.replace(old, new), None)),
        n => Err(Refused::plain(format!(
            "old_string occurs {} in the file; include more surrounding lines to make it unique, or set replace_all",
            plural(n, "time")
        ))),
    }
}

/// `text` with a `read`-style line number (`   12\t`) taken off every line, when every
/// non-empty line has one; `None` otherwise.
fn without_line_numbers(text: &str) -> Option<String> {
    let mut out = Vec::new();
    for line in text.split('\n') {
        if line.is_empty() {
            out.push("");
            continue;
        }
        let rest = line.trim_start_matches(' ');
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let rest = rest.get(digits..)?.strip_prefix('\t')?;
        if digits == 0 {
            return None;
        }
        out.push(rest);
    }
    Some(out.join("\n"))
}

const NOT_FOUND: &str = "old_string was not found in the file";

/// The two loose readings, in order: trailing whitespace, then indentation.
fn loose(text: &str, old: &str, new: &str) -> Result<(String, Option<&'static str>), String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let wanted: Vec<&str> = old.trim_end_matches('\n').split('\n').collect();
    let trailing = |a: &str, b: &str| a.trim_end() == b.trim_end();
    let places = windows(&lines, &wanted, |line, want| trailing(line, want));
    match places.as_slice() {
        [at] => {
            return Ok((
                splice(&lines, *at, wanted.len(), new, None),
                Some("matched ignoring trailing whitespace"),
            ));
        }
        [] => {}
        many => return Err(ambiguous(many.len())),
    }
    let want_indent = common_indent(&wanted);
    let dedented: Vec<&str> = wanted
        .iter()
        .map(|l| strip_indent(l, want_indent))
        .collect();
    let places: Vec<usize> = (0..lines.len().saturating_sub(wanted.len() - 1))
        .filter(|&at| {
            let window = &lines[at..at + wanted.len()];
            let indent = common_indent(window);
            window
                .iter()
                .zip(&dedented)
                .all(|(line, want)| trailing(strip_indent(line, indent), want))
        })
        .collect();
    match places.as_slice() {
        [at] => {
            let indent = common_indent(&lines[*at..*at + wanted.len()]);
            let file_indent = lines[*at].get(..indent).unwrap_or_default().to_string();
            Ok((
                splice(
                    &lines,
                    *at,
                    wanted.len(),
                    new,
                    Some((want_indent, &file_indent)),
                ),
                Some(
                    "matched ignoring a uniform difference of indentation; the file's indentation was kept",
                ),
            ))
        }
        [] => Err(NOT_FOUND.to_string()),
        many => Err(ambiguous(many.len())),
    }
}

fn ambiguous(n: usize) -> String {
    format!(
        "old_string was not found exactly, and loosely it matches {}; copy the text exactly, with more surrounding lines",
        plural(n, "place")
    )
}

/// Where `wanted` (lines) matches `lines` line by line.
fn windows(lines: &[&str], wanted: &[&str], same: impl Fn(&str, &str) -> bool) -> Vec<usize> {
    if wanted.len() > lines.len() {
        return Vec::new();
    }
    (0..=lines.len() - wanted.len())
        .filter(|&at| {
            lines[at..at + wanted.len()]
                .iter()
                .zip(wanted)
                .all(|(l, w)| same(l, w))
        })
        .collect()
}

/// The smallest indentation (leading spaces or tabs, in bytes) of the non-blank lines.
fn common_indent(lines: &[&str]) -> usize {
    lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0)
}

fn strip_indent(line: &str, indent: usize) -> &str {
    if line.trim().is_empty() {
        return "";
    }
    line.get(indent..).unwrap_or(line)
}

/// `lines` with `count` lines from `at` replaced by `new`, its indentation moved from
/// `reindent.0` bytes to the file's `reindent.1` when given. The replaced lines' last newline
/// stays.
fn splice(
    lines: &[&str],
    at: usize,
    count: usize,
    new: &str,
    reindent: Option<(usize, &str)>,
) -> String {
    let mut out: String = lines[..at].concat();
    let replaced: String = lines[at..at + count].concat();
    let new = match reindent {
        Some((strip, indent)) => new
            .split('\n')
            .map(|line| {
                if line.trim().is_empty() {
                    String::new()
                } else {
                    format!(
                        "{indent}{}",
                        strip_indent(line, strip.min(line.len() - line.trim_start().len()))
                    )
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        None => new.to_string(),
    };
    out.push_str(new.trim_end_matches('\n'));
    if replaced.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&lines[at + count..].concat());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exact_unique_match_is_replaced_and_a_repeated_one_says_how_often() {
        assert_eq!(
            replace("a b c", "b", "x", false).unwrap(),
            ("a x c".into(), None)
        );
        let err = replace("a b b", "b", "x", false).unwrap_err();
        assert!(err.message.contains("occurs 2 times"), "{err:?}");
        assert_eq!(replace("a b b", "b", "x", true).unwrap().0, "a x x");
        assert!(
            replace("abc", "z", "x", false)
                .unwrap_err()
                .message
                .contains("not found")
        );
    }

    #[test]
    fn trailing_whitespace_is_forgiven_once() {
        let text = "def f():  \n    return 1\t\nx = 2\n";
        let (after, how) = replace(
            text,
            "def f():\n    return 1\n",
            "def f():\n    return 2\n",
            false,
        )
        .unwrap();
        assert_eq!(after, "def f():\n    return 2\nx = 2\n");
        assert_eq!(how, Some("matched ignoring trailing whitespace"));
    }

    #[test]
    fn a_uniform_indentation_difference_is_forgiven_and_the_files_indentation_kept() {
        let text = "class A:\n    def f(self):\n        return 1\n";
        let (after, how) = replace(
            text,
            "def f(self):\n    return 1",
            "def f(self):\n    return 2",
            false,
        )
        .unwrap();
        assert_eq!(after, "class A:\n    def f(self):\n        return 2\n");
        assert!(how.unwrap().contains("indentation"));
    }

    #[test]
    fn a_loose_match_in_two_places_is_refused() {
        let text = "if a:\n    x = 1\nif b:\n        x = 1\n";
        let err = replace(text, "x = 1 ", "x = 2", false).unwrap_err();
        assert!(err.message.contains("2 places"), "{err:?}");
        assert!(
            replace(text, "    y = 1", "y = 2", false)
                .unwrap_err()
                .message
                .contains("not found")
        );
    }

    #[test]
    fn line_numbers_copied_from_read_are_taken_off() {
        let text = "def f():\n    return 1\n";
        let (after, how) =
            replace(text, "     2\t    return 1", "     2\t    return 2", false).unwrap();
        assert_eq!(after, "def f():\n    return 2\n");
        assert!(how.unwrap().contains("line numbers"));
    }

    #[test]
    fn identical_strings_show_where_the_text_is() {
        let err = replace("a\nb\nc\n", "b", "b", false).unwrap_err();
        assert!(err.message.contains("the same"), "{err:?}");
        assert!(err.region.unwrap().contains("     2\tb"));
        let err = replace("a\nb\nc\n", "b2", "b3", false).unwrap_err();
        assert!(err.region.unwrap().contains("     2\tb"));
    }
}
