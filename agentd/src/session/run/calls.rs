//! One reply's tool calls: batched by concurrency safety, each checked (the tool exists, its
//! arguments parse, the permission) and run on the tool pool, a built-in tool or an MCP
//! server's, with one result per call in call order.

use std::sync::Arc;
use std::time::Instant;

use protocol::Event;

use super::hooks::Hooked;
use super::{Authorization, CallToCheck, Gone, Run};
use crate::conversation::{ToolCall, ToolResult};
use crate::mcp::McpTool;
use crate::permission::ToolRef;
use crate::stop::RunningCall;
use crate::tools::gate::EffectGate;
use crate::tools::progress::Progress;
use crate::tools::{self, Tool, ToolContext, ToolOutput, batch};

/// Stops a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Run {
    /// Sends what `progress` gathered as `ToolOutput` events of call `id`, ten times a second,
    /// until dropped.
    fn output_ticker(&self, id: &str, progress: Progress) -> AbortOnDrop {
        let (session, run, id) = (self.setup.session.clone(), self.setup.run, id.to_string());
        AbortOnDrop(tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_millis(100));
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                every.tick().await;
                progress.deliver(|text, omitted| {
                    let event = Event::ToolOutput {
                        id: id.clone(),
                        text,
                        omitted,
                    };
                    session.emit(run, event);
                });
            }
        }))
    }

    /// Orders `done` by call and answers every call without a result with `reason`, so that
    /// each call in the history has exactly one result.
    pub(super) fn fill(
        &self,
        calls: &[ToolCall],
        done: Vec<ToolResult>,
        reason: &str,
    ) -> Vec<ToolResult> {
        calls
            .iter()
            .map(|call| match done.iter().find(|r| r.call_id == call.id) {
                Some(result) => result.clone(),
                None => {
                    let result = ToolResult {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        output: reason.to_string(),
                        is_error: true,
                        images: Vec::new(),
                    };
                    self.emit(result_event(&result, 0));
                    result
                }
            })
            .collect()
    }

    /// Runs the calls batch by batch; a batch of concurrency-safe calls runs in parallel. Calls
    /// not started before a cancel or a planned stop are left without a result.
    pub(super) async fn execute(&self, calls: &[ToolCall]) -> Result<Vec<ToolResult>, Gone> {
        let mut results = Vec::with_capacity(calls.len());
        let safe = |name: &str| self.concurrency_safe(name);
        for batch in batch::partition(calls.iter().map(|c| c.name.as_str()), safe) {
            if self.cancel().is_cancelled() || self.stopping() {
                break;
            }
            self.checkpoint_before(batch.calls.iter().map(|&i| calls[i].name.as_str()))
                .await;
            // Counted before the stop is looked at: a planned stop waits for these calls, or
            // they do not start.
            let running: Vec<RunningCall> =
                batch.calls.iter().map(|_| self.setup.stop.call()).collect();
            if self.stopping() {
                break;
            }
            // A batch's calls are announced together, before any of them runs.
            for &i in &batch.calls {
                self.emit(Event::ToolCall(calls[i].info()));
            }
            let runs = batch
                .calls
                .iter()
                .zip(running)
                .map(|(&i, running)| self.execute_one(&calls[i], running));
            for result in futures::future::join_all(runs).await {
                if let Some(result) = result? {
                    results.push(result);
                }
            }
        }
        Ok(results)
    }

    /// Runs one (announced) call after its permission check; `None` when the run was
    /// cancelled first, or a planned stop came while it waited for permission. Its duration
    /// counts from when it begins to run: not the wait for permission, nor for an executor.
    async fn execute_one(
        &self,
        call: &ToolCall,
        running: RunningCall,
    ) -> Result<Option<ToolResult>, Gone> {
        // A planned stop waits for the call until its result is stored.
        let mut running = Some(running);
        let mut began = None;
        let mut hooked = Hooked::default();
        // Whether the call changed a file or ran something: a command, a subagent, or a
        // server's tool not marked read-only.
        let mut acted = false;
        let output = match self.prepare(call, &mut hooked, &mut running).await? {
            // The plan is the session's: the loop sets it, no executor is needed.
            Prepared::Run(Target::Builtin(Tool::Todo), args, _) => {
                began = Some(Instant::now());
                self.update_plan(args)
            }
            Prepared::Run(target, args, confinement) => {
                let began_at = Arc::new(std::sync::OnceLock::new());
                let gate = Arc::new(EffectGate::new());
                // A command's output goes to the views as it comes, until its result does.
                let mut _ticker = None;
                let mut streamed = None;
                let job: tools::pool::ToolJob = match target {
                    Target::Builtin(tool) => {
                        acted = tool == Tool::Bash;
                        let progress = (tool == Tool::Bash).then(Progress::default);
                        _ticker = progress.clone().map(|p| self.output_ticker(&call.id, p));
                        streamed = progress.clone();
                        let ctx = ToolContext {
                            cwd: self.setup.place.cwd().to_path_buf(),
                            cancel: self.cancel().clone(),
                            bash_timeout: self.setup.config.bash_timeout(),
                            files: self.setup.place.files.clone(),
                            gate: gate.clone(),
                            processes: self.setup.place.processes.clone(),
                            env: self.setup.place.env().clone(),
                            sandbox: confinement.sandbox,
                            hidden: confinement.hidden,
                            target: confinement.target,
                            progress,
                            shells: self.setup.place.shells.clone(),
                            web: crate::web::WebCall {
                                web: self.setup.place.web.clone(),
                                reach: confinement
                                    .reach
                                    .unwrap_or_else(|| Arc::new(crate::web::NoRules)),
                                search: self.setup.place.search.clone(),
                                timeout: self.setup.config.web.timeout(),
                            },
                            images: self.setup.place.images.clone(),
                            lsp: Some(self.setup.place.lsp.clone()),
                        };
                        Box::pin(tools::execute(tool, args, ctx))
                    }
                    Target::Mcp(tool) => {
                        acted = !tool.read_only;
                        let (hub, side, cancel) = (
                            self.setup.place.mcp.clone(),
                            self.setup.place.side.clone(),
                            self.cancel().clone(),
                        );
                        Box::pin(async move { hub.call(&side, &tool, args, &cancel).await })
                    }
                };
                let job: tools::pool::ToolJob = {
                    let began_at = began_at.clone();
                    Box::pin(async move {
                        let _ = began_at.set(Instant::now());
                        job.await
                    })
                };
                // A call overtaken by a cancel while it waited for an executor never starts.
                let output = self.setup.place.tools.run(job, self.cancel(), gate).await;
                began = began_at.get().copied();
                // No piece of output may follow the result.
                if let Some(progress) = &streamed {
                    progress.close();
                }
                drop(_ticker);
                match output {
                    Some(output) => {
                        // A write or edit acted only when it changed the file.
                        acted |= matches!(call.name.as_str(), "write" | "edit") && !output.is_error;
                        output
                    }
                    None => return Ok(None),
                }
            }
            Prepared::Task(args) => {
                // A planned stop waits for the subagent's own calls, not for the subagent;
                // one not started yet starts in the next daemon.
                drop(running.take());
                if self.stopping() {
                    return Ok(None);
                }
                began = Some(Instant::now());
                acted = true;
                match self.run_task(call, args).await? {
                    Some(output) => output,
                    None => return Ok(None),
                }
            }
            Prepared::Refused(output) => output,
            Prepared::Interrupted => return Ok(None),
        };
        if acted {
            self.changes
                .acted
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let ran_ms = began.map_or(0, |at| at.elapsed().as_millis() as u64);
        let output = self.after_tool(call, hooked, output).await;
        let output = self.changes.writes.landed(call, output, self.harness.small);
        let output = self.guards.repeats.answer(call, self.tally.turns, output);
        let result = ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            output: output.output,
            is_error: output.is_error,
            images: output.images,
        };
        self.emit(result_event(&result, ran_ms));
        drop(running);
        Ok(Some(result))
    }

    /// Checks the tool, its arguments and the permission to run it. While it waits for a
    /// person's answer the call does not count as `running` for a planned stop.
    async fn prepare(
        &self,
        call: &ToolCall,
        hooked: &mut Hooked,
        running: &mut Option<RunningCall>,
    ) -> Result<Prepared, Gone> {
        if let Some(refused) = self
            .not_offered(&call.name)
            .or_else(|| self.changes.writes.echo(call))
        {
            return Ok(Prepared::Refused(refused));
        }
        let target = match Tool::from_name(&call.name) {
            // A subagent does its own asking; starting one asks nothing.
            None if call.name == crate::subagents::TASK_TOOL => {
                return Ok(match call.args_json() {
                    Ok(args) if args.is_object() => {
                        match self.before_tool(call, args, hooked).await {
                            Ok(args) => Prepared::Task(args),
                            Err(refused) => Prepared::Refused(refused),
                        }
                    }
                    _ => Prepared::Refused(ToolOutput::error(
                        "the arguments must be a JSON object with `description` and `prompt`",
                    )),
                });
            }
            Some(tool) => Target::Builtin(tool),
            None => match self.harness.toolset.get(&call.name) {
                Some(tool) => Target::Mcp(Box::new(tool.clone())),
                // A server that was down when the turn began may be back (or say why not).
                None => match self
                    .setup
                    .place
                    .mcp
                    .find(&self.setup.place.side, &call.name, self.cancel())
                    .await
                {
                    Some(Ok(tool)) => Target::Mcp(Box::new(tool)),
                    Some(Err(output)) => return Ok(Prepared::Refused(output)),
                    None => {
                        let offered = self.harness.specs.iter().map(|s| &*s.name);
                        return Ok(Prepared::Refused(tools::unknown_tool(&call.name, offered)));
                    }
                },
            },
        };
        let args = match call.args_json() {
            Ok(args) if args.is_object() => args,
            Ok(_) => {
                return Ok(Prepared::Refused(ToolOutput::error(
                    "the arguments must be a JSON object",
                )));
            }
            Err(err) => {
                return Ok(Prepared::Refused(ToolOutput::error(format!(
                    "the arguments are not valid JSON ({err}); send the call again"
                ))));
            }
        };
        let args = match self.before_tool(call, args, hooked).await {
            Ok(args) => args,
            Err(refused) => return Ok(Prepared::Refused(refused)),
        };
        if self.cancel().is_cancelled() {
            return Ok(Prepared::Interrupted);
        }
        let check = CallToCheck {
            tool: target.permission(),
            args: args.clone(),
            call: call.info(),
            hook: hooked.permission,
        };
        let authorization = self.setup.session.authorize(self.setup.run, check).await?;
        let confinement = authorization.confinement;
        let decision = match authorization.authorization {
            Authorization::Allowed => return Ok(Prepared::Run(target, args, confinement)),
            Authorization::Denied(reason) => {
                return Ok(Prepared::Refused(ToolOutput::error(reason)));
            }
            Authorization::Pending(request, answer, plain) => {
                drop(running.take());
                self.asking_hooks(call, &args, request, plain).await?;
                let timeout = self.setup.config.permission_timeout();
                let expired = async {
                    match timeout {
                        Some(after) => tokio::time::sleep(after).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    decision = answer => {
                        *running = Some(self.setup.stop.call());
                        decision
                    }
                    () = self.cancel().cancelled() => return Ok(Prepared::Interrupted),
                    // Asked again in the next daemon: a planned stop does not wait for a person.
                    () = self.setup.stop.asked() => return Ok(Prepared::Interrupted),
                    () = expired => {
                        self.setup.session.expire(request).await?;
                        return Ok(Prepared::Refused(ToolOutput::error(format!(
                            "denied: nobody answered the permission request within {} s",
                            timeout.unwrap_or_default().as_secs()
                        ))));
                    }
                }
            }
        };
        Ok(match decision {
            Ok(protocol::Decision::Allow | protocol::Decision::AllowAlways) => {
                Prepared::Run(target, args, confinement)
            }
            Ok(protocol::Decision::Deny) | Err(_) => Prepared::Refused(ToolOutput::error(
                "denied: the user did not allow this call",
            )),
        })
    }
}

/// What a call runs: a built-in tool or an MCP server's.
enum Target {
    Builtin(Tool),
    Mcp(Box<McpTool>),
}

impl Target {
    /// What the permission check is told of the tool.
    fn permission(&self) -> ToolRef {
        match self {
            Target::Builtin(tool) => ToolRef::Builtin(*tool),
            Target::Mcp(tool) => ToolRef::Mcp {
                server: tool.server.clone(),
                tool: tool.tool.clone(),
                allowed: tool.allowed,
            },
        }
    }
}

/// A call ready to run, refused, or overtaken by a cancel.
enum Prepared {
    Run(Target, serde_json::Value, crate::sandbox::Confinement),
    /// A `task` call, run by the loop itself (it waits for a child, not an executor).
    Task(serde_json::Value),
    Refused(ToolOutput),
    Interrupted,
}

pub(super) fn result_event(result: &ToolResult, duration_ms: u64) -> Event {
    Event::ToolResult {
        id: result.call_id.clone(),
        name: result.name.clone(),
        is_error: result.is_error,
        output: result.output.clone(),
        duration_ms,
        images: result.images.clone(),
    }
}
