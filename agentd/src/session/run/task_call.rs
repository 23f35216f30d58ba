//! The `task` tool (docs/architecture.md#subagents): a call makes a child session, starts its run
//! with the prompt, and (unless it runs in the background) waits for its end; the child's final
//! message is the call's result. Children run in parallel up to the session's places (`[subagents]
//! max_parallel`); cancelling the run cancels them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use protocol::{Delivery, Event, Mode, RunId, RunOptions, SessionId, TokenUsage};
use serde_json::Value;
use tokio::sync::{Semaphore, oneshot};

use super::{ChildSpec, Gone, PortError, Run, SessionPort};
use crate::conversation::ToolCall;
use crate::provider::ToolSpec;
use crate::subagents::task::{ChildEnd, TaskArgs};
use crate::subagents::{AgentDef, ChildOf, TASK_TOOL, definitions};
use crate::tools::{MAX_OUTPUT_BYTES, ToolOutput, cap};

/// The most characters of a task's description kept (it titles the child session).
const MAX_DESCRIPTION: usize = 100;
/// How long a cancelled child may take to stop before its parent stops waiting.
const CANCEL_GRACE: Duration = Duration::from_secs(30);

/// What a run needs to start subagents.
pub(crate) struct TaskSetup {
    /// The session's places for children running at once.
    pub(crate) slots: Arc<Semaphore>,
    /// The session's places for children not finished.
    pub(crate) live: Arc<Semaphore>,
    /// The agents a child may follow.
    pub(crate) agents: Vec<AgentDef>,
    /// How deep this session nests (0 for a top-level session).
    pub(crate) depth: u32,
    /// The session's mode: a child gets no more.
    pub(crate) mode: Mode,
    /// The session's model and provider profile.
    pub(crate) model: Option<String>,
    /// See `model`.
    pub(crate) provider: Option<String>,
    /// The session's environment, without secrets.
    pub(crate) env: Vec<(String, String)>,
    /// The run's options (grants, provider settings), which children inherit.
    pub(crate) options: RunOptions,
}

impl Run {
    /// The tools offered to the model: `specs` less those a subagent's definition leaves out,
    /// and `task` where this session may start subagents.
    pub(super) fn offered(&self, mut specs: Vec<ToolSpec>) -> Vec<ToolSpec> {
        if let Some(allowed) = &self.setup.nesting.allowed_tools {
            specs.retain(|s| allowed.iter().any(|a| a == s.name.as_ref()));
        }
        let task_allowed = self
            .setup
            .nesting
            .allowed_tools
            .as_ref()
            .is_none_or(|a| a.iter().any(|t| t == TASK_TOOL));
        if let Some(task) = &self.setup.nesting.children
            && task_allowed
            && self.harness.profile.subagents()
        {
            let spec = crate::subagents::task::spec(&task.agents);
            specs.push(if self.harness.small {
                spec.compact()
            } else {
                spec
            });
        }
        specs
    }

