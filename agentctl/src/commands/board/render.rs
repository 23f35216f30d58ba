//! Drawing the board: a title line, the groups and their sessions (one line each, cut to the
//! width: columns drop before anything wraps), and a line for prompts and help.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::arrange::Row;
use super::describe;
use super::model::Board;
use super::ui::{Prompt, Ui};
use protocol::Group;

const HELP: &str = "↑↓/jk select · Enter attach · y/n/a answer · c cancel · s steer · d delete · / filter · q quit";

/// Draws the whole board.
pub fn draw(frame: &mut Frame, board: &Board, ui: &mut Ui, now_ms: u64) {
    let [top, body, bottom] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(title(board, ui)), top);
    frame.render_widget(Paragraph::new(body_lines(board, ui, body, now_ms)), body);
    frame.render_widget(Paragraph::new(footer(board, ui, bottom.width)), bottom);
}

/// The top line: the counts of each group (and of hosts), or that the board loads.
fn title(board: &Board, ui: &Ui) -> Line<'static> {
    let text = if board.ready() {
        let mut text = format!(
            "agentd board · {} need you · {} working · {} done · {} failed",
            board.count(Group::NeedsYou),
            board.count(Group::Working),
            board.count(Group::Done),
            board.count(Group::Failed)
        );
        if board.several_hosts() {
            text.push_str(&format!(" · {} hosts", board.hosts().len()));
        }
        if !board.filter.is_empty() {
            text.push_str(&format!(" · filter: {}", board.filter));
        }
        text
    } else {
        "agentd board · loading…".to_string()
    };
    Line::from(Span::styled(text, ui.paint(Modifier::BOLD, None)))
}

/// The lines between the title and the bottom line, scrolled to keep the selection in view.
fn body_lines(board: &Board, ui: &mut Ui, area: Rect, now_ms: u64) -> Vec<Line<'static>> {
    let height = area.height as usize;
    let rows = board.rows();
    if rows.is_empty() {
        let text = if board.ready() && board.filter.is_empty() {
            "no sessions; `agentctl run \"...\"` starts one"
        } else if board.ready() {
            "no session matches the filter"
        } else {
            ""
        };
        return vec![Line::from(text.to_string())];
    }
    // The selected row stays in view.
    if let Some(at) = board.selected_row() {
        if at < ui.offset {
            ui.offset = at.saturating_sub(1);
        } else if at >= ui.offset + height {
            ui.offset = at + 1 - height;
        }
    }
    ui.offset = ui.offset.min(rows.len().saturating_sub(height));
    let width = area.width as usize;
    let host_width = host_column(board);
    rows.iter()
        .skip(ui.offset)
        .take(height)
        .map(|row| match row {
            Row::Unreachable(host) => {
                let Some(state) = board.hosts().get(*host) else {
                    return Line::from("");
                };
                let reason = state.unreachable.as_deref().unwrap_or_default();
                let text = match state.ready {
                    true => format!("{}: link down, reconnecting — {reason}", state.label),
                    false => format!("{}: unreachable, retrying — {reason}", state.label),
                };
                Line::from(Span::styled(
                    cut(&text, width),
                    ui.paint(Modifier::empty(), Some(Color::Red)),
                ))
            }
            Row::Heading(group, n) => {
                let text = format!("{} ({n})", describe::heading(*group));
                Line::from(Span::styled(
                    cut(&text, width),
                    ui.paint(Modifier::BOLD, Some(color_of(*group))),
                ))
            }
            Row::Session(key, depth) => {
                let selected = board.selected() == Some(key);
                let host = (host_width > 0)
                    .then(|| pad(&cut(board.label(key.host), host_width), host_width));
                match board.summary(key) {
                    Some(summary) => {
                        session_line(summary, host, *depth, selected, width, ui, now_ms)
                    }
                    None => Line::from(""),
                }
            }
        })
        .collect()
}

/// The longest host label a row shows: the host column's width (none with one host).
const HOST_WIDTH: usize = 10;

/// How wide the host column is: the longest name shown, at most [`HOST_WIDTH`]; 0 (no column)
/// with a single host.
fn host_column(board: &Board) -> usize {
    if !board.several_hosts() {
        return 0;
    }
    board
        .hosts()
        .iter()
        .map(|h| h.label.width())
        .max()
        .unwrap_or(0)
        .clamp(1, HOST_WIDTH)
}

