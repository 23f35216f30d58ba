//! The run's life in the session: starting the loop's task, the messages the loop sends while
//! it works (events, history, turn input, queued messages, compaction), and its end.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use kameo::prelude::*;
use protocol::{
    Decision, Delivery, ErrorCode, ErrorInfo, Event, RunId, RunOptions, SessionState, StopReason,
    TokenUsage,
};
use tokio_util::sync::CancellationToken;

use super::{ActiveRun, SessionActor};
use crate::history::Message as HistoryMessage;
use crate::session::run::{self, RunOutcome, RunSetup};
use crate::store::Record;

impl SessionActor {
    /// The environment of the session's commands: its client's, or (for a session created
    /// without one) the daemon's, without secrets.
    fn command_env(&self, config: &crate::config::Config) -> Vec<(String, String)> {
        if self.client_env.is_empty() {
            config.shell_env.for_commands(&crate::shell_env::current())
        } else {
            config.shell_env.for_commands(&self.client_env)
        }
    }

    /// Starts a run whose first message is `text`.
    pub(super) fn start_run(
        &mut self,
        text: String,
        delivery: Delivery,
        options: RunOptions,
        me: ActorRef<Self>,
    ) -> RunId {
        self.runs += 1;
        let id = RunId(self.runs);
        let config = self.env.config();
        let max_turns = options
            .max_turns
            .or(self.max_turns)
            .unwrap_or(config.max_turns);
        self.emit(Event::RunStarted {
            run: id,
            trigger: delivery,
            max_turns,
        });
        self.push_user(text, delivery);
        self.info.state = SessionState::Running;
        let cancel = CancellationToken::new();
        let provider = config.provider(
            &self.env.http,
            options
                .provider
                .as_deref()
                .or(self.info.provider.as_deref()),
            options.model.as_deref().or(self.info.model.as_deref()),
            &options.env,
        );
        let context_window = config.context_window(
            options
                .provider
                .as_deref()
                .or(self.info.provider.as_deref()),
            provider.as_ref().map_or("", |(_, model)| model.as_str()),
        );
        let setup = RunSetup {
            session: me.clone(),
            run: id,
            cwd: self.cwd(),
            provider,
            tools: self.env.tools.clone(),
            cancel: cancel.clone(),
            max_turns,
            max_tokens: config.max_tokens,
            bash_timeout: config.bash_timeout(),
            permission_timeout: config.permission_timeout(),
            files: self.files.clone(),
            retry: config.retry_policy(),
            context_window,
            compaction: config.compaction,
            processes: self.env.processes.clone(),
            env: Arc::new(self.command_env(&config)),
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
                    }
                });
            let _ = me.tell(RunDone { run: id, outcome }).await;
        });
        self.last_options = options.clone();
        self.run = Some(ActiveRun {
            id,
            cancel,
            options,
            _task: task,
        });
        tracing::info!(session = %self.info.id, run = id.0, "run started");
        id
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
    /// The history, queued steering included.
    pub messages: Vec<HistoryMessage>,
    /// Whether a user asked for compaction.
    pub compact: bool,
    /// The prompt tokens of the last reply, for the compaction threshold.
    pub last_input: u64,
}

/// Replace the older history by a summary (compaction).
pub struct ApplyCompaction {
    /// The run that compacted, or `None` for a compaction asked for on an idle session.
    pub run: Option<RunId>,
    /// The summary.
    pub summary: String,
    /// Messages kept verbatim at the end.
    pub keep_last: usize,
}

impl Message<ApplyCompaction> for SessionActor {
    /// The next model call's input after compaction.
    type Reply = Result<TurnInput, ErrorInfo>;

