//! The `task` tool as the model sees it: its description (listing the agents), its arguments,
//! and the texts of its results and of a background child's notification.

use protocol::{SessionId, StopReason, TokenUsage};
use serde::Deserialize;
use serde_json::json;

use super::{AgentDef, TASK_TOOL};
use crate::provider::ToolSpec;

/// The most bytes of agent listing in the tool's description.
const MAX_LISTING: usize = 8 * 1024;

/// The arguments of `task`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskArgs {
    /// A few words saying what the child does, for the views.
    pub(crate) description: String,
    /// Everything the child needs to know: it sees nothing else.
    pub(crate) prompt: String,
    /// The agent definition to follow; `general` when absent.
    #[serde(default, alias = "subagent_type")]
    pub(crate) agent: Option<String>,
    /// Return at once; the result comes later as a message.
    #[serde(default, alias = "run_in_background")]
    pub(crate) background: bool,
}

/// What the model is told of `task`, with the agents it may start.
pub(crate) fn spec(agents: &[AgentDef]) -> ToolSpec {
    let mut listing = String::new();
    for agent in agents {
        let line = format!(
            "- {}: {}\n",
            agent.name,
            agent.description.replace('\n', " ")
        );
        if listing.len() + line.len() > MAX_LISTING {
            listing.push_str("- (more agents are defined; their descriptions did not fit)\n");
            break;
        }
        listing.push_str(&line);
    }
    let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
    ToolSpec {
        name: TASK_TOOL.into(),
        description: format!(
            "Start a subagent: a separate agent with its own context that carries out one task \
             and answers with its final message, which becomes this call's result. Use it for \
             work whose details you do not need (searching a large code base, a self-contained \
             change) and to do independent tasks in parallel (several task calls in one reply). \
             The subagent sees only `prompt`: give it everything it needs, and say what its \
             answer must contain. With `background: true` the call returns at once and the \
             result arrives later as a message.\n\nAgents:\n{listing}"
        )
        .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "What the subagent does, in 3 to 5 words."},
                "prompt": {"type": "string", "description": "The whole task, with the context the subagent needs."},
                "agent": {"type": "string", "enum": names, "description": "The agent to start (default: general)."},
                "background": {"type": "boolean", "description": "Return at once; the result arrives later as a message."}
            },
            "required": ["description", "prompt"]
        }),
    }
}

/// How a child's run ended, as its parent hears of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildEnd {
    /// The child session.
    pub(crate) child: SessionId,
    /// Its agent.
    pub(crate) agent: String,
    /// Why its run stopped.
    pub(crate) stop_reason: StopReason,
    /// Its error, for `error` and `health` stops.
    pub(crate) error: Option<String>,
    /// Its model replies.
    pub(crate) turns: u32,
    /// Its tokens.
    pub(crate) usage: TokenUsage,
    /// How long its run took.
    pub(crate) duration_ms: u64,
    /// Its last message's text.
    pub(crate) text: String,
}

impl ChildEnd {
    /// Whether the child did its task.
    pub(crate) fn ok(&self) -> bool {
        self.stop_reason == StopReason::Completed
    }

    /// The `task` call's result text.
    pub(crate) fn result(&self) -> String {
        let (child, agent, turns) = (&self.child, &self.agent, self.turns);
        if self.ok() {
            let text = if self.text.trim().is_empty() {
                "(the subagent ended without a message)"
            } else {
                self.text.as_str()
            };
            return format!(
                "{text}\n\n(subagent {child}, agent {agent}: completed in {turns} turns)"
            );
        }
        let why = match self.stop_reason {
            StopReason::MaxTurns => format!("reached its turn limit after {turns} turns"),
            StopReason::Aborted => "was cancelled".to_string(),
            StopReason::Health => "was stopped for making no progress".to_string(),
            _ => "failed".to_string(),
        };
        let mut out = format!("subagent {child} (agent {agent}) {why}");
        if let Some(error) = &self.error {
            out.push_str(&format!(": {error}"));
        }
        if !self.text.trim().is_empty() {
            out.push_str(&format!("\nIts last message:\n{}", self.text));
        }
        out
    }

    /// The message a background child's end leaves in its parent's history.
    pub(crate) fn notification(&self, description: &str) -> String {
        let status = match self.stop_reason {
            StopReason::Completed => "completed",
            StopReason::Aborted => "cancelled",
            StopReason::MaxTurns => "max_turns",
            _ => "failed",
        };
        format!(
            "<task-notification>\n<task-id>{}</task-id>\n<status>{status}</status>\n<summary>Subagent \"{}\" {status}</summary>\n<result>\n{}\n</result>\n</task-notification>",
            self.child,
            description.replace('\n', " "),
            self.result()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_names_every_agent_and_stays_bounded() {
        let mut agents = vec![AgentDef::general()];
        for i in 0..200 {
            let mut def = AgentDef::general();
            def.name = format!("agent-{i}");
            def.description = "x".repeat(400);
            agents.push(def);
        }
        let spec = spec(&agents);
        assert!(spec.description.contains("- general: "));
        assert!(spec.description.len() < MAX_LISTING + 2000);
        assert_eq!(
            spec.input_schema["properties"]["agent"]["enum"][0],
            "general"
        );
    }

    #[test]
    fn results_say_which_child_and_why() {
        let mut end = ChildEnd {
            child: SessionId("c1".into()),
            agent: "general".into(),
            stop_reason: StopReason::Completed,
            error: None,
            turns: 2,
            usage: TokenUsage::default(),
            duration_ms: 5,
            text: "The answer is 42.".into(),
        };
        assert!(end.result().starts_with("The answer is 42."));
        assert!(end.result().contains("subagent c1"));
        end.stop_reason = StopReason::MaxTurns;
        assert!(end.result().contains("turn limit"));
        assert!(
            end.notification("find it")
                .contains("<status>max_turns</status>")
        );
    }
}
