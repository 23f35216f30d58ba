//! The one place where "continue or stop" is decided after a reply: a small state machine
//! (docs/architecture.md#the-agent-loop).

use protocol::{Delivery, ModelStopReason};

use crate::conversation::AssistantReply;

/// What the loop does after saving a reply: the one place where "continue or stop" is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// No tools were asked for and a queued message was delivered: call the model again.
    ContinueWithQueued,
    /// No tools were asked for and nothing is queued: the run is complete.
    Complete {
        /// Whether the reply was cut off at the output limit.
        truncated: bool,
    },
    /// Tools were asked for, but the turn limit is reached: answer them unrun and stop.
    StopAtMaxTurns,
    /// Tools were asked for in a reply cut off at the output limit: refuse them and continue.
    RejectTruncatedCalls,
    /// Run the tools and continue.
    RunTools,
}

/// Decides the next step after a reply. `queued` says whether a queued message was delivered
/// (only asked when the reply has no tool calls).
pub(crate) fn next_step(
    reply: &AssistantReply,
    turns: u32,
    max_turns: u32,
    queued: Option<Delivery>,
) -> Step {
    let truncated = reply.stop_reason == ModelStopReason::MaxTokens;
    if reply.tool_calls().is_empty() {
        return match queued {
            Some(_) => Step::ContinueWithQueued,
            None => Step::Complete { truncated },
        };
    }
    if max_turns != 0 && turns >= max_turns {
        Step::StopAtMaxTurns
    } else if truncated {
        Step::RejectTruncatedCalls
    } else {
        Step::RunTools
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{Block, ToolCall};
    use protocol::TokenUsage;

    fn reply(calls: usize, stop: ModelStopReason) -> AssistantReply {
        let content = (0..calls)
            .map(|i| {
                Block::ToolCall(ToolCall {
                    id: format!("t{i}"),
                    name: "read".into(),
                    args: "{}".into(),
                })
            })
            .collect();
        AssistantReply {
            content,
            stop_reason: stop,
            usage: TokenUsage::default(),
        }
    }

    #[test]
    fn a_reply_without_tools_completes_unless_something_is_queued() {
        let r = reply(0, ModelStopReason::EndTurn);
        assert_eq!(
            next_step(&r, 1, 100, None),
            Step::Complete { truncated: false }
        );
        assert_eq!(
            next_step(&r, 1, 100, Some(Delivery::FollowUp)),
            Step::ContinueWithQueued
        );
        let cut = reply(0, ModelStopReason::MaxTokens);
        assert_eq!(
            next_step(&cut, 1, 100, None),
            Step::Complete { truncated: true }
        );
    }

    #[test]
    fn the_turn_limit_guards_tool_execution_only() {
        assert_eq!(
            next_step(&reply(1, ModelStopReason::ToolUse), 3, 3, None),
            Step::StopAtMaxTurns
        );
        assert_eq!(
            next_step(&reply(1, ModelStopReason::ToolUse), 3, 0, None),
            Step::RunTools
        );
        assert_eq!(
            next_step(
                &reply(0, ModelStopReason::EndTurn),
                9,
                3,
                Some(Delivery::FollowUp)
            ),
            Step::ContinueWithQueued
        );
    }

    #[test]
    fn calls_of_a_truncated_reply_are_rejected() {
        assert_eq!(
            next_step(&reply(2, ModelStopReason::MaxTokens), 1, 100, None),
            Step::RejectTruncatedCalls
        );
    }
}
