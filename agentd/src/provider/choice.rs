//! What a run talks to once its provider is chosen from the configuration (the choosing itself
//! lives with the configuration, which reads the profiles).

use crate::prices::Price;
use crate::provider::{Provider, ProviderError};

/// What a run talks to, chosen once when it starts: the provider and model (or why there is
/// none), its output limit, the context window the configuration gives, its price and whether
/// calls written as text are read.
pub(crate) struct Choice {
    /// The provider and model, or why there is none.
    pub(crate) provider: Result<(Provider, String), ProviderError>,
    /// The output token limit of one reply.
    pub(crate) max_tokens: u32,
    /// The context window in tokens, when the configuration gives it; else a local server is
    /// asked, or the model family's is taken.
    pub(crate) context_window: Option<u64>,
    /// The model's price, when it is known.
    pub(crate) price: Option<Price>,
    /// Whether tool calls a model writes as text are read as calls.
    pub(crate) text_tool_calls: bool,
    /// The harness the profile forces on its models, if it does.
    pub(crate) profile: Option<crate::model_profile::ModelProfile>,
}

/// The provider profile and model a session's runs use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Names {
    /// The provider profile (or kind) name.
    pub(crate) provider: String,
    /// The model; `None` when a local server is asked which one it serves.
    pub(crate) model: Option<String>,
}
