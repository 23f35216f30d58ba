//! Choosing a session on the terminal: a list of sessions, one per line (title, age, turns,
//! state, model), the first selected; ↑↓ (or k/j) move, Enter chooses, Esc (or q, Ctrl+C)
//! leaves. The same columns print as a table where there is no terminal.

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use protocol::SessionInfo;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::board::describe::short_model;
use super::board::render::cut;
use super::board::terminal::Screen;
use crate::format;
use crate::style::one_line;

/// The columns of a session's line.
pub const HEADER: [&str; 6] = ["ID", "TITLE", "ACTIVE", "TURNS", "STATE", "MODEL"];

/// A session's line, column by column (see [`HEADER`]).
pub fn row(session: &SessionInfo, now_ms: u64) -> Vec<String> {
    let title = match &session.title {
        Some(title) if !title.trim().is_empty() => one_line(title).into_owned(),
        _ => "(untitled)".to_string(),
    };
    vec![
        session.id.to_string(),
        title,
        format::ago(session.last_activity_ms, now_ms),
        session.turns.to_string(),
        session.state.to_string(),
        session
            .model
            .as_deref()
            .map(short_model)
            .unwrap_or_default(),
    ]
}

/// Lets the user choose one of `sessions` (which must not be empty) under the line `heading`;
/// the index chosen, or `None` when they left. Blocks: call it off the async threads.
pub fn pick(sessions: &[SessionInfo], heading: &str) -> std::io::Result<Option<usize>> {
    let _screen = Screen::enter()?;
    let mut shown = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let lines = format::table(&HEADER, &rows(sessions));
    let lines: Vec<&str> = lines.lines().collect();
    let mut selected: usize = 0;
    loop {
        shown.draw(|frame| {
            let area = frame.area();
            let height = area.height.saturating_sub(2) as usize;
            let first = selected.saturating_sub(height.saturating_sub(1));
            let mut text = vec![
                Line::from(Span::styled(
                    cut(heading, area.width.into()),
                    Style::default().add_modifier(Modifier::BOLD),
                )),
                Line::from(Span::styled(
                    cut(&format!("  {}", lines[0]), area.width.into()),
                    Style::default().add_modifier(Modifier::DIM),
                )),
            ];
            for (i, line) in lines.iter().enumerate().skip(1 + first).take(height) {
                let chosen = i - 1 == selected;
                let (marker, style) = if chosen {
                    ("▶ ", Style::default().add_modifier(Modifier::REVERSED))
                } else {
                    ("  ", Style::default())
                };
                text.push(Line::from(Span::styled(
                    cut(&format!("{marker}{line}"), area.width.into()),
                    style,
                )));
            }
            frame.render_widget(Paragraph::new(text), area);
        })?;
        let Event::Key(key) = event::read()? else {
            continue;
        };
        if key.kind == KeyEventKind::Release {
            continue;
        }
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => selected = selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                selected = (selected + 1).min(sessions.len().saturating_sub(1))
            }
            KeyCode::Home => selected = 0,
            KeyCode::End => selected = sessions.len().saturating_sub(1),
            KeyCode::Enter => return Ok(Some(selected)),
            KeyCode::Esc | KeyCode::Char('q') => return Ok(None),
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                return Ok(None);
            }
            _ => {}
        }
    }
}

/// Every session's line.
pub fn rows(sessions: &[SessionInfo]) -> Vec<Vec<String>> {
    let now = format::now_ms();
    sessions.iter().map(|s| row(s, now)).collect()
}
