//! The run's life in the session: starting the loop's task (when the configuration as it stands
//! lets it), the messages the loop sends while it works (events, history, turn input, queued
//! messages; compaction is in [`super::compaction`]), and its end.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use kameo::prelude::*;
use protocol::{
    Decision, Delivery, ErrorInfo, Event, RunId, RunOptions, SessionState, StopReason, TokenUsage,
};
use tokio_util::sync::CancellationToken;

use super::{ActiveRun, SessionActor, SessionPort};
use crate::conversation::Message as HistoryMessage;
use crate::session::run::{self, RunOutcome, RunSetup};
use crate::store::Record;

impl SessionActor {
    /// Starts a run whose first message is `text`, unless the configuration file is broken and
    /// the daemon has no good one: then nothing is stored and the refusal says why.
    pub(super) fn start_run(
        &mut self,
        text: String,
        delivery: Delivery,
        options: RunOptions,
        me: ActorRef<Self>,
    ) -> Result<RunId, ErrorInfo> {
        let warning = self.env.config.borrow().admit_run(options.ignore_config)?;
        self.runs += 1;
        let id = RunId(self.runs);
        let config = self.env.config();
        let max_turns = options
            .max_turns
            .or(self.max_turns)
            .unwrap_or(config.max_turns);
        // What a resumed run needs. Of the client's environment only the providers' addresses
        // are kept (never keys, nor an address with credentials in it): a resumed run talks to
        // the server it talked to, not to whatever the restarting shell names.
        let addresses = options
            .env
            .iter()
            .filter(|(key, value)| key.ends_with("_BASE_URL") && !value.contains('@'))
            .cloned()
            .collect();
        self.record(&Record::Run {
            run: id,
            options: RunOptions {
                env: addresses,
                ..options.clone()
            },
        });
        let (profile, model) = self.run_names(&options);
        let names = config.names(profile, model, &options.env);
        self.emit(Event::RunStarted {
            run: id,
            trigger: delivery,
            max_turns,
            model: names.model.unwrap_or_default(),
            provider: names.provider,
        });
        let text_for_hooks = text.clone();
        self.push_user(text, delivery);
        if self.info.mode == protocol::Mode::Auto
            && !self.sandbox_warned
            && let crate::sandbox::Support::Unavailable(why) = crate::sandbox::support()
        {
            self.sandbox_warned = true;
            self.emit(Event::Error {
                message: format!(
                    "auto mode has no sandbox on this machine ({why}): commands ask, as in default mode"
                ),
            });
        }
        if let Some(message) = warning {
            self.emit(Event::Error { message });
        }
        self.launch(id, options, max_turns, None, Some(text_for_hooks), me);
        Ok(id)
    }

    /// Goes on with a run the daemon did not live to finish: same number, turn count and
    /// limits; the calls the stop left without a result are answered first. (Recovery closed
    /// it instead if the configuration as it stands refuses it.)
    pub(super) fn resume_run(&mut self, resume: super::recovery::Resume, me: ActorRef<Self>) {
        self.runs = self.runs.max(resume.run.0);
        self.emit(Event::RunResumed {
            run: resume.run,
            reason: resume.reason,
        });
        let admitted = self
            .env
            .config
            .borrow()
            .admit_run(resume.options.ignore_config);
        if let Ok(Some(message)) = admitted {
            self.emit(Event::Error { message });
        }
        let resumed = Some(resume.resumed);
        self.launch(
            resume.run,
            resume.options,
            resume.max_turns,
            resumed,
            None,
            me,
        );
    }

