//! The agent loop (SPEC §4): call the model, save its reply, run the tools it asked for, save
//! their results, and go round again until the model answers without tools, the user cancels,
//! the turn limit is reached, or something fails.
//!
//! The loop runs as a task owned by the session actor. The actor keeps the history and the
//! queues; the loop asks it for the next turn's input and hands it every reply and result, so
//! steer, follow-up, cancel and permission answers are handled while the loop works.

use std::path::PathBuf;
use std::sync::Arc;

use kameo::prelude::*;
use protocol::{Event, RunId, StopReason, TokenUsage};
use tokio_util::sync::CancellationToken;

mod asked_change;
mod calls;
mod compaction;
mod hooks;
mod lenient_json;
mod model_turn;
mod named_files;
mod nudge;

use compaction::Compaction;
mod checkpoints;
mod repeats;
mod repetition;
mod resume;
mod run_hooks;
mod step;
mod stopping;
mod task_call;
mod text_calls;
mod tools_step;
mod write_results;

pub use resume::Resumed;
pub use step::{Step, next_step};

pub use task_call::TaskSetup;

use super::actor::{BeginTurn, NextQueued, Push, SessionPort};
use crate::compact;
use crate::conversation::{Message, ToolCall};
use crate::health::HealthMonitor;
use crate::mcp::{McpHub, SessionSide, Toolset};
use crate::model_profile::ModelProfile;
use crate::provider::{Choice, Provider, ProviderError, ToolSpec};
use crate::tools::{self, ToolPool};

/// The result text of a call that was not run because the turn limit was reached.
pub const NOT_EXECUTED_MAX_TURNS: &str = "(not executed: reached max turns)";
/// The result text of a call of a reply that was cut off at the output limit.
pub const NOT_EXECUTED_TRUNCATED: &str = "not executed: the reply was cut off at the output limit, so its arguments may be incomplete; send the call again";
/// The result text of a call that had not started when the run was interrupted.
pub const INTERRUPTED: &str = "(interrupted before this tool ran)";

/// Everything a run needs.
pub struct RunSetup {
    /// The session the run belongs to.
    pub session: SessionPort,
    /// The run's id.
    pub run: RunId,
    /// The session directory.
    pub cwd: PathBuf,
    /// The configuration in force when the run started.
    pub config: Arc<crate::config::Config>,
    /// The provider, model and limits chosen for the run.
    pub choice: Choice,
    /// The tool pool.
    pub tools: ToolPool,
    /// Fires when the user cancels.
    pub cancel: CancellationToken,
    /// The turn limit; 0 for none.
    pub max_turns: u32,
    /// The files the session read, for the stale-file guard.
    pub files: Arc<crate::stale_files::FileTracker>,
    /// Where running commands are recorded.
    pub processes: crate::tools::processes::ProcessRecords,
    /// The environment commands run with.
    pub env: Arc<Vec<(String, String)>>,
    /// The MCP servers.
    pub mcp: McpHub,
    /// The session's id.
    pub id: protocol::SessionId,
    /// Where the run's checkpoints go; `None` when they are off.
    pub checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    /// Where the run stood, when it is resumed after the daemon stopped.
    pub resumed: Option<Resumed>,
    /// What starting subagents needs; `None` where this session may not (SPEC §14).
    pub subagents: Option<Arc<TaskSetup>>,
    /// The tools a subagent's definition allows it; every tool when `None`.
    pub allowed_tools: Option<Vec<String>>,
    /// The message that started the run (its hooks see it); `None` for a resumed run.
    pub prompt: Option<String>,
    /// Whether the session is a subagent (its Stop hooks are `SubagentStop`).
    pub subagent: bool,
    /// The daemon's planned stop: once it is asked for, the run starts no model turn and no
    /// tool call, and waits to be stopped (the next daemon resumes it).
    pub stop: crate::stop::PlannedStop,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Complete replies received.
    pub turns: u32,
    /// Whether the last reply was cut off at the output limit.
    pub truncated: bool,
    /// Tokens used.
    pub usage: TokenUsage,
    /// What went wrong, for `error` and `health` stops.
    pub error: Option<String>,
    /// A change was asked for, and the run completed without changing a file or running a
    /// command.
    pub nothing_changed: bool,
}

