//! The loop's own state, grouped by what it is for: the harness the model gets, what the run
//! used so far, the guards against going round in circles, and whether the run made the
//! change it was asked for.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use protocol::TokenUsage;

use super::repeats::Repeats;
use super::write_results::WriteResults;
use crate::health::HealthMonitor;
use crate::mcp::Toolset;
use crate::model_profile::ModelProfile;
use crate::provider::ToolSpec;

/// What the model gets: its window, its profile, and the tools offered this turn.
pub(super) struct Harness {
    /// The model's context window, in tokens.
    pub(super) window: u64,
    /// The harness the model gets: its tools, their descriptions and the prompt.
    pub(super) profile: ModelProfile,
    /// The profile is the small one.
    pub(super) small: bool,
    /// The tools offered to the model.
    pub(super) specs: Arc<Vec<ToolSpec>>,
    /// The MCP tools of the current turn.
    pub(super) toolset: Toolset,
}

/// What the run used so far.
pub(super) struct Tally {
    /// Complete replies received.
    pub(super) turns: u32,
    /// Tokens of the run's own model calls.
    pub(super) usage: TokenUsage,
    /// Tokens of the run's subagents (in the foreground) so far.
    pub(super) children_usage: Mutex<TokenUsage>,
}

/// The run's guards against going round in circles.
#[derive(Default)]
pub(super) struct Guards {
    /// Watches the calls and results for signs of a stuck run.
    pub(super) health: HealthMonitor,
    /// The last reply looped and was cut.
    pub(super) looped: bool,
    /// What each call gave before, to tell the model when a call repeats itself.
    pub(super) repeats: Repeats,
    /// Stop hooks that blocked in a row.
    pub(super) stop_blocks: u32,
    /// The provider refused an image of the history: the run's calls send them as labels.
    pub(super) images_refused: bool,
}

/// Whether the run made the change it was asked for.
#[derive(Default)]
pub(super) struct Changes {
    /// The summaries of the run's changes, and what a small model is told after one.
    pub(super) writes: WriteResults,
    /// The message that started the run asks for a change.
    pub(super) asked: bool,
    /// The model was told once that it answered without making the change.
    pub(super) nudged: bool,
    /// A file was changed or a command run (or a subagent or a server's tool may have).
    pub(super) acted: AtomicBool,
}