    /// The provider profile and model a run with `options` names: the run's own, else the
    /// session's (the configured ones when neither names them).
    pub(super) fn run_names<'a>(
        &'a self,
        options: &'a RunOptions,
    ) -> (Option<&'a str>, Option<&'a str>) {
        let profile = options
            .provider
            .as_deref()
            .or(self.info.provider.as_deref());
        let model = options.model.as_deref().or(self.info.model.as_deref());
        (profile, model)
    }

    /// Starts the loop's task for run `id`.
    fn launch(
        &mut self,
        id: RunId,
        options: RunOptions,
        max_turns: u32,
        resumed: Option<run::Resumed>,
        prompt: Option<String>,
        me: ActorRef<Self>,
    ) {
        let config = self.env.config();
        self.info.state = SessionState::Running;
        // A daemon that comes up finds the runs its predecessor did not finish here.
        self.env.running.started(&self.info.id.0, id.0);
        let cancel = CancellationToken::new();
        let (profile, model) = self.run_names(&options);
        let choice = config.choose(&self.env.http, profile, model, &options.env);
        let subagents = self.task_setup(&options, &config);
        let skill_dirs = crate::skills::directories(&self.cwd(), &self.env.paths.config_dir);
        self.skills = crate::skills::prompt(&crate::skills::discover(&skill_dirs));
        let setup = RunSetup {
            session: SessionPort::new(me.clone()),
            run: id,
            cwd: self.cwd(),
            choice,
            tools: self.env.tools.clone(),
            cancel: cancel.clone(),
            max_turns,
            files: self.files.clone(),
            processes: self.env.processes.clone(),
            env: Arc::new(self.command_env(&config)),
            mcp: self.env.mcp.clone(),
            id: self.info.id.clone(),
            checkpoints: config.checkpoints.enabled.then(|| self.checkpoints.clone()),
            config,
            resumed,
            subagents,
            allowed_tools: self.meta.child.as_ref().and_then(|c| c.tools.clone()),
            prompt,
            subagent: self.meta.child.is_some(),
            stop: self.env.stop.clone(),
        };
        let task = tokio::spawn(async move {
            let outcome = AssertUnwindSafe(run::run(setup))
                .catch_unwind()
                .await
                .unwrap_or_else(|panic| {
                    let text = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    tracing::error!("agent loop panicked: {text}");
                    RunOutcome {
                        stop_reason: StopReason::Error,
                        turns: 0,
                        truncated: false,
                        usage: TokenUsage::default(),
                        error: Some(format!("internal error in the agent loop: {text}")),
                        nothing_changed: false,
                    }
                });
            let _ = me.tell(RunDone { run: id, outcome }).await;
        });
        self.last_options = options.clone();
        self.run = Some(ActiveRun {
            id,
            cancel,
            options,
            started: std::time::Instant::now(),
            _task: task,
        });
        tracing::info!(session = %self.info.id, run = id.0, "run started");
    }
}

/// Emit an event of the run (text deltas, tool calls and results, usage).
pub struct Emit {
    /// The run sending it.
    pub run: RunId,
    /// The event.
    pub event: Event,
}

impl Message<Emit> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: Emit, _: &mut Context<Self, Self::Reply>) {
        // A notice is said once per session.
        if let Event::Notice { text } = &msg.event
            && !self.noticed.insert(text.clone())
        {
            return;
        }
        if self.active(msg.run).is_ok() {
            self.emit(msg.event);
        }
    }
}

/// Append a message to the history, with the event that announces it.
pub struct Push {
    /// The run sending it.
    pub run: RunId,
    /// The message.
    pub message: HistoryMessage,
    /// Its event, if it has one.
    pub event: Option<Event>,
}

impl Message<Push> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: Push, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.active(msg.run)?;
        self.push_message(msg.message);
        if let Some(event) = msg.event {
            self.emit(event);
        }
        Ok(())
    }
}

/// What the next model call sees.
pub struct TurnInput {
    /// The system prompt as of now (the mode may have changed).
    pub system: String,
    /// The history, queued steering included, shared with the session.
    pub messages: Arc<Vec<HistoryMessage>>,
    /// The history's generation (see [`super::ApplyCompaction`]).
    pub generation: u64,
    /// Whether a user asked for compaction.
    pub compact: bool,
    /// The prompt tokens of the last reply, for the compaction threshold.
    pub last_input: u64,
}