/// The loop's own state.
struct Run {
    setup: RunSetup,
    /// The model's context window, in tokens.
    window: u64,
    /// The harness the model gets: its tools, their descriptions and the prompt.
    profile: ModelProfile,
    /// The profile is the small one.
    small: bool,
    turns: u32,
    usage: TokenUsage,
    health: HealthMonitor,
    specs: Arc<Vec<ToolSpec>>,
    /// The MCP tools of the current turn.
    toolset: Toolset,
    /// What the session brings to its MCP servers.
    side: SessionSide,
    /// The run's checkpoints.
    checkpoints: checkpoints::RunCheckpoints,
    /// The last reply looped and was cut.
    looped: bool,
    /// Tokens of the run's subagents (in the foreground) so far.
    children_usage: std::sync::Mutex<TokenUsage>,
    /// Stop hooks that blocked in a row.
    stop_blocks: u32,
    /// What each call gave before, to tell the model when a call repeats itself.
    repeats: repeats::Repeats,
    /// The summaries of the run's changes, and what a small model is told after one.
    writes: write_results::WriteResults,
    /// The message that started the run asks for a change.
    asked_change: bool,
    /// The model was told once that it answered without making the change.
    nudged: bool,
    /// A file was changed or a command run (or a subagent or a server's tool may have).
    acted: std::sync::atomic::AtomicBool,
}

/// Runs the loop to its end.
pub async fn run(setup: RunSetup) -> RunOutcome {
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
        setup.checkpoints.clone(),
        setup.run,
        setup.config.checkpoints,
    );
    let side = SessionSide {
        id: setup.id.clone(),
        cwd: setup.cwd.clone(),
        env: setup.env.clone(),
    };
    let profile = ModelProfile::choose(setup.choice.profile, window, &model);
    let small = profile.is_small();
    // A resumed run counts what it did before the stop.
    let (turns, usage, children_usage) = setup.resumed.as_ref().map_or_else(
        || (0, TokenUsage::default(), TokenUsage::default()),
        |r| (r.turns, r.usage, r.children_usage),
    );
    let mut run = Run {
        setup,
        window,
        profile,
        small,
        turns,
        usage,
        health: HealthMonitor::new(),
        specs: Arc::default(),
        toolset: Toolset::default(),
        checkpoints,
        side,
        looped: false,
        children_usage: std::sync::Mutex::new(children_usage),
        stop_blocks: 0,
        repeats: repeats::Repeats::default(),
        writes: Default::default(),
        asked_change: false,
        nudged: false,
        acted: Default::default(),
    };
    run.asked_change = run
        .setup
        .prompt
        .as_deref()
        .is_some_and(asked_change::asks_for_change);
    run.specs = Arc::new(run.offered(tools::specs_for(tools_step::builtins(profile), small)));
    if run.setup.resumed.is_some() {
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

impl<M, E> From<SendError<M, E>> for Gone {
    fn from(_: SendError<M, E>) -> Self {
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
        let mut usage = self.usage;
        usage.add(&self.children_usage());
        let acted = self.acted.load(std::sync::atomic::Ordering::Relaxed);
        RunOutcome {
            stop_reason,
            turns: self.turns,
            truncated,
            usage,
            error,
            nothing_changed: stop_reason == StopReason::Completed && self.asked_change && !acted,
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
            .ask(Push {
                run: self.setup.run,
                message,
                event,
            })
            .await?;
        Ok(())
    }

    async fn drive(&mut self, provider: &Provider, model: &str) -> Result<RunOutcome, Gone> {
        let fresh = self.setup.resumed.is_none();
        // A resumed run first answers the calls the stop left without a result.
        if let Some(resumed) = self.setup.resumed.take()
            && !resumed.calls.is_empty()
        {
            self.refresh_tools().await;
            let results = self.answer_interrupted(resumed).await?;
            self.push(Message::ToolResults { results }, None).await?;
        }
        self.start_hooks().await?;
        // A small model starts with the files the message names already read.
        if fresh
            && self.small
            && let Some(prompt) = self.setup.prompt.clone()
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
                .ask(BeginTurn {
                    run: self.setup.run,
                    compact_prompt: self.small,
                })
                .await?;
            let window = self.window;
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
                turn: self.turns + 1,
            });
            let mut compacted_for_overflow = false;
            let turn = loop {
                match self.call_model(provider, model, &input).await {
                    Ok(turn) => break turn,
                    // A partial reply is never saved.
                    Err(ProviderError::Cancelled) => {
                        return Ok(self.finish(StopReason::Aborted, false, None));
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
            self.turns += 1;
            self.usage.add(&reply.usage);
            let calls: Vec<ToolCall> = reply.tool_calls().into_iter().cloned().collect();
            let event = Event::AssistantMessage {
                turn: self.turns,
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
                cumulative: self.usage,
                cost_micros: self.setup.choice.price.map(|p| p.cost_micros(&self.usage)),
            });
            let signs = self.observe_calls(&calls);

            if self.looped {
                return Ok(self.finish(
                    StopReason::Health,
                    false,
                    Some("stopped: the model's reply repeated the same text over and over; it was cut after the first copy".to_string()),
                ));
            }
            let queued = if calls.is_empty() {
                self.setup.session.ask(NextQueued(self.setup.run)).await?
            } else {
                None
            };
            match next_step(&step_reply, self.turns, self.setup.max_turns, queued) {
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
