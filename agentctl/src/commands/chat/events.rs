//! How chat follows the session's events: the status line (state, turn, tokens, queues,
//! pending permission requests) and the input a cancelled run gives back.

use protocol::{Event, SessionEvent, SessionState};

use super::Chat;

impl Chat {
    /// Shows an event and keeps the status line; a replayed event changes no input.
    pub(super) fn on_event(&mut self, event: &SessionEvent, replay: bool) {
        let live = !replay;
        {
            let mut status = self.status.lock().unwrap_or_else(|e| e.into_inner());
            match &event.event {
                Event::RunStarted { model, .. } => {
                    if !model.is_empty() {
                        status.model = Some(model.clone());
                    }
                    status.state = Some(SessionState::Running);
                    status.turn = 0;
                    status.cost = None;
                    status.children_cost = 0;
                }
                Event::TurnStarted { turn } => status.turn = *turn,
                Event::Usage {
                    cumulative,
                    cost_micros,
                    ..
                } => {
                    status.tokens = *cumulative;
                    status.cost = *cost_micros;
                }
                Event::QueueChanged {
                    steer, follow_up, ..
                } => {
                    status.steer = steer.len();
                    status.follow_up = follow_up.len();
                }
                Event::PermissionRequested {
                    session,
                    request,
                    summary,
                    ..
                } => {
                    let key = (session.clone(), *request);
                    if !status.asks.iter().any(|(k, _)| *k == key) {
                        if status.asks.is_empty() {
                            status.asked_at = Some(std::time::Instant::now());
                        }
                        status.asks.push((key, summary.clone()));
                    }
                    status.state = Some(SessionState::AwaitingApproval);
                }
                Event::SubagentFinished { cost_micros, .. } => {
                    status.children_cost += cost_micros.unwrap_or(0);
                }
                Event::PermissionResolved {
                    session, request, ..
                } => {
                    let key = (session.clone(), *request);
                    let was_first = status.ask().is_some_and(|(k, _)| *k == key);
                    status.asks.retain(|(k, _)| *k != key);
                    if was_first {
                        // The next request is shown from now.
                        status.asked_at = Some(std::time::Instant::now());
                    }
                    if status.asks.is_empty()
                        && status.state == Some(SessionState::AwaitingApproval)
                    {
                        status.state = Some(SessionState::Running);
                    }
                }
                Event::ModeChanged { mode } => status.mode = *mode,
                Event::ModelChanged { model } => status.model = Some(model.clone()),
                Event::ShellStarted { shell, .. } => {
                    status.shells.insert(*shell);
                }
                Event::ShellEnded { shell, .. } => {
                    status.shells.remove(shell);
                }
                Event::RunFinished { usage, .. } => {
                    status.state = Some(SessionState::Idle);
                    status.tokens = *usage;
                    // A subagent's requests outlive its parent's run only until answered.
                    status.asks.retain(|((asker, _), _)| asker.is_some());
                }
                _ => {}
            }
        }
        self.view.show(event);
        if let Event::PermissionRequested { .. } = &event.event {
            self.view
                .note("  press y (allow), n (deny) or a (always allow)");
        }
        if let Event::RunFinished {
            returned_messages, ..
        } = &event.event
            && live
        {
            let mut texts: Vec<String> = returned_messages.iter().map(|m| m.text.clone()).collect();
            texts.extend(self.restore_after_cancel.take().filter(|t| !t.is_empty()));
            if !texts.is_empty() {
                self.line.restore(texts.join("\n"));
            }
        }
        self.line.refresh();
    }
}
