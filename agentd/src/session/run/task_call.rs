//! The `task` tool (SPEC §14): a call makes a child session, starts its run with the prompt,
//! and (unless it runs in the background) waits for its end; the child's final message is
//! the call's result. Children run in parallel up to the session's places
//! (`[subagents] max_parallel`); cancelling the run cancels them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kameo::prelude::*;
use protocol::{Delivery, Event, Mode, RunId, RunOptions, SessionId, TokenUsage};
use serde_json::Value;
use tokio::sync::Semaphore;

use super::{Gone, Run};
use crate::conversation::ToolCall;
use crate::provider::ToolSpec;
use crate::session::SessionActor;
use crate::session::actor::{AdoptChild, AwaitRun, Cancel, SendMessage};
use crate::session::directory::{ChildSpec, Directory};
use crate::subagents::task::{ChildEnd, TaskArgs};
use crate::subagents::{AgentDef, ChildOf, TASK_TOOL, definitions};
use crate::tools::{MAX_OUTPUT_BYTES, ToolOutput, cap};

/// The most characters of a task's description kept (it titles the child session).
const MAX_DESCRIPTION: usize = 100;
/// How long a cancelled child may take to stop before its parent stops waiting.
const CANCEL_GRACE: Duration = Duration::from_secs(30);

/// What a run needs to start subagents.
pub struct TaskSetup {
    /// Where children are made and found.
    pub directory: Arc<dyn Directory>,
    /// The session's places for children running at once.
    pub slots: Arc<Semaphore>,
    /// The session's places for children not finished.
    pub live: Arc<Semaphore>,
    /// The agents a child may follow.
    pub agents: Vec<AgentDef>,
    /// How deep this session nests (0 for a top-level session).
    pub depth: u32,
    /// The session's mode: a child gets no more.
    pub mode: Mode,
    /// The session's model and provider profile.
    pub model: Option<String>,
    /// See `model`.
    pub provider: Option<String>,
    /// The session's environment, without secrets.
    pub env: Vec<(String, String)>,
    /// The run's options (grants, provider settings), which children inherit.
    pub options: RunOptions,
}

impl Run {
    /// The tools offered to the model: `specs` less those a subagent's definition leaves out,
    /// and `task` where this session may start subagents.
    pub(super) fn offered(&self, mut specs: Vec<ToolSpec>) -> Vec<ToolSpec> {
        if let Some(allowed) = &self.setup.allowed_tools {
            specs.retain(|s| allowed.iter().any(|a| a == s.name.as_ref()));
        }
        let task_allowed = self
            .setup
            .allowed_tools
            .as_ref()
            .is_none_or(|a| a.iter().any(|t| t == TASK_TOOL));
        if let Some(task) = &self.setup.subagents
            && task_allowed
            && self.profile.subagents()
        {
            let spec = crate::subagents::task::spec(&task.agents);
            specs.push(if self.small { spec.compact() } else { spec });
        }
        specs
    }

    /// Why a call of `name` may not run in this session, if it may not: a tool a subagent's
    /// definition leaves out, or `task` too deep.
    pub(super) fn not_offered(&self, name: &str) -> Option<ToolOutput> {
        if let Some(allowed) = &self.setup.allowed_tools
            && !allowed.iter().any(|a| a == name)
        {
            return Some(ToolOutput::error(format!(
                "the tool `{name}` is not available to this subagent; it may use: {}",
                allowed.join(", ")
            )));
        }
        if name == TASK_TOOL && self.setup.subagents.is_none() {
            return Some(ToolOutput::error(format!(
                "refused: a subagent may not start subagents of its own here (subagents nest at most {} deep: `[subagents] max_depth`); do the work yourself",
                self.setup.config.subagents.max_depth
            )));
        }
        None
    }

