//! The agent loop (docs/architecture.md#the-agent-loop): call the model, save its reply, run
//! the tools it asked for, save their results, and go round again until the model answers
//! without tools, the user cancels, the turn limit is reached, or something fails.
//!
//! The loop runs as a task owned by the session actor. The actor keeps the history and the
//! queues; the loop asks it for the next turn's input and hands it every reply and result, so
//! steer, follow-up, cancel and permission answers are handled while the loop works. The loop
//! reaches its session only through its [`SessionPort`], and never names the actor.

use std::sync::Arc;

use protocol::{Event, StopReason, TokenUsage};
use tokio_util::sync::CancellationToken;

mod asked_change;
mod calls;
mod checkpoints;
mod compaction;
mod hooks;
mod lenient_json;
mod model_turn;
mod named_files;
mod nudge;
mod plan_call;
pub(crate) mod port;
mod repeats;
mod repetition;
mod resume;
mod run_hooks;
mod setup;
mod state;
mod step;
mod stopping;
mod task_call;
mod text_calls;
mod tools_step;
mod write_results;

use compaction::Compaction;
pub(crate) use port::{
    Answer, Authorization, Authorized, CallToCheck, ChildSpec, Door, HookSession, PortError,
    SessionPort, ToSession, TurnInput,
};
pub(crate) use resume::Resumed;
pub(crate) use setup::{Nesting, RunSetup, Start, Workplace};
use state::{Changes, Guards, Harness, Tally};
use step::{Step, next_step};
pub(crate) use task_call::TaskSetup;

use crate::compact;
use crate::conversation::{Message, ToolCall};
use crate::model_profile::ModelProfile;
use crate::provider::{Provider, ProviderError};
use crate::tools;

/// The result text of a call that was not run because the turn limit was reached.
pub(crate) const NOT_EXECUTED_MAX_TURNS: &str = "(not executed: reached max turns)";
/// The result text of a call of a reply that was cut off at the output limit.
pub(crate) const NOT_EXECUTED_TRUNCATED: &str = "not executed: the reply was cut off at the output limit, so its arguments may be incomplete; send the call again";
/// The result text of a call that had not started when the run was interrupted.
pub(crate) const INTERRUPTED: &str = "(interrupted before this tool ran)";

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunOutcome {
    /// Why it stopped.
    pub(crate) stop_reason: StopReason,
    /// Complete replies received.
    pub(crate) turns: u32,
    /// Whether the last reply was cut off at the output limit.
    pub(crate) truncated: bool,
    /// Tokens used.
    pub(crate) usage: TokenUsage,
    /// What went wrong, for `error` and `health` stops.
    pub(crate) error: Option<String>,
    /// A change was asked for, and the run completed without changing a file or running a
    /// command.
    pub(crate) nothing_changed: bool,
}

/// The loop's own state.
struct Run {
    setup: RunSetup,
    /// What the model gets.
    harness: Harness,
    /// What the run used so far.
    tally: Tally,
    /// The guards against going round in circles.
    guards: Guards,
    /// Whether the run made the change it was asked for.
    changes: Changes,
    /// The run's checkpoints.
    checkpoints: checkpoints::RunCheckpoints,
}

/// Runs the loop to its end.
pub(crate) async fn run(setup: RunSetup) -> RunOutcome {
    let failed = |err: String| RunOutcome {
        stop_reason: StopReason::Error,
        turns: 0,
        truncated: false,
        usage: TokenUsage::default(),
        error: Some(err),
        nothing_changed: false,
    };
    let (provider, mut model) = match &setup.choice.provider {
        Ok((provider, model)) => (provider.clone(), model.clone()),
        Err(err) => return failed(err.to_string()),
    };
    // A local server with no model named serves one: ask it.
    if model.is_empty() {
        model = match provider.only_model().await {
            Ok(model) => model,
            Err(err) => return failed(err.to_string()),
        };
    }
    let window = match setup.choice.context_window {
        Some(window) => window,
        None => match provider.server_context_window(&model).await {
            Some(window) => window,
            None => compact::default_context_window(&model),
        },
    };
    let checkpoints = checkpoints::RunCheckpoints::start(
        setup.place.checkpoints.clone(),
        setup.run,
        setup.config.checkpoints,
    );
    let profile = ModelProfile::choose(setup.choice.profile, window, &model);
    let small = profile.is_small();
    // A resumed run counts what it did before the stop.
    let (turns, usage, children_usage) = setup.start.resumed.as_ref().map_or_else(
        || (0, TokenUsage::default(), TokenUsage::default()),
        |r| (r.turns, r.usage, r.children_usage),
    );
    let asked = setup
        .start
        .prompt
        .as_deref()
        .is_some_and(asked_change::asks_for_change);
    let mut run = Run {
        setup,
        harness: Harness {
            window,
            profile,
            small,
            specs: Arc::default(),
            toolset: Default::default(),
        },
        tally: Tally {
            turns,
            usage,
            children_usage: std::sync::Mutex::new(children_usage),
        },
        guards: Guards::default(),
        changes: Changes {
            asked,
            ..Default::default()
        },
        checkpoints,
    };
    run.harness.specs = Arc::new(run.offered(tools::specs_for(&run.builtin_tools(), small)));
    if run.setup.start.resumed.is_some() {
        run.checkpoints.resume().await;
    }
    let outcome = match run.drive(&provider, &model).await {
        Ok(outcome) => outcome,
        // The session actor is gone (the session was deleted): the run ends with it.
        Err(Gone) => run.finish(
            StopReason::Aborted,
            false,
            Some("the session was closed".to_string()),
        ),
    };
    run.checkpoint_end().await;
    outcome
}

