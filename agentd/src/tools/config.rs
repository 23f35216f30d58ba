//! The `[tools]` section of the configuration: settings of the built-in tools.
//!
//! ```toml
//! [tools]
//! max_background_shells = 8   # background shells running at once per session; 0 turns them off
//! ```

use serde::{Deserialize, Serialize};

/// `[tools]` in the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct ToolsConfig {
    /// Background shells (`bash` with `"background": true`) running at once in one session;
    /// 0 turns them off (docs/architecture.md#background-shells).
    pub(crate) max_background_shells: u32,
}

/// The most background shells a session may run at once, whatever the configuration says.
const MAX_SHELLS: u32 = 64;

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            max_background_shells: super::shells::registry::DEFAULT_LIMIT,
        }
    }
}

impl ToolsConfig {
    /// Background shells running at once in one session (at most 64).
    pub(crate) fn background_shells(&self) -> u32 {
        self.max_background_shells.min(MAX_SHELLS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_reads_its_key_and_refuses_others() {
        let config: ToolsConfig = toml::from_str("max_background_shells = 3").unwrap();
        assert_eq!(config.background_shells(), 3);
        let config: ToolsConfig = toml::from_str("").unwrap();
        assert_eq!(config.background_shells(), 8);
        let config: ToolsConfig = toml::from_str("max_background_shells = 1000").unwrap();
        assert_eq!(config.background_shells(), 64);
        assert!(toml::from_str::<ToolsConfig>("max_shells = 3").is_err());
    }
}