    /// Runs a `task` call: its child's result, or why there is none. `None` when the run was
    /// cancelled before the child started.
    pub(super) async fn run_task(
        &self,
        call: &ToolCall,
        args: Value,
    ) -> Result<Option<ToolOutput>, Gone> {
        let Some(setup) = self.setup.subagents.clone() else {
            return Ok(self.not_offered(TASK_TOOL));
        };
        let args: TaskArgs = match serde_json::from_value(args) {
            Ok(args) => args,
            Err(err) => {
                return Ok(Some(ToolOutput::error(format!(
                    "invalid arguments for task: {err}; give `description` and `prompt`"
                ))));
            }
        };
        let name = args.agent.as_deref().unwrap_or("general");
        let Some(agent) = setup.agents.iter().find(|a| a.name == name) else {
            let names: Vec<&str> = setup.agents.iter().map(|a| a.name.as_str()).collect();
            return Ok(Some(ToolOutput::error(format!(
                "there is no agent `{name}`; the agents are: {}",
                names.join(", ")
            ))));
        };
        if args.prompt.trim().is_empty() {
            return Ok(Some(ToolOutput::error(
                "the prompt is empty: say what the subagent is to do",
            )));
        }
        // Every child not finished holds one of the session's places: a model cannot make
        // children without end.
        let Ok(live) = setup.live.clone().try_acquire_owned() else {
            return Ok(Some(ToolOutput::error(format!(
                "refused: this session already has {} subagents that have not finished (`[subagents] max_children`); wait for their results, or do the work yourself",
                self.setup.config.subagents.children()
            ))));
        };
        // A child in the foreground takes its place before it exists; one in the background
        // exists at once and waits for its place to start.
        let permit = if args.background {
            None
        } else {
            tokio::select! {
                permit = setup.slots.clone().acquire_owned() => permit.ok(),
                () = self.cancel().cancelled() => return Ok(None),
            }
        };
        let (child, actor) = match self.make_child(&setup, call, &args, agent).await {
            Ok(made) => made,
            Err(message) => return Ok(Some(ToolOutput::error(message))),
        };
        let options = child_options(&setup.options, agent);
        if args.background {
            drop(actor);
            let (slots, directory) = (setup.slots.clone(), setup.directory.clone());
            let waiting = child.clone();
            let (parent, parent_options) = (self.setup.id.clone(), setup.options.clone());
            tokio::spawn(async move {
                let child = waiting;
                let _live = live;
                let Ok(_permit) = slots.acquire_owned().await else {
                    return;
                };
                // While it waited, the idle child may have been unloaded (or be unloading): it
                // is looked up (and loaded) again now. The places are held until its run ends.
                let mut started = Err(());
                for _ in 0..3 {
                    let Ok(actor) = directory.lookup(child.clone()).await else {
                        continue;
                    };
                    started = start(&actor, args.prompt.clone(), options.clone())
                        .await
                        .map(|run| (actor, run));
                    if started.is_ok() {
                        break;
                    }
                }
                match started {
                    Ok((actor, Some(run))) => {
                        if let Ok(end) = actor.ask(AwaitRun(run)).await {
                            let _ = end.await;
                        }
                    }
                    _ => {
                        tracing::error!(%child, "a background subagent could not start its run");
                        // Its result was promised: the parent hears that none will come.
                        let text = format!(
                            "<task-notification>\n<task-id>{child}</task-id>\n<status>failed</status>\n<summary>Subagent {child} could not start its run; no result will come</summary>\n</task-notification>"
                        );
                        if let Ok(parent) = directory.lookup(parent).await {
                            let send = SendMessage {
                                text,
                                delivery: Delivery::FollowUp,
                                options: parent_options,
                            };
                            let _ = parent.tell(send).await;
                        }
                    }
                }
            });
            return Ok(Some(ToolOutput::ok(format!(
                "started subagent {child} (agent {}) in the background; its result will arrive \
                 as a message (<task-notification>). Go on with other work meanwhile.",
                agent.name
            ))));
        }
        let run = match start(&actor, args.prompt, options).await {
            Ok(Some(run)) => run,
            Ok(None) | Err(_) => {
                return Ok(Some(ToolOutput::error(format!(
                    "subagent {child} could not start its run"
                ))));
            }
        };
        let output = self.wait_for_child(&child, &actor, run).await;
        drop(permit);
        drop(live);
        Ok(Some(output))
    }

    /// Waits for run `run` of `child` (cancelling it when this run is cancelled) and makes
    /// its end the call's result.
    pub(super) async fn wait_for_child(
        &self,
        child: &SessionId,
        actor: &ActorRef<SessionActor>,
        run: RunId,
    ) -> ToolOutput {
        let started = Instant::now();
        let gone = |why: &str| {
            ToolOutput::error(format!(
                "subagent {child} {why}; `agentctl show {child}` shows what it did"
            ))
        };
        let Ok(mut end) = actor.ask(AwaitRun(run)).await else {
            return gone("cannot be reached");
        };
        let end = tokio::select! {
            end = &mut end => end,
            () = self.cancel().cancelled() => {
                let _ = actor.ask(Cancel).await;
                match tokio::time::timeout(CANCEL_GRACE, end).await {
                    Ok(end) => end,
                    Err(_) => return gone("did not stop in time after the cancel"),
                }
            }
        };
        let Ok(end) = end else {
            return gone("stopped without finishing its run");
        };
        self.child_done(&end, started);
        ToolOutput {
            output: cap(&end.result(), MAX_OUTPUT_BYTES),
            is_error: !end.ok(),
        }
    }

