//! What a session's model calls used: tokens and cost per model, for its last run and for the
//! whole session.

use serde::{Deserialize, Serialize};

use crate::run::{RunId, TokenUsage};

/// The tokens of one model within a run or a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelUsage {
    /// The model; empty when a local server chose it.
    pub model: String,
    /// The provider profile it was called through.
    pub provider: String,
    /// Its tokens.
    pub usage: TokenUsage,
    /// What they cost, in millionths of a US dollar, when the model's price is known.
    pub cost_micros: Option<u64>,
}

/// The tokens of a run or a session, model by model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageTotals {
    /// One entry per model, in the order they were first used.
    pub models: Vec<ModelUsage>,
    /// The tokens of subagents started in foreground `task` calls, whatever their model.
    pub subagents: TokenUsage,
}

impl UsageTotals {
    /// Every model's tokens added up (subagents not included).
    pub fn tokens(&self) -> TokenUsage {
        let mut sum = TokenUsage::default();
        for model in &self.models {
            sum.add(&model.usage);
        }
        sum
    }

    /// What the models whose price is known cost together, in millionths of a US dollar;
    /// `None` when no price is known.
    pub fn cost_micros(&self) -> Option<u64> {
        self.models
            .iter()
            .filter_map(|m| m.cost_micros)
            .reduce(|a, b| a + b)
    }
}

/// The reply to `Usage`: a session's tokens and cost.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageReport {
    /// The session's last run (the one going, if any), when it had one.
    pub last_run: Option<RunId>,
    /// That run's tokens.
    pub run: UsageTotals,
    /// Every run's tokens.
    pub session: UsageTotals,
}
