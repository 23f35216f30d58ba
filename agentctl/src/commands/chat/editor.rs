//! The text being typed in chat: a buffer with a cursor, the usual editing keys (Emacs style,
//! as shells have them), the messages sent before (Up and Down), and the completion menu Tab
//! opens. It knows nothing of terminals: keys come in, rows go out.

use crate::screen::wrap::wrap;

/// One way to complete what is typed: the text that replaces the word, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Candidate {
    /// The replacement.
    pub(super) value: String,
    /// A short description for the menu.
    pub(super) about: Option<String>,
    /// Whether a space follows once it is chosen (not after a directory).
    pub(super) space_after: bool,
}

/// The completions offered for the word at the cursor, which starts at byte `from`.
#[derive(Debug, Clone)]
pub(super) struct Completion {
    /// Where the word being completed starts.
    pub(super) from: usize,
    /// The choices, in order.
    pub(super) candidates: Vec<Candidate>,
}

/// The menu of completions on screen, and which one is chosen.
#[derive(Debug)]
struct Menu {
    completion: Completion,
    selected: usize,
}

/// The input line's text, cursor, history and menu.
#[derive(Debug, Default)]
pub(super) struct Editor {
    buffer: String,
    /// A byte index into `buffer`, on a character boundary.
    cursor: usize,
    history: Vec<String>,
    /// Where Up and Down are in the history; `None` while editing a new message.
    recalled: Option<usize>,
    /// The new message being typed when Up was first pressed.
    draft: String,
    menu: Option<Menu>,
}

/// How many menu entries are shown at once.
const MENU_ROWS: usize = 8;

impl Editor {
    /// The text typed so far.
    pub(super) fn text(&self) -> &str {
        &self.buffer
    }

    /// Whether a completion menu is open.
    pub(super) fn menu_open(&self) -> bool {
        self.menu.is_some()
    }

    /// Replaces the text (the cursor goes to its end).
    pub(super) fn set(&mut self, text: &str) {
        self.buffer = text.to_string();
        self.cursor = self.buffer.len();
        self.menu = None;
    }

