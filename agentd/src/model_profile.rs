//! How much harness a model gets. A small model (a context window of 16k tokens or less, or a
//! model whose name says it has a few billion parameters) gets the small profile: the fewest
//! tools that do the job, short descriptions, whole-file writes, and a prompt with one worked
//! example. Every other model gets the full one. A provider profile may force either with
//! `profile = "small"` or `"full"`.

use serde::{Deserialize, Serialize};

/// A context window this small (in tokens) gets the small profile.
pub(crate) const SMALL_WINDOW: u64 = 16_384;
/// Models of at most this many billion parameters are small.
const SMALL_PARAMETERS: f64 = 8.0;

/// The harness a model gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ModelProfile {
    /// Few tools, short descriptions, a worked example.
    Small,
    /// Every tool, described in full.
    Full,
}

impl ModelProfile {
    /// The profile of `model` with a `window`-token context, unless `forced`.
    pub(crate) fn choose(forced: Option<ModelProfile>, window: u64, model: &str) -> ModelProfile {
        forced.unwrap_or(if window <= SMALL_WINDOW || known_small(model) {
            ModelProfile::Small
        } else {
            ModelProfile::Full
        })
    }

    /// Whether this is the small profile.
    pub(crate) fn is_small(self) -> bool {
        self == ModelProfile::Small
    }

    /// Whether subagents (`task`) are offered.
    pub(crate) fn subagents(self) -> bool {
        self == ModelProfile::Full
    }
}

/// Whether `model`'s name gives it at most a few billion parameters (`qwen2.5-coder-1.5b`,
/// `llama3.2:3b`, `phi-4-mini-3.8B`); the first count in the name is the model's.
pub(crate) fn known_small(model: &str) -> bool {
    parameters(model).is_some_and(|b| b <= SMALL_PARAMETERS)
}

/// The billions of parameters a model's name gives, like `1.5b` or `7B` standing alone.
fn parameters(model: &str) -> Option<f64> {
    let lower = model.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit()
            && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric() && bytes[i - 1] != b'.');
        if !starts {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
            end += 1;
        }
        let unit = bytes.get(end) == Some(&b'b');
        let alone = bytes
            .get(end + 1)
            .is_none_or(|b| !b.is_ascii_alphanumeric());
        if unit && alone {
            return lower.get(i..end)?.parse().ok();
        }
        i = end.max(i + 1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_models_are_known_by_name() {
        for small in [
            "qwen2.5-coder-1.5b-instruct",
            "llama3.2:3b",
            "Qwen2.5-Coder-7B-Instruct-GGUF",
            "gemma-2-2b-it",
            "phi-4-mini-3.8B",
        ] {
            assert!(known_small(small), "{small}");
        }
        for large in [
            "claude-sonnet-4-5",
            "gpt-4o-mini",
            "qwen3-coder-30b-a3b",
            "llama-3.1-70b",
            "deepseek-v3",
            "qwen2.5-coder",
        ] {
            assert!(!known_small(large), "{large}");
        }
    }

    #[test]
    fn the_window_the_name_or_the_configuration_decide() {
        use ModelProfile::*;
        assert_eq!(ModelProfile::choose(None, 8192, "big"), Small);
        assert_eq!(ModelProfile::choose(None, 16_384, "big"), Small);
        assert_eq!(ModelProfile::choose(None, 32_768, "big"), Full);
        assert_eq!(
            ModelProfile::choose(None, 131_072, "qwen2.5-coder-1.5b"),
            Small
        );
        assert_eq!(
            ModelProfile::choose(Some(Full), 8192, "qwen2.5-coder-1.5b"),
            Full
        );
        assert_eq!(
            ModelProfile::choose(Some(Small), 200_000, "claude-opus-4"),
            Small
        );
    }
}