    /// A child in the foreground ended: the views hear of it, and its usage counts in this run.
    fn child_done(&self, end: &ChildEnd, started: Instant) {
        self.emit(Event::SubagentFinished {
            child: end.child.clone(),
            stop_reason: end.stop_reason,
            turns: end.turns,
            usage: end.usage,
            cost_micros: self.setup.choice.price.map(|p| p.cost_micros(&end.usage)),
            duration_ms: started.elapsed().as_millis() as u64,
        });
        let mut usage = self
            .children_usage
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        usage.add(&end.usage);
    }

    /// Makes the child session and tells this session of it.
    async fn make_child(
        &self,
        setup: &TaskSetup,
        call: &ToolCall,
        args: &TaskArgs,
        agent: &AgentDef,
    ) -> Result<(SessionId, ActorRef<SessionActor>), String> {
        let spec = ChildSpec {
            cwd: self.setup.cwd.to_string_lossy().into_owned(),
            mode: definitions::child_mode(setup.mode, agent.mode),
            model: agent.model.clone().or(setup.model.clone()),
            provider: setup.provider.clone(),
            env: setup.env.clone(),
            max_turns: agent.max_turns,
            worktree: agent.worktree,
            child: ChildOf {
                parent: self.setup.id.0.clone(),
                depth: setup.depth + 1,
                call: call.id.clone(),
                agent: agent.name.clone(),
                description: args.description.chars().take(MAX_DESCRIPTION).collect(),
                background: args.background,
                tools: agent.tools.clone(),
                instructions: agent.body.clone(),
            },
        };
        let info = setup
            .directory
            .create_child(spec)
            .await
            .map_err(|e| format!("cannot start the subagent: {}", e.message))?;
        let actor = setup
            .directory
            .lookup(info.id.clone())
            .await
            .map_err(|e| format!("cannot load the subagent {}: {}", info.id, e.message))?;
        self.setup
            .session
            .ask(AdoptChild {
                child: info.id.clone(),
                actor: actor.downgrade(),
                description: args.description.chars().take(MAX_DESCRIPTION).collect(),
                run: self.setup.run,
                started: Event::SubagentStarted {
                    call: call.id.clone(),
                    child: info.id.clone(),
                    description: args.description.chars().take(MAX_DESCRIPTION).collect(),
                    agent: agent.name.clone(),
                    background: args.background,
                },
            })
            .await
            .map_err(|_| "the session is closing".to_string())?;
        Ok((info.id, actor))
    }

    /// Tokens of this run's children so far.
    pub(super) fn children_usage(&self) -> TokenUsage {
        *self
            .children_usage
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Goes on waiting for a child a `task` call of a resumed run started before the daemon
    /// stopped (the child resumes its own run).
    pub(super) async fn rejoin_child(&self, child: &SessionId, background: bool) -> ToolOutput {
        if background {
            return ToolOutput::ok(format!(
                "started subagent {child} in the background; its result will arrive as a message"
            ));
        }
        let Some(setup) = &self.setup.subagents else {
            return ToolOutput::error(format!("subagent {child} cannot be reached"));
        };
        match setup.directory.lookup(child.clone()).await {
            // Its first run is the task's.
            Ok(actor) => self.wait_for_child(child, &actor, RunId(1)).await,
            Err(err) => ToolOutput::error(format!(
                "subagent {child} cannot be reached: {}",
                err.message
            )),
        }
    }
}

/// The options of a child's run: its parent's grants and provider settings, its agent's
/// model and turn limit.
fn child_options(parent: &RunOptions, agent: &AgentDef) -> RunOptions {
    RunOptions {
        max_turns: agent.max_turns.or(parent.max_turns),
        grants: parent.grants.clone(),
        deny_unanswered: parent.deny_unanswered,
        model: agent.model.clone().or(parent.model.clone()),
        provider: parent.provider.clone(),
        env: parent.env.clone(),
        ignore_config: parent.ignore_config,
    }
}

/// Starts the child's run with `prompt`.
async fn start(
    actor: &ActorRef<SessionActor>,
    prompt: String,
    options: RunOptions,
) -> Result<Option<RunId>, ()> {
    actor
        .ask(SendMessage {
            text: prompt,
            delivery: Delivery::FollowUp,
            options,
        })
        .await
        .map_err(|_| ())
}
