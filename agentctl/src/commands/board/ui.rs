//! The board's own state besides the sessions: the line being typed (a filter, a steer, a
//! delete to confirm), the last message, the scroll position, colours, and what a key does.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use protocol::Decision;
use ratatui::style::{Color, Modifier, Style};

use super::arrange::Key;

/// What the bottom line is asking for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Prompt {
    /// Nothing: keys act on the selected session.
    #[default]
    None,
    /// A filter being typed.
    Filter(String),
    /// A steering message for a session being typed.
    Steer(Key, String),
    /// A delete waiting for y or n.
    Delete(Key),
}

/// What a key asks the board to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing (the key only changed the prompt, or means nothing here).
    None,
    /// Leave the board.
    Quit,
    /// Move the selection.
    Move(isize),
    /// Attach to the selected session with the chat view.
    Attach,
    /// Answer the selected session's oldest request.
    Answer(Decision),
    /// Cancel the selected session's run.
    Cancel,
    /// Send a steering message.
    Steer(Key, String),
    /// Delete a session.
    Delete(Key),
    /// The filter changed.
    Filter(String),
}

/// The board's own state.
#[derive(Debug, Default)]
pub struct Ui {
    /// The bottom line's prompt.
    pub prompt: Prompt,
    /// A message for the bottom line (what the last key did), until the next key.
    pub message: Option<String>,
    /// The first row shown.
    pub offset: usize,
    /// Whether colours (and other styling) are on.
    pub color: bool,
}

impl Ui {
    /// A style with `modifier` and `color`, or none at all without colours.
    pub fn paint(&self, modifier: Modifier, color: Option<Color>) -> Style {
        if !self.color {
            return Style::default();
        }
        let style = Style::default().add_modifier(modifier);
        match color {
            Some(color) => style.fg(color),
            None => style,
        }
    }

    /// What `key` does, given the selected session.
    pub fn key(&mut self, key: KeyEvent, selected: Option<&Key>) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('c')) {
            return Action::Quit;
        }
        match std::mem::take(&mut self.prompt) {
            Prompt::None => {}
            Prompt::Filter(text) => return self.filter_key(key, text),
            Prompt::Steer(id, text) => return self.steer_key(key, id, text),
            Prompt::Delete(id) => {
                return match key.code {
                    KeyCode::Char('y') | KeyCode::Char('Y') => Action::Delete(id),
                    _ => {
                        self.message = Some("not deleted".to_string());
                        Action::None
                    }
                };
            }
        }
        self.message = None;
        // A letter with Ctrl or Alt is not the letter (Ctrl+D left a chat view just now).
        if key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            && matches!(key.code, KeyCode::Char(_))
        {
            return Action::None;
        }
        match key.code {
            KeyCode::Char('q') => Action::Quit,
            KeyCode::Up | KeyCode::Char('k') => Action::Move(-1),
            KeyCode::Down | KeyCode::Char('j') => Action::Move(1),
            KeyCode::PageUp => Action::Move(-10),
            KeyCode::PageDown => Action::Move(10),
            KeyCode::Home | KeyCode::Char('g') => Action::Move(isize::MIN / 2),
            KeyCode::End | KeyCode::Char('G') => Action::Move(isize::MAX / 2),
            KeyCode::Enter => Action::Attach,
            KeyCode::Char('y') => Action::Answer(Decision::Allow),
            KeyCode::Char('n') => Action::Answer(Decision::Deny),
            KeyCode::Char('a') => Action::Answer(Decision::AllowAlways),
            KeyCode::Char('c') => Action::Cancel,
            KeyCode::Char('/') => {
                self.prompt = Prompt::Filter(String::new());
                Action::Filter(String::new())
            }
            KeyCode::Char('s') => {
                if let Some(id) = selected {
                    self.prompt = Prompt::Steer(id.clone(), String::new());
                }
                Action::None
            }
            KeyCode::Char('d') => {
                if let Some(id) = selected {
                    self.prompt = Prompt::Delete(id.clone());
                }
                Action::None
            }
            _ => Action::None,
        }
    }

    /// A key while the filter is typed.
    fn filter_key(&mut self, key: KeyEvent, mut text: String) -> Action {
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc => return Action::Filter(String::new()),
            KeyCode::Enter => return Action::None,
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char(c) if plain && !c.is_control() && text.chars().count() < 200 => {
                text.push(c)
            }
            _ => {}
        }
        self.prompt = Prompt::Filter(text.clone());
        Action::Filter(text)
    }

    /// A key while a steering message is typed.
    fn steer_key(&mut self, key: KeyEvent, id: Key, mut text: String) -> Action {
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc => return Action::None,
            KeyCode::Enter if text.trim().is_empty() => return Action::None,
            KeyCode::Enter => return Action::Steer(id, text),
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char(c) if plain && !c.is_control() && text.len() < 64 * 1024 => text.push(c),
            _ => {}
        }
        self.prompt = Prompt::Steer(id, text);
        Action::None
    }
}
