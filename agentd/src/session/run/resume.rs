//! A resumed run's first step: every call of the last reply gets a result. Calls that had not
//! begun, and calls that only read, run again; a command, a write, an edit or another MCP call
//! that was under way is never run twice: its result says the daemon stopped while it ran, with
//! what is known now. A `task` call whose child was started waits for that child again.

use std::path::Path;

use serde_json::Value;

use super::calls::result_event;
use protocol::TokenUsage;

use super::{Gone, Run};
use crate::conversation::{ToolCall, ToolResult};

impl Run {
    /// Results for every call of the interrupted reply, in call order.
    pub(super) async fn answer_interrupted(
        &self,
        resumed: Resumed,
    ) -> Result<Vec<ToolResult>, Gone> {
        let Resumed {
            calls,
            mut done,
            started,
            children,
            ..
        } = resumed;
        let mut again = Vec::new();
        let mut rejoined = Vec::new();
        for call in &calls {
            if done.iter().any(|r| r.call_id == call.id) {
                continue;
            }
            // A child that was started goes on (it resumes its own run): wait for it again.
            if let Some((_, child, background)) = children.iter().find(|(c, ..)| *c == call.id) {
                rejoined.push((call, child, *background));
                continue;
            }
            // Setting the plan again sets the same plan: `todo` runs again like a read.
            let again_safe = self.concurrency_safe(&call.name)
                || crate::tools::Tool::from_name(&call.name) == Some(crate::tools::Tool::Todo);
            if !started.contains(&call.id) || again_safe {
                again.push(call.clone());
            } else {
                let result = ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    output: interrupted(call, self.setup.place.cwd()),
                    is_error: true,
                    images: Vec::new(),
                };
                self.emit(result_event(&result, 0));
                done.push(result);
            }
        }
        let waits = rejoined
            .into_iter()
            .map(|(call, child, background)| async move {
                let started = std::time::Instant::now();
                let output = self.rejoin_child(child, background).await;
                let result = ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    output: output.output,
                    is_error: output.is_error,
                    images: output.images,
                };
                self.emit(result_event(&result, started.elapsed().as_millis() as u64));
                result
            });
        done.extend(futures::future::join_all(waits).await);
        done.extend(self.execute(&again).await?);
        Ok(self.answered(&calls, done).await)
    }
}

/// What the model is told of a call that was under way when the daemon stopped.
fn interrupted(call: &ToolCall, cwd: &Path) -> String {
    let args: Value = serde_json::from_str(&call.args).unwrap_or(Value::Null);
    let text = |key: &str| args[key].as_str().map(str::to_string);
    let file = || {
        let path = text("path")?;
        std::fs::read_to_string(cwd.join(&path))
            .ok()
            .map(|content| (path, content))
    };
    let head = "the daemon stopped while this call ran; it was not run again";
    match call.name.as_str() {
        "bash" => format!(
            "{head}, and what the command printed was not kept: check what it did before running it again"
        ),
        "write" => match (file(), text("content")) {
            (Some((path, now)), Some(content)) if now == content => {
                format!("{head}; {path} now holds the new content")
            }
            (Some((path, _)), _) => format!("{head}; {path} does not hold the new content"),
            _ => format!("{head}; the file does not exist"),
        },
        "edit" => match (file(), text("old_string"), text("new_string")) {
            (Some((path, now)), Some(old), Some(new))
                if now.contains(&new) && (!now.contains(&old) || new.contains(&old)) =>
            {
                format!("{head}; {path} holds the edit")
            }
            (Some((path, _)), ..) => format!("{head}; {path} does not hold the edit"),
            _ => format!("{head}; the file cannot be read"),
        },
        _ => format!("{head}: check its effects before calling it again"),
    }
}

/// Where a resumed run stood when the daemon stopped (docs/architecture.md#the-agent-loop).
#[derive(Debug, Clone, Default)]
pub(crate) struct Resumed {
    /// Model replies of the run so far.
    pub(crate) turns: u32,
    /// The calls of the last reply, when it asked for tools and not every call has a result.
    pub(crate) calls: Vec<ToolCall>,
    /// Their results that were in before the stop.
    pub(crate) done: Vec<crate::conversation::ToolResult>,
    /// The calls that had begun (announced, not waiting for permission): run again only when
    /// they only read.
    pub(crate) started: Vec<String>,
    /// The children `task` calls of the last reply started: (call, child, in the background).
    pub(crate) children: Vec<(String, protocol::SessionId, bool)>,
    /// The tokens of the run's model replies so far.
    pub(crate) usage: TokenUsage,
    /// The tokens of the run's subagents in the foreground that finished so far.
    pub(crate) children_usage: TokenUsage,
}
