//! The session's background shells (docs/architecture.md#background-shells): the registry its
//! runs start them in, which outlives each run; their starts and ends as events, also when no
//! run is going; listing and killing them for clients; and, after the daemon stopped, the shells
//! its log says were running, which are lost: the user sees a notice and the model is told
//! before its next turn.

use kameo::prelude::*;
use protocol::{ErrorCode, ErrorInfo, Event, ShellEnd, ShellInfo};

use super::SessionActor;
use crate::conversation::Message as HistoryMessage;
use crate::tools::shells::{ShellNews, Shells};

/// The session's part that holds its shells.
pub(super) struct SessionShells {
    /// The registry, shared with the session's runs.
    shells: Shells,
    /// Shells lost when a daemon stopped that the model was not told of yet: (number, command).
    untold: Vec<(u32, String)>,
}

impl SessionShells {
    /// The shells of the session whose actor is `me`: their news reaches it as messages.
    pub(super) fn new(me: &ActorRef<SessionActor>) -> SessionShells {
        let session = me.downgrade();
        let shells = Shells::new(std::sync::Arc::new(move |news| {
            if let Some(session) = session.upgrade() {
                // The mailbox is unbounded: this never waits, and keeps the order of news.
                let _ = session.tell(News(news)).try_send();
            }
        }));
        SessionShells {
            shells,
            untold: Vec::new(),
        }
    }

    /// The handle a run gets: the same shells, at most `limit` running at once.
    pub(super) fn for_run(&self, limit: u32) -> Shells {
        self.shells.with_limit(limit)
    }

    /// How many shells run now (a session with shells running stays loaded).
    pub(super) fn running(&self) -> usize {
        self.shells.running()
    }

    /// Ends every running shell (the session is deleted or stops); their numbers.
    pub(super) async fn end_all(&self) -> Vec<u32> {
        self.shells.end_all().await
    }

    /// Takes in one stored event, as the session is loaded from its log.
    pub(super) fn replay(&mut self, event: &Event, time_ms: u64) {
        match event {
            Event::ShellStarted { shell, command } => {
                self.shells.restore_started(*shell, command, time_ms);
            }
            Event::ShellEnded { shell, end } => {
                self.shells.restore_ended(*shell, end);
                if *end == ShellEnd::Lost
                    && let Some(command) = self.shells.command(*shell)
                {
                    self.untold.push((*shell, command));
                }
            }
            // The model's next request after a loss carries the note (see `lost_note`).
            Event::TurnStarted { .. } => self.untold.clear(),
            _ => {}
        }
    }

    /// What the model is told of shells lost since its last turn, once.
    fn lost_note(&mut self) -> Option<String> {
        if self.untold.is_empty() {
            return None;
        }
        let lost = describe(&std::mem::take(&mut self.untold));
        Some(format!(
            "[agentd: these background shells no longer run: {lost}. They ended when the daemon \
             stopped (or, in a fork, they belong to the session it was forked from), and their \
             output is gone; start them again with bash and \"background\": true if they are \
             still needed.]"
        ))
    }
}

/// "shell 1 (`npm run dev`), shell 2 (`cargo watch`)".
fn describe(shells: &[(u32, String)]) -> String {
    shells
        .iter()
        .map(|(n, command)| {
            format!(
                "shell {n} (`{}`)",
                crate::tools::shells::registry::short(command)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl SessionActor {
    /// After the log was read: the shells it says started and did not end ran in a daemon
    /// that stopped, so they are gone; each gets its end, and the user a notice.
    pub(super) fn lose_orphan_shells(&mut self) {
        let lost = self.shells.shells.lose_orphans();
        if lost.is_empty() {
            return;
        }
        for (shell, _) in &lost {
            self.emit(Event::ShellEnded {
                shell: *shell,
                end: ShellEnd::Lost,
            });
        }
        self.emit(Event::Notice {
            text: format!(
                "background shells ended when the daemon stopped: {}; the model is told at its \
                 next turn",
                describe(&lost)
            ),
        });
        self.shells.untold.extend(lost);
    }

    /// Adds what the model must hear of lost shells to the history, before a turn's input is
    /// taken.
    pub(super) fn tell_lost_shells(&mut self) {
        if let Some(text) = self.shells.lost_note() {
            self.push_message(HistoryMessage::Notice { text });
        }
    }
}

/// A shell of the session started or ended.
pub(super) struct News(ShellNews);

impl Message<News> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: News, _: &mut Context<Self, Self::Reply>) {
        let event = match msg.0 {
            ShellNews::Started { shell, command } => Event::ShellStarted { shell, command },
            ShellNews::Ended { shell, end } => Event::ShellEnded { shell, end },
        };
        self.emit(event);
    }
}

/// The session's shells, running and ended, in the order they started.
pub(crate) struct ListShells;

impl Message<ListShells> for SessionActor {
    type Reply = Result<Vec<ShellInfo>, ErrorInfo>;

    async fn handle(&mut self, _: ListShells, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        Ok(self.shells.shells.list())
    }
}

/// End shell `.0` and its process group; answered once its `ShellEnded` event was emitted.
pub(crate) struct KillShell(pub(crate) u32);

/// Answered after every message sent before it: the news of a shell that ended is in.
struct Settled;

impl Message<Settled> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, _: Settled, _: &mut Context<Self, Self::Reply>) {}
}

impl Message<KillShell> for SessionActor {
    type Reply = DelegatedReply<Result<(), ErrorInfo>>;

    async fn handle(
        &mut self,
        msg: KillShell,
        ctx: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        let shells = self.shells.shells.clone();
        let me = ctx.actor_ref().clone();
        // Its processes may take a moment to go: not in the actor.
        ctx.spawn(async move {
            let refused = |why: String| ErrorInfo::new(ErrorCode::InvalidRequest, why);
            let (end, ended_now) = shells.kill(msg.0).await.map_err(refused)?;
            if !ended_now {
                return Err(refused(format!("shell {} already ended: {end}", msg.0)));
            }
            // Its `ShellEnded` news was sent before the kill returned; it is handled first.
            let _ = me.ask(Settled).await;
            Ok(())
        })
    }
}
