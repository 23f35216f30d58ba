//! What an edit introduced: the diagnostics after it that were not there before, compared
//! without line numbers (an edit above a known error moves it), and the piece of text the model
//! reads after its edit's result.

use std::collections::HashMap;

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString};

use super::encoding::Encoding;

/// Errors shown at most; the rest are counted.
const MAX_SHOWN: usize = 10;
/// Warnings are shown only when an edit introduced at most this many.
const MAX_WARNINGS: usize = 3;
/// Characters of a message shown at most.
const MESSAGE_CHARS: usize = 200;

/// What identifies a diagnostic across an edit: everything but where it is, plus the text of its
/// line.
type Fingerprint = (i32, String, String, String, String);

/// A diagnostic the edit introduced, ready to show.
#[derive(Debug, Clone, PartialEq)]
struct Shown {
    /// 1-based line.
    line: u32,
    /// 1-based column, in characters.
    column: usize,
    /// `error` or `warning`.
    severity: &'static str,
    /// The first line of the message, capped.
    message: String,
    /// The diagnostic's code, if any.
    code: Option<String>,
}

/// The diagnostics' severity as a number (errors 1, a missing one counts as an error).
fn severity(d: &Diagnostic) -> i32 {
    match d.severity {
        Some(DiagnosticSeverity::WARNING) => 2,
        Some(DiagnosticSeverity::INFORMATION) => 3,
        Some(DiagnosticSeverity::HINT) => 4,
        _ => 1,
    }
}

/// The code as text.
fn code(d: &Diagnostic) -> Option<String> {
    d.code.as_ref().map(|c| match c {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.clone(),
    })
}

/// The text of line `line` (0-based) of `text`.
fn line_text(text: &str, line: u32) -> &str {
    text.lines().nth(line as usize).unwrap_or_default()
}

/// `d`'s fingerprint in `text`.
fn fingerprint(d: &Diagnostic, text: &str) -> Fingerprint {
    (
        severity(d),
        d.source.clone().unwrap_or_default(),
        code(d).unwrap_or_default(),
        d.message.clone(),
        line_text(text, d.range.start.line).trim().to_string(),
    )
}

/// The errors and warnings of `after` (in `after_text`) that `before` (in `before_text`) did not
/// have, as multisets; `before` is `None` when nothing was known before, and then every error
/// counts.
pub(crate) struct Introduced {
    /// The new errors, in file order.
    errors: Vec<Shown>,
    /// The new warnings, in file order.
    warnings: Vec<Shown>,
    /// Whether there was no baseline to compare with.
    no_baseline: bool,
}

impl Introduced {
    /// Compares `after` with `before`.
    pub(crate) fn between(
        before: Option<(&[Diagnostic], &str)>,
        after: &[Diagnostic],
        after_text: &str,
        encoding: Encoding,
    ) -> Introduced {
        let mut known: HashMap<Fingerprint, usize> = HashMap::new();
        if let Some((items, text)) = before {
            for d in items {
                *known.entry(fingerprint(d, text)).or_default() += 1;
            }
        }
        let mut sorted: Vec<&Diagnostic> = after.iter().collect();
        sorted.sort_by_key(|d| (d.range.start.line, d.range.start.character));
        let (mut errors, mut warnings) = (Vec::new(), Vec::new());
        for d in sorted {
            if let Some(left) = known.get_mut(&fingerprint(d, after_text))
                && *left > 0
            {
                *left -= 1;
                continue;
            }
            let line = line_text(after_text, d.range.start.line);
            let shown = Shown {
                line: d.range.start.line.saturating_add(1),
                column: encoding.to_chars(line, d.range.start.character) + 1,
                severity: if severity(d) == 1 { "error" } else { "warning" },
                message: d
                    .message
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take(MESSAGE_CHARS)
                    .collect(),
                code: code(d),
            };
            match severity(d) {
                1 => errors.push(shown),
                2 if before.is_some() => warnings.push(shown),
                _ => {}
            }
        }
        Introduced {
            errors,
            warnings,
            no_baseline: before.is_none(),
        }
    }