    /// Takes the text to send: it is remembered for Up, and the line is empty again.
    pub(super) fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.buffer);
        self.cursor = 0;
        self.recalled = None;
        self.menu = None;
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
            if self.history.len() > 500 {
                self.history.remove(0);
            }
        }
        text
    }

    /// Types `text` at the cursor (a key, or a paste).
    pub(super) fn insert(&mut self, text: &str) {
        self.menu = None;
        self.buffer.insert_str(self.cursor, text);
        self.cursor += text.len();
    }

    fn before(&self) -> Option<usize> {
        self.buffer[..self.cursor]
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
    }

    fn after(&self) -> Option<usize> {
        self.buffer[self.cursor..]
            .chars()
            .next()
            .map(|c| self.cursor + c.len_utf8())
    }

    /// Backspace.
    pub(super) fn delete_back(&mut self) {
        self.menu = None;
        if let Some(at) = self.before() {
            self.buffer.drain(at..self.cursor);
            self.cursor = at;
        }
    }

    /// Delete (and Ctrl+D on a line with text).
    pub(super) fn delete_forward(&mut self) {
        self.menu = None;
        if let Some(end) = self.after() {
            self.buffer.drain(self.cursor..end);
        }
    }

    /// Left.
    pub(super) fn left(&mut self) {
        if let Some(at) = self.before() {
            self.cursor = at;
        }
    }

    /// Right.
    pub(super) fn right(&mut self) {
        if let Some(at) = self.after() {
            self.cursor = at;
        }
    }

    /// Home, Ctrl+A: the start of the line the cursor is on.
    pub(super) fn home(&mut self) {
        self.cursor = self.buffer[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
    }

    /// End, Ctrl+E: the end of the line the cursor is on.
    pub(super) fn end(&mut self) {
        self.cursor = self.buffer[self.cursor..]
            .find('\n')
            .map_or(self.buffer.len(), |i| self.cursor + i);
    }

    /// Where the word before the cursor starts.
    fn word_start(&self) -> usize {
        let head = &self.buffer[..self.cursor];
        let trimmed = head.trim_end();
        trimmed.rfind(char::is_whitespace).map_or(0, |i| {
            i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
        })
    }

    /// Ctrl+Left, Alt+B.
    pub(super) fn word_left(&mut self) {
        self.cursor = self.word_start();
    }

    /// Ctrl+Right, Alt+F.
    pub(super) fn word_right(&mut self) {
        let tail = &self.buffer[self.cursor..];
        let skipped = tail.len() - tail.trim_start().len();
        let word = tail[skipped..]
            .find(char::is_whitespace)
            .unwrap_or(tail.len() - skipped);
        self.cursor += skipped + word;
    }

    /// Ctrl+W, Alt+Backspace.
    pub(super) fn delete_word_back(&mut self) {
        self.menu = None;
        let start = self.word_start();
        self.buffer.drain(start..self.cursor);
        self.cursor = start;
    }

    /// Ctrl+U.
    pub(super) fn delete_to_start(&mut self) {
        self.menu = None;
        self.buffer.drain(..self.cursor);
        self.cursor = 0;
    }

    /// Ctrl+K.
    pub(super) fn delete_to_end(&mut self) {
        self.menu = None;
        self.buffer.truncate(self.cursor);
    }

    /// Up: the message sent before the one shown (the menu's previous entry when it is open).
    pub(super) fn up(&mut self) {
        if let Some(menu) = &mut self.menu {
            let count = menu.completion.candidates.len();
            menu.selected = (menu.selected + count - 1) % count;
            return;
        }
        let at = match self.recalled {
            Some(0) => return,
            Some(at) => at - 1,
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.buffer.clone();
                self.history.len() - 1
            }
        };
        self.recalled = Some(at);
        self.buffer = self.history[at].clone();
        self.cursor = self.buffer.len();
    }

    /// Down: back towards the message being typed (the menu's next entry when it is open).
    pub(super) fn down(&mut self) {
        if let Some(menu) = &mut self.menu {
            menu.selected = (menu.selected + 1) % menu.completion.candidates.len();
            return;
        }
        let Some(at) = self.recalled else {
            return;
        };
        if at + 1 < self.history.len() {
            self.recalled = Some(at + 1);
            self.buffer = self.history[at + 1].clone();
        } else {
            self.recalled = None;
            self.buffer = std::mem::take(&mut self.draft);
        }
        self.cursor = self.buffer.len();
    }

    /// What is typed up to the cursor (for the completer).
    pub(super) fn head(&self) -> &str {
        &self.buffer[..self.cursor]
    }

    /// Tab with `completion` found for the word at the cursor: one choice is taken at once;
    /// several complete as far as they agree, then open the menu; Tab in the menu moves on.
    pub(super) fn complete(&mut self, completion: Option<Completion>) {
        if let Some(menu) = &mut self.menu {
            menu.selected = (menu.selected + 1) % menu.completion.candidates.len();
            return;
        }
        let Some(completion) = completion.filter(|c| !c.candidates.is_empty()) else {
            return;
        };
        if let [only] = completion.candidates.as_slice() {
            let only = only.clone();
            self.replace_word(completion.from, &only);
            return;
        }
        let common = common_prefix(completion.candidates.iter().map(|c| c.value.as_str()));
        let word = &self.buffer[completion.from..self.cursor];
        if common.len() > word.len() && common.starts_with(word) {
            self.buffer
                .replace_range(completion.from..self.cursor, &common);
            self.cursor = completion.from + common.len();
            return;
        }
        self.menu = Some(Menu {
            completion,
            selected: 0,
        });
    }

    /// Enter with the menu open: its choice replaces the word.
    pub(super) fn accept(&mut self) {
        if let Some(menu) = self.menu.take() {
            let chosen = menu.completion.candidates[menu.selected].clone();
            self.replace_word(menu.completion.from, &chosen);
        }
    }

    /// Esc with the menu open.
    pub(super) fn close_menu(&mut self) {
        self.menu = None;
    }

    fn replace_word(&mut self, from: usize, candidate: &Candidate) {
        let mut value = candidate.value.clone();
        if candidate.space_after && !self.buffer[self.cursor..].starts_with(' ') {
            value.push(' ');
        }
        self.buffer.replace_range(from..self.cursor, &value);
        self.cursor = from + value.len();
        self.menu = None;
    }

    /// The input's rows for a terminal `cols` wide: `› ` before the first line, `… ` before
    /// the next ones, the cursor shown in reverse video; then the menu, if open.
    pub(super) fn rows(&self, cols: usize) -> Vec<String> {
        let mut shown = String::new();
        let (before, after) = self.buffer.split_at(self.cursor);
        shown.push_str(&visible(before));
        let mut rest = after.chars();
        match rest.next() {
            Some('\n') | None => shown.push_str("\x1b[7m \x1b[0m"),
            Some(c) => shown.push_str(&format!("\x1b[7m{}\x1b[0m", visible(&c.to_string()))),
        }
        if after.starts_with('\n') {
            shown.push('\n');
        }
        shown.push_str(&visible(rest.as_str()));
        let mut rows = Vec::new();
        for (i, line) in shown.split('\n').enumerate() {
            let mark = if i == 0 { "› " } else { "… " };
            rows.extend(wrap(&format!("{mark}{line}"), cols));
        }
        if let Some(menu) = &self.menu {
            let count = menu.completion.candidates.len();
            let first = menu.selected.saturating_sub(MENU_ROWS - 1);
            for (i, candidate) in menu
                .completion
                .candidates
                .iter()
                .enumerate()
                .skip(first)
                .take(MENU_ROWS)
            {
                let about = candidate
                    .about
                    .as_deref()
                    .map(|a| format!("  \x1b[2m{}\x1b[0m", visible(a)))
                    .unwrap_or_default();
                // Names come from the far end's files and lists: shown, never obeyed.
                let name = visible(&candidate.value);
                let name = if i == menu.selected {
                    format!("\x1b[7m{name}\x1b[0m")
                } else {
                    name
                };
                rows.push(format!("  {name}{about}"));
            }
            if count > MENU_ROWS {
                rows.push(format!(
                    "  \x1b[2m({} of {count})\x1b[0m",
                    menu.selected + 1
                ));
            }
        }
        rows
    }
}

