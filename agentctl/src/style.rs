//! Colors: ANSI styling, and whether to use it (`--color`, `NO_COLOR`, a terminal).

use std::io::IsTerminal;

/// ANSI styling, off when `NO_COLOR` is set or stdout is not a terminal.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

/// What `--color` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colors on a terminal, unless `NO_COLOR` is set.
    Auto,
    /// Colors everywhere.
    Always,
    /// No colors.
    Never,
}

static COLOR: std::sync::OnceLock<ColorChoice> = std::sync::OnceLock::new();

/// Sets what `--color` asked for, once, before anything is shown.
pub fn set_color_choice(choice: ColorChoice) {
    let _ = COLOR.set(choice);
}

impl Style {
    /// Whether colors (and markdown rendering) are on.
    pub fn colored(&self) -> bool {
        self.color
    }

    /// Decides from `--color`, `NO_COLOR` and whether stdout is a terminal.
    pub fn detect() -> Style {
        let color = match COLOR.get().copied().unwrap_or(ColorChoice::Auto) {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
            }
        };
        Style { color }
    }

    /// No colors.
    pub fn plain() -> Style {
        Style { color: false }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// Dim text.
    pub fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }

    /// Green text.
    pub fn green(&self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Red text.
    pub fn red(&self, text: &str) -> String {
        self.paint("31", text)
    }

    /// Yellow text.
    pub fn yellow(&self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Cyan text.
    pub fn cyan(&self, text: &str) -> String {
        self.paint("36", text)
    }

    /// Bold text.
    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }
}

/// `text` with the control characters a terminal would obey (escape sequences, carriage
/// returns, backspaces) shown as `�`, so that a file or a model cannot hide or forge what the
/// user reads. Tabs and newlines stay.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    shown(text, true)
}

/// [`printable`] for what must stay on one line (a path, a name, a table cell): newlines and
/// tabs are shown as `�` too.
pub fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    shown(text, false)
}

fn shown(text: &str, keep_lines: bool) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| agentctl::client::far_text::obeyed(c, keep_lines);
    if text.chars().any(unsafe_char) {
        std::borrow::Cow::Owned(
            text.chars()
                .map(|c| if unsafe_char(c) { '\u{fffd}' } else { c })
                .collect(),
        )
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_shown_not_obeyed() {
        assert_eq!(
            printable("a\x1b[8mhidden\r\tb\n"),
            "a\u{fffd}[8mhidden\u{fffd}\tb\n"
        );
        assert!(matches!(printable("plain"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            one_line("a\nb\tc\x1b]0;x\x07"),
            "a\u{fffd}b\u{fffd}c\u{fffd}]0;x\u{fffd}"
        );
    }
}