    async fn handle(
        &mut self,
        msg: ApplyCompaction,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        match msg.run {
            Some(run) => {
                self.active(run)?;
            }
            None if self.run.is_some() => {
                return Err(ErrorInfo::new(
                    ErrorCode::Busy,
                    "a run started while compacting; compact again later",
                ));
            }
            None => {}
        }
        let before_tokens = crate::compact::estimate_all(&self.history);
        self.record(&Record::Compaction {
            summary: msg.summary.clone(),
            keep_last: msg.keep_last,
        });
        self.replace_history(msg.summary, msg.keep_last);
        self.compact_requested = false;
        let after_tokens = crate::compact::estimate_all(&self.history);
        self.emit(Event::Compacted {
            before_tokens,
            after_tokens,
        });
        Ok(self.turn_input())
    }
}

/// Compact the history now (or, while a run is going, before its next model call).
pub struct CompactNow;

impl Message<CompactNow> for SessionActor {
    type Reply = DelegatedReply<Result<(), ErrorInfo>>;

    async fn handle(&mut self, _: CompactNow, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if self.run.is_some() {
            self.compact_requested = true;
            return ctx.reply(Ok(()));
        }
        let input = self.turn_input();
        let Some(cut) =
            crate::compact::cut_point(&input.messages, crate::compact::KEEP_RECENT_TOKENS)
        else {
            return ctx.reply(Err(ErrorInfo::new(
                ErrorCode::InvalidRequest,
                "the history is short enough; there is nothing to compact",
            )));
        };
        let config = self.env.config();
        let provider = config.provider(
            &self.env.http,
            self.last_options
                .provider
                .as_deref()
                .or(self.info.provider.as_deref()),
            self.last_options
                .model
                .as_deref()
                .or(self.info.model.as_deref()),
            &self.last_options.env,
        );
        let me = ctx.actor_ref().clone();
        ctx.spawn(async move {
            let (provider, model) =
                provider.map_err(|e| ErrorInfo::new(ErrorCode::InvalidRequest, e.to_string()))?;
            let specs = crate::tools::specs();
            let summary = crate::compact::summarize(
                &provider,
                &model,
                &input.system,
                &specs,
                &input.messages[..cut],
                &CancellationToken::new(),
            )
            .await
            .map_err(|e| ErrorInfo::new(ErrorCode::Internal, format!("compaction failed: {e}")))?;
            let apply = ApplyCompaction {
                run: None,
                summary,
                keep_last: input.messages.len() - cut,
            };
            match me.ask(apply).await {
                Ok(_) => Ok(()),
                Err(SendError::HandlerError(err)) => Err(err),
                Err(err) => Err(ErrorInfo::new(ErrorCode::Internal, err.to_string())),
            }
        })
    }
}

/// Deliver queued steering and hand out the next model call's input.
pub struct BeginTurn(pub RunId);

impl Message<BeginTurn> for SessionActor {
    type Reply = Result<TurnInput, ErrorInfo>;

    async fn handle(&mut self, msg: BeginTurn, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.active(msg.0)?;
        let steer = self.queues.take_steer();
        if !steer.is_empty() {
            for text in steer {
                self.push_user(text, Delivery::Steer);
            }
            self.emit_queues();
        }
        Ok(self.turn_input())
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
        for (request, _) in self.pending.drain() {
            self.decided
                .insert(request, "the end of the run".to_string());
            self.log.emit(Event::PermissionResolved {
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
        tracing::info!(session = %self.info.id, run = msg.run.0, stop = %outcome.stop_reason, "run finished");
        self.emit(Event::RunFinished {
            run: msg.run,
            stop_reason: outcome.stop_reason,
            turns: outcome.turns,
            truncated: outcome.truncated,
            usage: outcome.usage,
            returned_messages: returned,
            error: outcome.error,
        });
        self.save_meta();
        if let Some((text, delivery)) = self.queues.take_next() {
            self.emit_queues();
            let me = ctx.actor_ref().clone();
            // The next run goes on with the same options (grants, provider settings).
            self.start_run(text, delivery, finished.options, me);
        }
    }
}