/// One session's line: the selection marker, its host (already fitted to the host column)
/// when the board shows several, its id, name, what it does, and how far its run got.
#[allow(clippy::too_many_arguments)]
pub(super) fn session_line(
    summary: &protocol::SessionSummary,
    host: Option<String>,
    depth: usize,
    selected: bool,
    width: usize,
    ui: &Ui,
    now_ms: u64,
) -> Line<'static> {
    let marker = if selected { "▶ " } else { "  " };
    let indent = "  ".repeat(depth.min(4));
    let id = &summary.info.id.0;
    let id = id.get(..8).unwrap_or(id);
    let host = host.map(|h| format!("{h} ")).unwrap_or_default();
    let lead = format!("{marker}{host}{indent}{id} ");
    let name_width = (width / 4).clamp(8, 28);
    let name = pad(&cut(&describe::name(summary), name_width), name_width);
    let what = describe::what(summary, now_ms);
    // The plan's count and the running shells stay whole after what the session does, where a
    // narrow board still shows them; what it does is cut first.
    let mut extras = String::new();
    for extra in [describe::plan(summary), describe::shells(summary)]
        .into_iter()
        .flatten()
    {
        extras.push_str(&format!(" · {extra}"));
    }
    let progress = describe::progress(summary, now_ms);
    let used = lead.width() + name_width + 1;
    let left = width.saturating_sub(used);
    // The progress column goes first when there is no room for both; the model leads it
    // where what the session does still shows whole.
    let mut column = if !progress.is_empty() && left >= 30 + extras.width() + progress.width() + 2 {
        progress
    } else {
        String::new()
    };
    if let Some(model) = describe::model(summary) {
        let with_model = if column.is_empty() {
            model
        } else {
            format!("{model} · {column}")
        };
        if what.width() + extras.width() + with_model.width() + 2 <= left {
            column = with_model;
        }
    }
    let room = if column.is_empty() {
        left
    } else {
        left - column.width() - 2
    };
    let what = if what.width() + extras.width() <= room {
        format!("{what}{extras}")
    } else {
        cut(
            &format!(
                "{}{extras}",
                cut(&what, room.saturating_sub(extras.width()))
            ),
            room,
        )
    };
    let (what, progress) = if column.is_empty() {
        (what, String::new())
    } else {
        (pad(&what, room), format!("  {column}"))
    };
    let group = summary.group();
    let row_style = if selected {
        ui.paint(Modifier::REVERSED, None)
    } else {
        Style::default()
    };
    Line::from(vec![
        Span::styled(lead, row_style),
        Span::styled(
            format!("{name} "),
            row_style.patch(ui.paint(Modifier::BOLD, None)),
        ),
        Span::styled(
            what,
            row_style.patch(ui.paint(Modifier::empty(), Some(color_of(group)))),
        ),
        Span::styled(progress, row_style.patch(ui.paint(Modifier::DIM, None))),
    ])
}

/// The bottom line: the prompt being typed, the last message, or the keys.
fn footer(board: &Board, ui: &Ui, width: u16) -> Line<'static> {
    let width = width as usize;
    let several_hosts = board.several_hosts();
    let text = match &ui.prompt {
        Prompt::Filter(text) => format!("filter: {text}▏ (Enter keeps it, Esc clears it)"),
        Prompt::Steer(_, text) => format!("steer: {text}▏ (Enter sends, Esc drops it)"),
        Prompt::Delete(key) if several_hosts => format!(
            "delete session {} on {} and its history? y / n",
            key.id,
            board.label(key.host)
        ),
        Prompt::Delete(key) => format!("delete session {} and its history? y / n", key.id),
        Prompt::None => match &ui.message {
            Some(message) => message.clone(),
            None => HELP.to_string(),
        },
    };
    Line::from(Span::styled(
        cut(&text, width),
        ui.paint(Modifier::DIM, None),
    ))
}

/// The colour of a group's heading and of what its sessions do.
fn color_of(group: Group) -> Color {
    match group {
        Group::NeedsYou => Color::Yellow,
        Group::Working => Color::Cyan,
        Group::Done => Color::Green,
        Group::Failed => Color::Red,
    }
}

/// `text` cut to `width` columns, with `…` when something was left out.
/// Control characters (a daemon's text is not trusted to be printable) are shown as `�`.
pub fn cut(text: &str, width: usize) -> String {
    let text = crate::style::one_line(text);
    if text.width() <= width {
        return text.into_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    if width > 0 {
        out.push('…');
    }
    out
}

/// `text` filled with spaces to `width` columns.
fn pad(text: &str, width: usize) -> String {
    let fill = width.saturating_sub(text.width());
    format!("{text}{}", " ".repeat(fill))
}