/// Deliver queued steering and hand out the next model call's input.
pub struct BeginTurn {
    /// The run asking.
    pub run: RunId,
    /// Whether the model's window is small: the compact system prompt.
    pub compact_prompt: bool,
}

impl Message<BeginTurn> for SessionActor {
    type Reply = Result<TurnInput, ErrorInfo>;

    async fn handle(&mut self, msg: BeginTurn, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.active(msg.run)?;
        let steer = self.queues.take_steer();
        if !steer.is_empty() {
            for text in steer {
                self.push_user(text, Delivery::Steer);
            }
            self.emit_queues();
        }
        Ok(self.turn_input(msg.compact_prompt))
    }
}

/// The run would complete: deliver queued steering, or else the next follow-up.
pub struct NextQueued(pub RunId);

impl Message<NextQueued> for SessionActor {
    /// What was delivered, if anything.
    type Reply = Result<Option<Delivery>, ErrorInfo>;

    async fn handle(&mut self, msg: NextQueued, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.active(msg.0)?;
        let steer = self.queues.take_steer();
        let delivered = if !steer.is_empty() {
            for text in steer {
                self.push_user(text, Delivery::Steer);
            }
            Some(Delivery::Steer)
        } else if let Some(text) = self.queues.take_follow_up() {
            self.push_user(text, Delivery::FollowUp);
            Some(Delivery::FollowUp)
        } else {
            None
        };
        if delivered.is_some() {
            self.emit_queues();
        }
        Ok(delivered)
    }
}

/// The run task ended.
pub struct RunDone {
    /// The run.
    pub run: RunId,
    /// How it ended.
    pub outcome: RunOutcome,
}

impl Message<RunDone> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: RunDone, ctx: &mut Context<Self, Self::Reply>) {
        if self.run.as_ref().map(|r| r.id) != Some(msg.run) {
            return;
        }
        let Some(finished) = self.run.take() else {
            return;
        };
        let outcome = msg.outcome;
        let unanswered: Vec<_> = self.pending.drain().map(|(request, _)| request).collect();
        for request in unanswered {
            self.decided
                .insert(request, "the end of the run".to_string());
            self.emit(Event::PermissionResolved {
                session: None,
                request,
                decision: Decision::Deny,
                by_client: "the end of the run".to_string(),
            });
        }
        // A completed run leaves nothing queued except what arrived after its last look at
        // the queues; that starts the next run below. Any other end returns the queue.
        let returned = if outcome.stop_reason == StopReason::Completed {
            Vec::new()
        } else {
            self.queues.drain()
        };
        if !returned.is_empty() {
            self.emit_queues();
        }
        self.info.state = SessionState::Idle;
        self.env.running.ended(&self.info.id.0, msg.run.0);
        tracing::info!(session = %self.info.id, run = msg.run.0, stop = %outcome.stop_reason, "run finished");
        let outcome_end = outcome.clone();
        self.emit(Event::RunFinished {
            run: msg.run,
            stop_reason: outcome.stop_reason,
            turns: outcome.turns,
            truncated: outcome.truncated,
            usage: outcome.usage,
            returned_messages: returned,
            error: outcome.error,
            nothing_changed: outcome.nothing_changed,
        });
        self.save_meta();
        let duration_ms = finished.started.elapsed().as_millis() as u64;
        self.hand_out_run_end(msg.run, &outcome_end, duration_ms);
        if self.queues.is_empty() {
            self.discard_if_empty();
            return;
        }
        // The next run goes on with the same options (grants, provider settings); refused, it
        // leaves the queue for the next message to deliver.
        let admitted = self
            .env
            .config
            .borrow()
            .admit_run(finished.options.ignore_config);
        if let Err(refused) = admitted {
            self.emit(Event::Error {
                message: refused.message,
            });
            return;
        }
        if let Some((text, delivery)) = self.queues.take_next() {
            self.emit_queues();
            let me = ctx.actor_ref().clone();
            let _ = self.start_run(text, delivery, finished.options, me);
        }
    }
}