/// Typed text as it is drawn: tabs as spaces, control characters as `�`.
fn visible(text: &str) -> String {
    crate::style::printable(&text.replace('\t', "    ")).into_owned()
}

/// The longest start all of `values` share, on a character boundary.
fn common_prefix<'a>(mut values: impl Iterator<Item = &'a str>) -> String {
    let Some(first) = values.next() else {
        return String::new();
    };
    let mut common = first.to_string();
    for value in values {
        let agreed = common
            .char_indices()
            .zip(value.chars())
            .find(|((_, a), b)| a != b)
            .map_or(common.len().min(value.len()), |((i, _), _)| i);
        common.truncate(agreed);
    }
    common
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates(values: &[&str]) -> Option<Completion> {
        Some(Completion {
            from: 0,
            candidates: values
                .iter()
                .map(|v| Candidate {
                    value: v.to_string(),
                    about: None,
                    space_after: true,
                })
                .collect(),
        })
    }

    #[test]
    fn a_unique_completion_completes_and_several_open_the_menu() {
        let mut editor = Editor::default();
        editor.insert("/he");
        editor.complete(candidates(&["/help"]));
        assert_eq!(editor.text(), "/help ");
        assert!(!editor.menu_open());

        let mut editor = Editor::default();
        editor.insert("/c");
        editor.complete(candidates(&["/cancel", "/compact", "/clear"]));
        assert!(editor.menu_open());
        editor.complete(None);
        editor.accept();
        assert_eq!(editor.text(), "/compact ");

        let mut editor = Editor::default();
        editor.insert("/de");
        editor.complete(candidates(&["/deny", "/detach"]));
        assert_eq!(editor.text(), "/de");
        let mut editor = Editor::default();
        editor.insert("/s");
        editor.complete(candidates(&["/steer", "/sessions"]));
        assert!(editor.menu_open());
        let mut editor = Editor::default();
        editor.insert("/a");
        editor.complete(candidates(&["/allow", "/always"]));
        assert_eq!(editor.text(), "/al", "completed as far as they agree");
    }

    #[test]
    fn editing_keys_move_and_delete_by_character_and_word() {
        let mut editor = Editor::default();
        editor.insert("hello wörld");
        editor.left();
        editor.delete_back();
        assert_eq!(editor.text(), "hello wörd");
        editor.word_left();
        editor.insert("big ");
        assert_eq!(editor.text(), "hello big wörd");
        editor.end();
        editor.delete_word_back();
        assert_eq!(editor.text(), "hello big ");
        editor.home();
        editor.delete_to_end();
        assert_eq!(editor.text(), "");
    }

    #[test]
    fn up_and_down_walk_the_history_and_come_back_to_the_draft() {
        let mut editor = Editor::default();
        editor.insert("first");
        editor.take();
        editor.insert("second");
        editor.take();
        editor.insert("draft");
        editor.up();
        assert_eq!(editor.text(), "second");
        editor.up();
        editor.up();
        assert_eq!(editor.text(), "first");
        editor.down();
        editor.down();
        assert_eq!(editor.text(), "draft");
    }

    #[test]
    fn rows_show_the_cursor_and_wrap_at_the_width() {
        let mut editor = Editor::default();
        editor.insert("abcdefgh\nij");
        let rows = editor.rows(6);
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert!(rows.iter().all(|r| crate::screen::wrap::width(r) <= 6));
        assert!(rows[2].starts_with("… ij"), "{rows:?}");
    }
}
