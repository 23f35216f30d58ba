//! What a run costs: a small table of model prices in US dollars per million tokens, matched by
//! model name (a glob), that `[prices]` in the config extends or overrides. A model the table
//! does not know has no cost shown.

use std::collections::BTreeMap;

use protocol::TokenUsage;
use serde::{Deserialize, Serialize};

/// One model's prices, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Price {
    /// Input tokens.
    pub(crate) input: f64,
    /// Output tokens.
    pub(crate) output: f64,
    /// Input tokens read from the prompt cache (default: the input price).
    #[serde(default)]
    pub(crate) cache_read: Option<f64>,
    /// Input tokens written to the prompt cache (default: the input price).
    #[serde(default)]
    pub(crate) cache_write: Option<f64>,
}

impl Price {
    /// The cost of `usage`, in millionths of a dollar.
    pub(crate) fn cost_micros(&self, usage: &TokenUsage) -> u64 {
        // Dollars per million tokens are millionths of a dollar per token.
        let micros = usage.input as f64 * self.input
            + usage.output as f64 * self.output
            + usage.cache_read as f64 * self.cache_read.unwrap_or(self.input)
            + usage.cache_write as f64 * self.cache_write.unwrap_or(self.input);
        micros.round() as u64
    }
}

/// The built-in table, checked after the config's own entries. Prices change: `[prices]`
/// overrides any of these.
const DEFAULTS: &[(&str, f64, f64, f64, f64)] = &[
    ("claude-opus-4*", 15.0, 75.0, 1.5, 18.75),
    ("claude-sonnet-4*", 3.0, 15.0, 0.3, 3.75),
    ("claude-3-7-sonnet*", 3.0, 15.0, 0.3, 3.75),
    ("claude-3-5-haiku*", 0.8, 4.0, 0.08, 1.0),
    ("claude-haiku-4*", 1.0, 5.0, 0.1, 1.25),
    ("gpt-4o-mini*", 0.15, 0.6, 0.075, 0.15),
    ("gpt-4o*", 2.5, 10.0, 1.25, 2.5),
    ("gpt-4.1-mini*", 0.4, 1.6, 0.1, 0.4),
    ("gpt-4.1*", 2.0, 8.0, 0.5, 2.0),
];

/// The price of `model`: the config's entry with the longest glob that matches it (the most
/// specific), else the built-in table's first match.
pub(crate) fn price_of(configured: &BTreeMap<String, Price>, model: &str) -> Option<Price> {
    let matches = |pattern: &str| {
        globset::Glob::new(pattern)
            .map(|glob| glob.compile_matcher().is_match(model))
            .unwrap_or(false)
    };
    configured
        .iter()
        .filter(|(pattern, _)| matches(pattern))
        .max_by_key(|(pattern, _)| pattern.len())
        .map(|(_, price)| *price)
        .or_else(|| {
            DEFAULTS.iter().find(|(pattern, ..)| matches(pattern)).map(
                |&(_, input, output, cache_read, cache_write)| Price {
                    input,
                    output,
                    cache_read: Some(cache_read),
                    cache_write: Some(cache_write),
                },
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_wins_over_the_table_and_unknown_models_have_no_price() {
        let usage = TokenUsage {
            input: 1_000_000,
            output: 100_000,
            cache_read: 0,
            cache_write: 0,
        };
        let sonnet = price_of(&BTreeMap::new(), "claude-sonnet-4-5").unwrap();
        assert_eq!(sonnet.cost_micros(&usage), 4_500_000);
        let mut configured = BTreeMap::new();
        configured.insert(
            "claude-sonnet-*".to_string(),
            Price {
                input: 1.0,
                output: 2.0,
                cache_read: None,
                cache_write: None,
            },
        );
        let cheap = price_of(&configured, "claude-sonnet-4-5").unwrap();
        assert_eq!(cheap.cost_micros(&usage), 1_200_000);
        assert_eq!(price_of(&configured, "qwen2.5-coder"), None);
    }
}