    /// Why a call of `name` may not run in this session, if it may not: a tool a subagent's
    /// definition leaves out, or `task` too deep.
    pub(super) fn not_offered(&self, name: &str) -> Option<ToolOutput> {
        if let Some(allowed) = &self.setup.nesting.allowed_tools
            && !allowed.iter().any(|a| a == name)
        {
            return Some(ToolOutput::error(format!(
                "the tool `{name}` is not available to this subagent; it may use: {}",
                allowed.join(", ")
            )));
        }
        if name == TASK_TOOL && self.setup.nesting.children.is_none() {
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
        let Some(setup) = self.setup.nesting.children.clone() else {
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
        let child = match self.make_child(&setup, call, &args, agent).await {
            Ok(child) => child,
            Err(message) => return Ok(Some(ToolOutput::error(message))),
        };
        let options = child_options(&setup.options, agent);
        if args.background {
            let (slots, session) = (setup.slots.clone(), self.setup.session.clone());
            let waiting = child.clone();
            let (parent, parent_options) = (self.setup.place.id().clone(), setup.options.clone());
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
                    started = start(&session, &child, args.prompt.clone(), options.clone()).await;
                    if started.is_ok() {
                        break;
                    }
                }
                match started {
                    Ok(Some(run)) => {
                        if let Ok(end) = session.await_run(child.clone(), run).await {
                            let _ = end.await;
                        }
                    }
                    _ => {
                        tracing::error!(%child, "a background subagent could not start its run");
                        // Its result was promised: the parent hears that none will come.
                        let text = format!(
                            "<task-notification>\n<task-id>{child}</task-id>\n<status>failed</status>\n<summary>Subagent {child} could not start its run; no result will come</summary>\n</task-notification>"
                        );
                        let _ = session
                            .send_message(parent, text, Delivery::FollowUp, parent_options)
                            .await;
                    }
                }
            });
            return Ok(Some(ToolOutput::ok(format!(
                "started subagent {child} (agent {}) in the background; its result will arrive \
                 as a message (<task-notification>). Go on with other work meanwhile.",
                agent.name
            ))));
        }
        let run = match start(&self.setup.session, &child, args.prompt, options).await {
            Ok(Some(run)) => run,
            Ok(None) | Err(_) => {
                return Ok(Some(ToolOutput::error(format!(
                    "subagent {child} could not start its run"
                ))));
            }
        };
        let output = self.wait_for_child(&child, run).await;
        drop(permit);
        drop(live);
        Ok(Some(output))
    }

    /// Waits for run `run` of `child` (cancelling it when this run is cancelled) and makes
    /// its end the call's result.
    pub(super) async fn wait_for_child(&self, child: &SessionId, run: RunId) -> ToolOutput {
        let started = Instant::now();
        match self.setup.session.await_run(child.clone(), run).await {
            Ok(end) => self.wait_for_end(child, end, started).await,
            Err(_) => unreachable_child(child, "cannot be reached"),
        }
    }

    /// Waits for `end`, the end of a run of `child` that began to be awaited at `started`
    /// (cancelling the child when this run is cancelled), and makes it the call's result.
    async fn wait_for_end(
        &self,
        child: &SessionId,
        mut end: oneshot::Receiver<ChildEnd>,
        started: Instant,
    ) -> ToolOutput {
        let gone = |why: &str| unreachable_child(child, why);
        let end = tokio::select! {
            end = &mut end => end,
            () = self.cancel().cancelled() => {
                let _ = self.setup.session.cancel_child(child.clone()).await;
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
            images: Vec::new(),
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
            .tally
            .children_usage
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        usage.add(&end.usage);
    }

    /// Makes the child session; this session adopts it.
    async fn make_child(
        &self,
        setup: &TaskSetup,
        call: &ToolCall,
        args: &TaskArgs,
        agent: &AgentDef,
    ) -> Result<SessionId, String> {
        let spec = ChildSpec {
            cwd: self.setup.place.cwd().to_string_lossy().into_owned(),
            mode: definitions::child_mode(setup.mode, agent.mode),
            model: agent.model.clone().or(setup.model.clone()),
            provider: setup.provider.clone(),
            env: setup.env.clone(),
            max_turns: agent.max_turns,
            worktree: agent.worktree,
            child: ChildOf {
                parent: self.setup.place.id().0.clone(),
                depth: setup.depth + 1,
                call: call.id.clone(),
                agent: agent.name.clone(),
                description: args.description.chars().take(MAX_DESCRIPTION).collect(),
                background: args.background,
                tools: agent.tools.clone(),
                instructions: agent.body.clone(),
            },
        };
        match self.setup.session.make_child(self.setup.run, spec).await {
            Ok(child) => Ok(child),
            Err(PortError::Refused(err)) => Err(err.message),
            Err(PortError::Gone) => Err("the session is closing".to_string()),
        }
    }

    /// Tokens of this run's children so far.
    pub(super) fn children_usage(&self) -> TokenUsage {
        *self
            .tally
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
        if self.setup.nesting.children.is_none() {
            return ToolOutput::error(format!("subagent {child} cannot be reached"));
        }
        let started = Instant::now();
        // Its first run is the task's.
        match self.setup.session.await_run(child.clone(), RunId(1)).await {
            Ok(end) => self.wait_for_end(child, end, started).await,
            Err(PortError::Refused(err)) => ToolOutput::error(format!(
                "subagent {child} cannot be reached: {}",
                err.message
            )),
            Err(PortError::Gone) => unreachable_child(child, "cannot be reached"),
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

/// Starts the run of `child` with `prompt`.
async fn start(
    session: &SessionPort,
    child: &SessionId,
    prompt: String,
    options: RunOptions,
) -> Result<Option<RunId>, ()> {
    session
        .send_message(child.clone(), prompt, Delivery::FollowUp, options)
        .await
        .map_err(|_| ())
}

/// The result of a call whose child `child` cannot be waited for, and `why`.
fn unreachable_child(child: &SessionId, why: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "subagent {child} {why}; `agentctl show {child}` shows what it did"
    ))
}
