//! `agentctl board` (docs/architecture.md#the-board): every session of the daemon on one live
//! screen, grouped by what it needs, with one key for each thing a person does with a session. It
//! follows the daemon's summaries ([`Summaries`]), never each session's full stream.

use std::io::IsTerminal;

use agentctl::client::Summaries;
use agentctl::client::paths::Paths;
use crossterm::event::Event;
use protocol::{Decision, Delivery, Group, Reply, Request, RunOptions, SessionId};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::signal::unix::SignalKind;

use super::run_keys::Signal;
use crate::{Failure, connect, format};
use input::Input;
use model::Board;
use terminal::Screen;
use ui::{Action, Ui};

mod arrange;
pub mod describe;
mod input;
mod model;
pub mod render;
pub mod terminal;
#[cfg(test)]
mod tests;
mod ui;

/// Shows the board until `q` (or a signal); `quiet` keeps the bell and notifications off.
pub async fn board(
    paths: &Paths,
    quiet: bool,
    targets: Vec<Option<crate::hosts::Remote>>,
) -> Result<u8, Failure> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(Failure::new(
            "agentctl board needs a terminal; in a script, `agentctl sessions --watch [--json]` prints the same changes as lines",
        ));
    }
    let target = targets.into_iter().next().flatten();
    let client = connect::connect_to(target.as_ref(), paths, "board").await?;
    let feed =
        Summaries::follow_reconnecting(client, connect::reconnect_to(target, paths, "board"))
            .await
            .map_err(Failure::new)?;
    let mut screen = Screen::enter().map_err(terminal_error)?;
    let mut shown =
        Terminal::new(CrosstermBackend::new(std::io::stdout())).map_err(terminal_error)?;
    let mut input = Input::start();
    let mut board = Board::default();
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
            () = feed.changed() => {
                let changes = feed.take();
                if let Some(reason) = changes.closed {
                    break Err(Failure::new(format!(
                        "lost the daemon{}; run `agentctl board` again once it is back",
                        reason.map(|r| format!(": {r}")).unwrap_or_default()
                    )));
                }
                // The daemon went away and came back: the bottom line says so until a key.
                if changes.reconnecting.is_some() {
                    ui.message = Some("the daemon went away; waiting for it to come back…".into());
                }
                if changes.reconnected {
                    ui.message = Some("the daemon restarted; every session is shown again".into());
                }
                let new_asks = board.apply(changes.updated, &changes.removed, changes.ready);
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
                        let Some(id) = board.selected().cloned() else { continue };
                        input.pause();
                        screen.suspend();
                        // The chat view until the user leaves it (Ctrl+D, /detach).
                        let attached =
                            super::chat::chat(paths, super::chat::ChatArgs::attach(id.0)).await;
                        screen.resume().map_err(terminal_error)?;
                        shown.clear().map_err(terminal_error)?;
                        input.resume();
                        ui.message = attached.err().map(|f| f.message);
                    }
                    action => {
                        if let Some(message) = act(&feed, &mut board, action).await {
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

/// Does what a key asked for; returns what to tell the user.
async fn act(feed: &Summaries, board: &mut Board, action: Action) -> Option<String> {
    let selected = board.selected().cloned();
    let (request, done) = match action {
        Action::None | Action::Quit | Action::Attach => return None,
        Action::Move(by) => {
            board.move_selection(by);
            return None;
        }
        Action::Filter(text) => {
            board.filter = text;
            board.arrange();
            return None;
        }
        Action::Answer(decision) => match board.answerable() {
            None => return Some("nothing to answer in this session".to_string()),
            // A key typed before the question showed is not its answer.
            Some(Err(_)) => return Some("a new request just came: look, then answer".to_string()),
            Some(Ok((session, ask))) => (
                Request::Answer {
                    session,
                    request: ask.request,
                    decision,
                },
                format!("{}: {} {}", answered(decision), ask.tool, ask.summary),
            ),
        },
        Action::Cancel => {
            let session = selected?;
            let going = board
                .summary(&session)
                .is_some_and(|s| matches!(s.group(), Group::Working | Group::NeedsYou));
            if !going {
                return Some(format!("nothing is running in {session}"));
            }
            let done = format!("cancelled the run of {session}");
            (Request::Cancel { session }, done)
        }
        Action::Steer(session, text) => {
            let done = format!("steered {session}");
            let options = RunOptions {
                env: super::run::provider_env(),
                ..RunOptions::default()
            };
            let request = Request::Send {
                session,
                text,
                images: Vec::new(),
                delivery: Delivery::Steer,
                options,
            };
            (request, done)
        }
        Action::Delete(session) => {
            let done = format!("deleted {session}");
            (
                Request::DeleteSession {
                    session,
                    force: false,
                },
                done,
            )
        }
    };
    Some(match feed.client().request(request).await {
        Ok(Reply::Done | Reply::Sent { .. } | Reply::Deleted { .. }) => done,
        Ok(other) => format!("unexpected answer: {other:?}"),
        Err(err) => err.to_string(),
    })
}

fn answered(decision: Decision) -> &'static str {
    match decision {
        Decision::Allow => "allowed",
        Decision::AllowAlways => "always allowed",
        Decision::Deny => "denied",
    }
}

/// "agentd: fix-tests needs you" (and how many more).
fn attention_text(board: &Board, sessions: &[SessionId]) -> String {
    let name = sessions
        .first()
        .and_then(|id| board.summary(id))
        .map(describe::name)
        .unwrap_or_default();
    match sessions.len() {
        1 => format!("agentd: {name} needs you"),
        n => format!("agentd: {name} and {} more need you", n - 1),
    }
}

fn terminal_error(err: std::io::Error) -> Failure {
    terminal::restore();
    Failure::new(format!("the terminal cannot show the board: {err}"))
}
