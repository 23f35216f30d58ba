//! Following `agentctl run`'s run to its end: its events to the view, keys that answer
//! permission questions, Ctrl+C and signals, the daemon going away and coming back.

use std::time::{Duration, Instant};

use agentctl::client::{Feed, FeedItem, Follower, Reconnect, View};
use protocol::{Decision, Event, Request, RunId, SessionId, StopReason};
use tokio::signal::unix::SignalKind;

use super::request;
use super::run_keys::{AskKeys, CTRL_C, Signal, next_key};
use crate::Failure;

/// How following the run ended.
pub(super) enum Ended {
    /// With this exit code.
    Exit(u8),
    /// With a failure.
    Failed(Failure),
    /// The daemon did not come back; the failure says how to follow the run.
    Lost(Failure),
}

/// The run being followed to its end.
pub(super) struct Following {
    pub(super) follower: Follower,
    pub(super) session: SessionId,
    /// The run followed, once known (a message to a busy session joins its run).
    pub(super) ours: Option<RunId>,
    /// Keys that answer permission requests, on a terminal.
    pub(super) keys: Option<AskKeys>,
    /// Whether the permission question is written here (the view does not draw it).
    pub(super) prompt_written: bool,
    /// Whether this run made its session.
    pub(super) created: bool,
    /// Whether a turn of the run began (the model was asked).
    pub(super) asked_model: bool,
    /// The run failed before the model was asked in a session made for it: the daemon does
    /// not keep that session.
    pub(super) discarded: bool,
    pub(super) view: Box<dyn View>,
    /// Ctrl+C (or SIGTERM) so far: the first cancels, the second leaves.
    pub(super) cancels: u32,
    /// Since when the daemon is away, whether it said it stops, and whether the wait was told.
    pub(super) away: Option<Away>,
}

/// The daemon went away during the run.
pub(super) struct Away {
    since: Instant,
    planned: bool,
    told: bool,
}

/// After this long away, the wait is told.
const TELL_AWAY_AFTER: Duration = Duration::from_secs(2);