    /// The piece appended to an edit's result, `None` when the edit introduced nothing:
    /// `diagnostics (pyright): 1 new error` and a line per diagnostic.
    pub(crate) fn describe(&self, server: &str, shown_path: &str) -> Option<String> {
        let warnings: &[Shown] = if self.warnings.len() <= MAX_WARNINGS {
            &self.warnings
        } else {
            &[]
        };
        if self.errors.is_empty() && warnings.is_empty() {
            return None;
        }
        let count = |n: usize, what: &str| {
            let new = if self.no_baseline { "" } else { "new " };
            format!("{n} {new}{what}{}", if n == 1 { "" } else { "s" })
        };
        let mut counts = Vec::new();
        if !self.errors.is_empty() {
            counts.push(count(self.errors.len(), "error"));
        }
        if !warnings.is_empty() {
            counts.push(count(warnings.len(), "warning"));
        }
        let mut text = format!("diagnostics ({server}): {}", counts.join(", "));
        if self.no_baseline {
            text.push_str(" (all errors in the file)");
        }
        let all: Vec<&Shown> = self.errors.iter().chain(warnings).collect();
        for d in all.iter().take(MAX_SHOWN) {
            let code = d
                .code
                .as_ref()
                .map(|c| format!(" [{c}]"))
                .unwrap_or_default();
            text.push_str(&format!(
                "\n  {shown_path}:{}:{} {}: {}{code}",
                d.line, d.column, d.severity, d.message
            ));
        }
        if all.len() > MAX_SHOWN {
            text.push_str(&format!("\n  … and {} more", all.len() - MAX_SHOWN));
        }
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position, Range};

    fn diag(line: u32, character: u32, severity: DiagnosticSeverity, message: &str) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, character), Position::new(line, 99)),
            severity: Some(severity),
            code: Some(NumberOrString::String("reportAssignmentType".into())),
            source: Some("Pyright".into()),
            message: message.into(),
            ..Diagnostic::default()
        }
    }

    #[test]
    fn only_what_the_edit_introduced_is_shown_with_its_line() {
        let before_text = "import os\nx: int = \"s\"\n";
        let before = [diag(1, 9, DiagnosticSeverity::ERROR, "old")];
        // A line was added above: the old error moved, a new one came.
        let after_text = "import os\n\nx: int = \"s\"\ny: int = \"t\"\n";
        let after = [
            diag(2, 9, DiagnosticSeverity::ERROR, "old"),
            diag(3, 9, DiagnosticSeverity::ERROR, "new\n  detail"),
        ];
        let found = Introduced::between(
            Some((&before, before_text)),
            &after,
            after_text,
            Encoding::Utf16,
        );
        let text = found.describe("pyright", "m.py").unwrap();
        assert_eq!(
            text,
            "diagnostics (pyright): 1 new error\n  m.py:4:10 error: new [reportAssignmentType]"
        );
        let fixed = Introduced::between(Some((&after, after_text)), &[], "", Encoding::Utf16);
        assert!(fixed.describe("pyright", "m.py").is_none());
    }

    #[test]
    fn many_errors_are_capped_and_many_warnings_left_out() {
        let text = "a\n".repeat(20);
        let mut after: Vec<Diagnostic> = (0..12)
            .map(|i| diag(i, 0, DiagnosticSeverity::ERROR, &format!("e{i}")))
            .collect();
        after.extend((12..16).map(|i| diag(i, 0, DiagnosticSeverity::WARNING, "w")));
        let found = Introduced::between(Some((&[], "")), &after, &text, Encoding::Utf8);
        let shown = found.describe("s", "f").unwrap();
        assert!(
            shown.starts_with("diagnostics (s): 12 new errors\n"),
            "{shown}"
        );
        assert!(shown.ends_with("\n  … and 2 more"), "{shown}");
        assert!(!shown.contains("warning"), "{shown}");
    }
}