/// The session actor stopped answering.
struct Gone;

impl From<PortError> for Gone {
    fn from(_: PortError) -> Self {
        Gone
    }
}

impl Run {
    fn finish(
        &self,
        stop_reason: StopReason,
        truncated: bool,
        error: Option<String>,
    ) -> RunOutcome {
        // The run's usage counts its subagents'.
        let mut usage = self.tally.usage;
        usage.add(&self.children_usage());
        let acted = self
            .changes
            .acted
            .load(std::sync::atomic::Ordering::Relaxed);
        RunOutcome {
            stop_reason,
            turns: self.tally.turns,
            truncated,
            usage,
            error,
            nothing_changed: stop_reason == StopReason::Completed && self.changes.asked && !acted,
        }
    }

    fn cancel(&self) -> &CancellationToken {
        &self.setup.cancel
    }

    fn emit(&self, event: Event) {
        // The session actor's mailbox is unbounded: this never waits.
        self.setup.session.emit(self.setup.run, event);
    }

    async fn push(&self, message: Message, event: Option<Event>) -> Result<(), Gone> {
        self.setup
            .session
            .push(self.setup.run, message, event)
            .await?;
        Ok(())
    }

    async fn drive(&mut self, provider: &Provider, model: &str) -> Result<RunOutcome, Gone> {
        let fresh = self.setup.start.resumed.is_none();
        // A resumed run first answers the calls the stop left without a result.
        if let Some(resumed) = self.setup.start.resumed.take()
            && !resumed.calls.is_empty()
        {
            self.refresh_tools().await;
            let results = self.answer_interrupted(resumed).await?;
            self.push(Message::ToolResults { results }, None).await?;
        }
        self.start_hooks().await?;
        // A small model starts with the files the message names already read.
        if fresh
            && self.harness.small
            && let Some(prompt) = self.setup.start.prompt.clone()
        {
            self.refresh_tools().await;
            self.read_named_files(&prompt).await?;
        }
        loop {
            // A planned stop of the daemon lets no turn begin: the next daemon goes on.
            self.hold_for_stop().await;
            if self.cancel().is_cancelled() {
                return Ok(self.finish(StopReason::Aborted, false, None));
            }
            // Steering messages queued during the last turn enter the history here.
            let mut input = self
                .setup
                .session
                .begin_turn(self.setup.run, self.harness.small)
                .await?;
            let window = self.harness.window;
            if self.setup.config.compaction
                && (input.compact
                    || compact::over_threshold(
                        input.last_input,
                        window,
                        self.setup.choice.max_tokens.into(),
                    ))
            {
                match self.compact(provider, model, &input).await? {
                    Compaction::Done(compacted) => input = compacted,
                    Compaction::Nothing => {}
                    Compaction::Cancelled => {
                        return Ok(self.finish(StopReason::Aborted, false, None));
                    }
                    Compaction::Failed(err) => self.emit(Event::Error {
                        message: format!("compaction failed, going on without it: {err}"),
                    }),
                }
            }
            // MCP servers start on the first turn; their tools may change between turns.
            self.refresh_tools().await;
            self.hold_for_stop().await;
            if self.cancel().is_cancelled() {
                return Ok(self.finish(StopReason::Aborted, false, None));
            }
            self.emit(Event::TurnStarted {
                turn: self.tally.turns + 1,
            });
            let mut compacted_for_overflow = false;
            let turn = loop {
                match self.call_model(provider, model, &input).await {
                    Ok(turn) => break turn,
                    // A partial reply is never saved.
                    Err(ProviderError::Cancelled) => {
                        return Ok(self.finish(StopReason::Aborted, false, None));
                    }
                    // An image the provider cannot take would fail every call of the session
                    // from now on: its images go as their labels instead.
                    Err(err)
                        if err.refuses_image()
                            && !self.guards.images_refused
                            && !crate::images::images_of(&input.messages).is_empty() =>
                    {
                        self.guards.images_refused = true;
                        self.emit(Event::Notice {
                            text: format!(
                                "the provider refused an image of this session ({err}); this \
                                 run sends the session's images as their names"
                            ),
                        });
                    }
                    // Too long for the model: summarise once and try again.
                    Err(err)
                        if err.is_context_overflow()
                            && self.setup.config.compaction
                            && !compacted_for_overflow =>
                    {
                        compacted_for_overflow = true;
                        match self.compact(provider, model, &input).await? {
                            Compaction::Done(compacted) => input = compacted,
                            Compaction::Cancelled => {
                                return Ok(self.finish(StopReason::Aborted, false, None));
                            }
                            Compaction::Nothing | Compaction::Failed(_) => {
                                return Ok(self.finish(StopReason::Error, false, Some(format!(
                                    "the conversation does not fit the model's context window and could not be compacted: {err}"
                                ))));
                            }
                        }
                    }
                    Err(err) if err.is_context_overflow() => {
                        return Ok(self.finish(StopReason::Error, false, Some(format!(
                            "the conversation does not fit the model's context window, even after compaction: {err}"
                        ))));
                    }
                    Err(err) => {
                        return Ok(self.finish(StopReason::Error, false, Some(err.to_string())));
                    }
                }
            };

            // The session's history is shared with `input`: let it go before the reply is
            // added, so that nothing is copied.
            drop(input);
            let reply = self.settle(turn);
            self.tally.turns += 1;
            self.tally.usage.add(&reply.usage);
            let calls: Vec<ToolCall> = reply.tool_calls().into_iter().cloned().collect();
            let event = Event::AssistantMessage {
                turn: self.tally.turns,
                text: reply.text(),
                thinking: reply.thinking(),
                tool_calls: calls.iter().map(ToolCall::info).collect(),
                stop_reason: reply.stop_reason.clone(),
                folds: None,
            };
            let turn_usage = reply.usage;
            let step_reply = reply.clone();
            self.push(Message::Assistant(reply), Some(event)).await?;
            self.emit(Event::Usage {
                turn: turn_usage,
                cumulative: self.tally.usage,
                cost_micros: self
                    .setup
                    .choice
                    .price
                    .map(|p| p.cost_micros(&self.tally.usage)),
            });
            let signs = self.observe_calls(&calls);

            if self.guards.looped {
                return Ok(self.finish(
                    StopReason::Health,
                    false,
                    Some("stopped: the model's reply repeated the same text over and over; it was cut after the first copy".to_string()),
                ));
            }
            let queued = if calls.is_empty() {
                self.setup.session.next_queued(self.setup.run).await?
            } else {
                None
            };
            match next_step(&step_reply, self.tally.turns, self.setup.max_turns, queued) {
                Step::ContinueWithQueued => continue,
                Step::Complete { truncated } => {
                    // A small model that only showed the change is asked once to make it.
                    if self.nudge_to_act().await? {
                        continue;
                    }
                    // A Stop hook may send the run on with its reason.
                    if self.stop_hooks().await? {
                        continue;
                    }
                    // A cancel while the hooks ran is the run's end.
                    if self.cancel().is_cancelled() {
                        return Ok(self.finish(StopReason::Aborted, false, None));
                    }
                    return Ok(self.finish(StopReason::Completed, truncated, None));
                }
                Step::StopAtMaxTurns => {
                    let results = self.fill(&calls, Vec::new(), NOT_EXECUTED_MAX_TURNS);
                    self.push(Message::ToolResults { results }, None).await?;
                    return Ok(self.finish(StopReason::MaxTurns, false, None));
                }
                Step::RejectTruncatedCalls => {
                    let results = self.fill(&calls, Vec::new(), NOT_EXECUTED_TRUNCATED);
                    self.push(Message::ToolResults { results }, None).await?;
                }
                Step::RunTools => {
                    if let Some(outcome) = self.run_tools(&calls, signs).await? {
                        return Ok(outcome);
                    }
                }
            }
        }
    }
}