impl Following {
    /// Shows the run's events until it ends, answering keys and signals meanwhile.
    pub(super) async fn follow(&mut self, feed: &mut Feed) -> Ended {
        // SIGTERM (`timeout`, a service stopping) cancels the run as Ctrl+C does; SIGHUP (the
        // terminal closed) leaves it going in the daemon.
        let mut terminate = Signal::new(SignalKind::terminate());
        let mut hangup = Signal::new(SignalKind::hangup());
        // A running tool's line is redrawn ten times a second (on a terminal; see `tick`).
        let mut ticks = tokio::time::interval(Duration::from_millis(100));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            let next = tokio::select! {
                next = feed.next() => next,
                _ = ticks.tick() => {
                    self.view.tick();
                    self.tell_away();
                    continue;
                }
                Some(key) = next_key(&mut self.keys) => {
                    if let Some(code) = self.key(key).await {
                        return Ended::Exit(code);
                    }
                    continue;
                }
                _ = tokio::signal::ctrl_c() => {
                    if let Some(code) = self.interrupt().await {
                        return Ended::Exit(code);
                    }
                    continue;
                }
                () = terminate.recv() => {
                    if self.cancels == 0 {
                        self.cancels = 1;
                        if let Err(err) = self.cancel().await {
                            eprintln!("agentctl: cannot cancel the run ({err}); leaving it going");
                            return Ended::Exit(143);
                        }
                    }
                    continue;
                }
                () = hangup.recv() => {
                    eprintln!("agentctl: the terminal closed; the run goes on in session {}", self.session);
                    return Ended::Exit(129);
                }
            };
            if let Some(ended) = self.item(next) {
                return ended;
            }
        }
    }

    /// Reads keys while a request of the run waits (the feed already counts the one being
    /// shown), unless the run is being cancelled or the daemon is away.
    fn ask_keys(&mut self) {
        let asking = self.cancels == 0
            && self.away.is_none()
            && !self.follower.pending(&self.session).is_empty();
        if let Some(keys) = &mut self.keys {
            keys.want(asking);
        }
    }

    /// Shows what the feed passed on; the end, when the run ended.
    fn item(&mut self, item: FeedItem) -> Option<Ended> {
        let (event, replay) = match item {
            FeedItem::Event { event, replay } => (event, replay),
            FeedItem::ReplayDone { .. } => return None,
            FeedItem::Reconnecting { planned, .. } => {
                self.away = Some(Away {
                    since: Instant::now(),
                    planned,
                    told: false,
                });
                // Answers cannot reach the daemon now; asked again once it is back.
                self.ask_keys();
                return None;
            }
            FeedItem::Reconnected { gone, .. } => {
                if gone.contains(&self.session) {
                    return Some(Ended::Failed(Failure::new(format!(
                        "session {} was deleted while the daemon was away",
                        self.session
                    ))));
                }
                let came = match self.away.take() {
                    Some(away) if away.planned => "restarted",
                    _ => "came back",
                };
                self.ask_keys();
                let note = format!(
                    "agentctl: the daemon {came}; following session {} again",
                    self.session
                );
                self.view.note(&note);
                return None;
            }
            FeedItem::Closed(reason) => return Some(Ended::Lost(self.lost(reason))),
        };
        if let Event::RunStarted { run, .. } = &event.event
            && self.ours.is_none()
        {
            self.ours = Some(*run);
        }
        // Raw before the question shows: a key typed after it is its answer.
        self.ask_keys();
        self.view.event(&event, replay);
        match &event.event {
            Event::TurnStarted { .. } => {
                self.asked_model = true;
                None
            }
            Event::RunFinished {
                run, stop_reason, ..
            } if self.ours.is_none_or(|r| r == *run) => {
                self.discarded =
                    self.created && !self.asked_model && *stop_reason == StopReason::Error;
                Some(Ended::Exit(stop_reason.exit_code() as u8))
            }
            _ => None,
        }
    }

    /// A key read while a request waits: y, n or a answers it, Ctrl+C cancels the run (the
    /// second leaves).
    async fn key(&mut self, key: char) -> Option<u8> {
        // Ctrl+C counts however the terminal was when it was pressed.
        if key == CTRL_C {
            return self.interrupt().await;
        }
        if !self.keys.as_ref().is_some_and(AskKeys::asking) {
            // Read as the question went away: it answers nothing.
            return None;
        }
        let decision = match key.to_ascii_lowercase() {
            'y' => Decision::Allow,
            'a' => Decision::AllowAlways,
            'n' => Decision::Deny,
            _ => {
                if self.prompt_written {
                    eprint!("\r\npress y (allow), n (deny) or a (always allow): ");
                } else {
                    self.view
                        .note("press y (allow), n (deny) or a (always allow)");
                }
                return None;
            }
        };
        // The terminal is cooked again before anything more is written; the next request (if
        // any) asks again.
        if let Some(keys) = &mut self.keys {
            keys.want(false);
        }
        if self.prompt_written {
            // The answer ends the question's line.
            eprintln!("{key}");
        }
        if let Some(ask) = self.follower.pending(&self.session).first() {
            let answer = Request::Answer {
                session: ask.asker(&self.session),
                request: ask.request,
                decision,
            };
            if let Err(failure) = request(&self.follower.client(), answer).await {
                self.view.note(&format!("agentctl: {}", failure.message));
            }
        }
        None
    }

    /// Ctrl+C: the first cancels the run, the second leaves at once with exit code 130.
    async fn interrupt(&mut self) -> Option<u8> {
        // No more questions: the terminal is cooked from here on.
        if let Some(keys) = &mut self.keys {
            keys.want(false);
        }
        self.cancels += 1;
        if self.cancels > 1 {
            return Some(130);
        }
        self.view.note("cancelling… (Ctrl+C again to leave now)");
        if let Err(err) = self.cancel().await {
            let note = format!(
                "agentctl: cannot cancel the run now ({err}); Ctrl+C again leaves it going"
            );
            self.view.note(&note);
        }
        None
    }

    async fn cancel(&self) -> Result<(), agentctl::client::ClientError> {
        let cancel = Request::Cancel {
            session: self.session.clone(),
        };
        self.follower.client().request(cancel).await.map(|_| ())
    }

    /// Says, once, that the daemon has been away a while.
    fn tell_away(&mut self) {
        if let Some(away) = &mut self.away
            && !away.told
            && away.since.elapsed() >= TELL_AWAY_AFTER
        {
            away.told = true;
            let note = format!(
                "agentctl: the daemon is away; waiting up to {} s for it to come back (the run goes on in it)",
                Reconnect::patience_from_env().as_secs()
            );
            self.view.note(&note);
        }
    }

    /// The daemon did not come back: how to follow the run once it does.
    fn lost(&self, reason: Option<String>) -> Failure {
        let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
        let session = &self.session;
        Failure::new(format!(
            "lost the daemon before the run ended{reason}\nThe run goes on when the daemon is back: follow it with `agentctl attach {session}`"
        ))
    }
}
