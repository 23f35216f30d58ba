//! `agentctl board` (docs/architecture.md#the-board): every session of the daemon on one live
//! screen, grouped by what it needs, with one key for each thing a person does with a session. It
//! follows the daemon's summaries ([`Summaries`]), never each session's full stream. Given
//! several hosts (docs/architecture.md#another-machine-over-ssh), it follows each one's
//! summaries, names the host on every row, acts on the host of the row, and shows a host that
//! cannot be reached as a line of its own while it tries it again.

use std::io::IsTerminal;

use agentctl::client::Summaries;
use agentctl::client::paths::Paths;
use crossterm::event::Event;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::signal::unix::SignalKind;

use super::run_keys::Signal;
use crate::hosts::Remote;
use crate::{Failure, connect, format};
use arrange::Key;
use feeds::{Feeds, Update};
use input::Input;
use model::Board;
use terminal::Screen;
use ui::{Action, Ui};

mod act;
mod arrange;
pub mod describe;
pub mod feeds;
mod input;
mod model;
pub mod render;
mod stderr;
pub mod terminal;
#[cfg(test)]
mod tests;
mod ui;

/// Shows the board of `targets` (`None`: this machine's daemon) until `q` (or a signal);
/// `quiet` keeps the bell and notifications off; `forward_keys` sends this shell's provider
/// keys with steering messages to other machines.
pub async fn board(
    paths: &Paths,
    quiet: bool,
    mut targets: Vec<Option<Remote>>,
    forward_keys: bool,
) -> Result<u8, Failure> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(Failure::new(
            "agentctl board needs a terminal; in a script, `agentctl sessions --watch [--json]` prints the same changes as lines",
        ));
    }
    for remote in targets.iter_mut().flatten() {
        remote.forward_keys |= forward_keys;
    }
    // One daemon: reached before the board shows (or the command fails), and lost for good
    // ends the board, as without hosts. Several: each is reached, and retried, on its own.
    let single = targets.len() == 1;
    let mut feeds = match targets.as_slice() {
        [target] => {
            let client = connect::connect_to(target.as_ref(), paths, "board").await?;
            let reconnect = connect::reconnect_to(target.clone(), paths, "board");
            let feed = Summaries::follow_reconnecting(client, reconnect)
                .await
                .map_err(Failure::new)?;
            Feeds::reached(paths, target.clone(), feed, "board")
        }
        _ => Feeds::open(paths, targets, "board"),
    };
    let mut screen = Screen::enter_capturing_stderr().map_err(terminal_error)?;
    let mut shown =
        Terminal::new(CrosstermBackend::new(std::io::stdout())).map_err(terminal_error)?;
    let mut input = Input::start();
    let mut board = Board::new((0..feeds.len()).map(|i| feeds.label(i)).collect());
    let mut ui = Ui {
        color: crate::style::Style::detect().colored(),
        ..Ui::default()
    };
    // `--color always` wins over NO_COLOR, which crossterm would otherwise obey on its own.
    crossterm::style::force_color_output(ui.color);
    let mut signals = [
        Signal::new(SignalKind::terminate()),
        Signal::new(SignalKind::hangup()),
        Signal::new(SignalKind::interrupt()),
    ];
    // Elapsed times move on even when nothing changes.
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    let ended = loop {
        let now = format::now_ms();
        shown
            .draw(|frame| render::draw(frame, &board, &mut ui, now))
            .map_err(terminal_error)?;
        let [term, hup, int] = &mut signals;
        tokio::select! {
            updates = feeds.next() => {
                let mut new_asks = Vec::new();
                let mut lost = None;
                for (host, update) in updates {
                    let changes = match update {
                        Update::Up => continue,
                        Update::Unreachable(reason) => {
                            board.unreachable(host, said_of(&feeds, host, reason));
                            continue;
                        }
                        Update::Changes(changes) => changes,
                    };
                    if let Some(reason) = changes.closed {
                        if single {
                            lost = Some(reason);
                            break;
                        }
                        let reason = reason.unwrap_or_else(|| "the link closed".to_string());
                        board.unreachable(host, said_of(&feeds, host, reason));
                        continue;
                    }
                    // The daemon went away and came back: the bottom line says so until a key
                    // (with several hosts, the host's own line).
                    if let Some(reason) = changes.reconnecting {
                        match single {
                            true => ui.message = Some("the daemon went away; waiting for it to come back…".into()),
                            false => board.reconnecting(host, reason),
                        }
                    }
                    if changes.reconnected {
                        match single {
                            true => ui.message = Some("the daemon restarted; every session is shown again".into()),
                            false => board.back(host),
                        }
                    }
                    new_asks.extend(board.apply(host, changes.updated, &changes.removed, changes.ready));
                }
                if let Some(reason) = lost {
                    break Err(Failure::new(format!(
                        "lost the daemon{}; run `agentctl board` again once it is back",
                        reason.map(|r| format!(": {r}")).unwrap_or_default()
                    )));
                }
                if !quiet && !new_asks.is_empty() {
                    terminal::attention(&attention_text(&board, &new_asks));
                }
            }
            Some(event) = input.events.recv() => {
                let Event::Key(key) = event else {
                    // A resize: the next draw fits the new size.
                    shown.autoresize().map_err(terminal_error)?;
                    continue;
                };
                let action = ui.key(key, board.selected());
                match action {
                    Action::Quit => break Ok(0),
                    Action::Attach => {
                        let Some(key) = board.selected().cloned() else { continue };
                        input.pause();
                        // The chat view until the user leaves it (Ctrl+D, /detach): here with
                        // one host, else in a child while the other hosts go on.
                        let attached = match single {
                            true => {
                                screen.suspend();
                                act::attach_here(paths, &key).await
                            }
                            false => {
                                screen.lend();
                                act::attach_child(feeds.target(key.host), &key, ui.color).await
                            }
                        };
                        screen.resume().map_err(terminal_error)?;
                        shown.clear().map_err(terminal_error)?;
                        input.resume();
                        ui.message = attached.err().map(|f| f.message);
                    }
                    action => {
                        if let Some(message) = act::act(&feeds, &mut board, action).await {
                            ui.message = Some(message);
                        }
                    }
                }
            }
            _ = tick.tick() => {}
            () = term.recv() => break Ok(143),
            () = hup.recv() => break Ok(129),
            () = int.recv() => break Ok(130),
        }
    };
    drop(shown);
    screen.suspend();
    ended
}

/// "agentd: fix-tests needs you" (and how many more; with several hosts, on which).
fn attention_text(board: &Board, sessions: &[Key]) -> String {
    let first = sessions.first();
    let mut name = first
        .and_then(|key| board.summary(key))
        .map(describe::name)
        .unwrap_or_default();
    if let Some(key) = first.filter(|_| board.several_hosts()) {
        name = format!("{name} on {}", board.label(key.host));
    }
    match sessions.len() {
        1 => format!("agentd: {name} needs you"),
        n => format!("agentd: {name} and {} more need you", n - 1),
    }
}

/// Why host number `host` cannot be reached: what ssh last said of it on stderr, when it
/// named it, else `reason`.
fn said_of(feeds: &Feeds, host: usize, reason: String) -> String {
    feeds
        .target(host)
        .and_then(|remote| stderr::last_naming(&remote.host.name))
        .unwrap_or(reason)
}

/// The board's failure when the terminal fails it, with the terminal given back.
fn terminal_error(err: std::io::Error) -> Failure {
    terminal::restore();
    Failure::new(format!("the terminal cannot show the board: {err}"))
}
