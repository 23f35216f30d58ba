//! `[lsp]` (docs/architecture.md#language-servers): whether language servers are used, how long
//! an edit waits for diagnostics, when an idle server is stopped; and `[lsp.NAME]` entries that
//! add a server or change a built-in one. Strict like the rest of the file: an unknown key is an
//! error.
//!
//! ```toml
//! [lsp]
//! enabled = true          # language servers at all
//! wait_ms = 2000          # the longest an edit waits for its diagnostics
//! idle_stop_secs = 600    # a server unused this long is stopped
//! sandbox = true          # servers run in the sandbox; false runs them with the user's rights
//!
//! [lsp.pyright]
//! command = ["/opt/pyright/bin/pyright-langserver", "--stdio"]
//! languages = ["py", "pyi"]            # file extensions or language ids
//! root_markers = ["pyproject.toml"]
//! init_options = {}                    # initializationOptions
//! settings = { python = { analysis = { typeCheckingMode = "strict" } } }
//! enabled = true
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The keys of `[lsp]` itself; every other key names a server.
const OWN_KEYS: [&str; 4] = ["enabled", "wait_ms", "idle_stop_secs", "sandbox"];

/// `[lsp]`, checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LspConfig {
    /// Whether language servers are used at all.
    pub(crate) enabled: bool,
    /// The longest an edit waits for its diagnostics, in milliseconds.
    pub(crate) wait_ms: u64,
    /// Seconds a server may go unused before it is stopped.
    pub(crate) idle_stop_secs: u64,
    /// Whether servers run in the sandbox of auto mode's commands, in every mode
    /// (docs/architecture.md#sandbox): they read the project but write nothing outside their
    /// private `/tmp`, have no network, and see neither agentd's directories nor the credential
    /// stores. Where this machine has no such sandbox, no server starts at all (the daemon log
    /// says why) unless this is `false`: then servers run unconfined, with the user's full
    /// rights, and a server that runs the project's code (build scripts and proc macros for
    /// rust-analyzer, the project's interpreter for pyright) runs it unconfined too. Only for
    /// projects the user trusts.
    pub(crate) sandbox: bool,
    /// `[lsp.NAME]` entries by name.
    pub(crate) servers: BTreeMap<String, ServerEntry>,
}

impl Default for LspConfig {
    fn default() -> Self {
        LspConfig {
            enabled: true,
            wait_ms: 2000,
            idle_stop_secs: 600,
            sandbox: true,
            servers: BTreeMap::new(),
        }
    }
}

impl LspConfig {
    /// The longest an edit waits for diagnostics.
    pub(crate) fn wait(&self) -> Duration {
        Duration::from_millis(self.wait_ms)
    }

    /// Whether server `name` was turned off (`[lsp] enabled = false`, or its own entry's).
    pub(crate) fn server_off(&self, name: &str) -> bool {
        !self.enabled || self.servers.get(name).and_then(|e| e.enabled) == Some(false)
    }

    /// How long a server may go unused before it is stopped.
    pub(crate) fn idle_stop(&self) -> Duration {
        Duration::from_secs(self.idle_stop_secs.max(1))
    }
}

/// One `[lsp.NAME]` entry as written; what it leaves out comes from the built-in server of the
/// same name, if there is one.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerEntry {
    /// The program and its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) command: Option<Vec<String>>,
    /// File extensions (`py`) or language ids (`python`) it serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) languages: Option<Vec<String>>,
    /// Files or directories whose nearest directory is the server's root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) root_markers: Option<Vec<String>>,
    /// `initializationOptions` of `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) init_options: Option<toml::Value>,
    /// What `workspace/configuration` and `workspace/didChangeConfiguration` give the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) settings: Option<toml::Value>,
    /// Whether it is used (`false` turns a built-in server off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) enabled: Option<bool>,
}

impl<'de> Deserialize<'de> for LspConfig {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let table = toml::Table::deserialize(deserializer)?;
        parse(table).map_err(serde::de::Error::custom)
    }
}

impl Serialize for LspConfig {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(4 + self.servers.len()))?;
        map.serialize_entry("enabled", &self.enabled)?;
        map.serialize_entry("wait_ms", &self.wait_ms)?;
        map.serialize_entry("idle_stop_secs", &self.idle_stop_secs)?;
        map.serialize_entry("sandbox", &self.sandbox)?;
        for (name, entry) in &self.servers {
            map.serialize_entry(name, entry)?;
        }
        map.end()
    }
}

/// Reads `[lsp]`: its own keys, and every table under it as a server entry.
fn parse(table: toml::Table) -> Result<LspConfig, String> {
    let mut config = LspConfig::default();
    for (key, value) in table {
        match key.as_str() {
            "enabled" | "sandbox" => {
                let on = value
                    .as_bool()
                    .ok_or_else(|| format!("[lsp] {key} must be true or false"))?;
                if key == "enabled" {
                    config.enabled = on;
                } else {
                    config.sandbox = on;
                }
            }
            "wait_ms" | "idle_stop_secs" => {
                let number = value
                    .as_integer()
                    .and_then(|n| u64::try_from(n).ok())
                    .ok_or_else(|| format!("[lsp] {key} must be a whole number, 0 or more"))?;
                if key == "wait_ms" {
                    config.wait_ms = number.min(60_000);
                } else {
                    config.idle_stop_secs = number;
                }
            }
            name => {
                let toml::Value::Table(_) = value else {
                    return Err(format!(
                        "[lsp] has no key `{name}` (it has {}); a server is a table: [lsp.{name}]",
                        OWN_KEYS.join(", ")
                    ));
                };
                check_name(name)?;
                let entry: ServerEntry = value.try_into().map_err(|e: toml::de::Error| {
                    format!("[lsp.{name}]: {}", e.message().trim())
                })?;
                check_entry(name, &entry)?;
                config.servers.insert(name.to_string(), entry);
            }
        }
    }
    Ok(config)
}

/// A server's name: letters, digits, `-`, `_` and `.`.
fn check_name(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fine {
        Ok(())
    } else {
        Err(format!(
            "[lsp.{name}]: a server's name is 1 to 64 letters, digits, `-`, `_` or `.`"
        ))
    }
}

/// An entry's own rules: a command is a program, a new server says what it serves.
fn check_entry(name: &str, entry: &ServerEntry) -> Result<(), String> {
    if let Some(command) = &entry.command
        && command
            .first()
            .is_none_or(|program| program.trim().is_empty())
    {
        return Err(format!(
            "[lsp.{name}]: `command` is the program and its arguments, e.g. [\"{name}\", \"--stdio\"]"
        ));
    }
    if super::defaults::builtin(name).is_none()
        && entry.enabled != Some(false)
        && (entry.command.is_none() || entry.languages.is_none())
    {
        return Err(format!(
            "[lsp.{name}]: not a built-in server, so it needs `command` and `languages`"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<LspConfig, String> {
        toml::from_str::<LspConfig>(text).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_entries_parse() {
        let config = parse_text("").unwrap();
        assert!(config.enabled);
        assert_eq!(config.wait_ms, 2000);
        assert_eq!(config.idle_stop_secs, 600);
        assert!(config.sandbox);
        let config = parse_text(
            "wait_ms = 500\nsandbox = false\n[pyright]\ncommand = [\"/x/pyright-langserver\", \"--stdio\"]\n[mine]\ncommand = [\"mine\"]\nlanguages = [\"zig\"]\nsettings = { a = 1 }\n",
        )
        .unwrap();
        assert_eq!(config.wait_ms, 500);
        assert!(!config.sandbox);
        assert_eq!(config.servers.len(), 2);
        let again: LspConfig = toml::from_str(&toml::to_string(&config).unwrap()).unwrap();
        assert_eq!(again, config);
    }

    #[test]
    fn a_typo_under_lsp_makes_the_whole_file_unusable() {
        let path = std::path::Path::new("config.toml");
        let error = crate::config::Config::parse("[lsp]\nwait_ms = 5\nidle_stop = 1\n", path)
            .unwrap_err()
            .to_string();
        assert!(error.contains("no key `idle_stop`"), "{error}");
        let config =
            crate::config::Config::parse("[lsp.pyright]\nenabled = false\n", path).unwrap();
        assert_eq!(config.lsp.servers["pyright"].enabled, Some(false));
    }

    #[test]
    fn typos_and_broken_entries_are_errors() {
        let cases = [
            ("wiat_ms = 5\n", "no key `wiat_ms`"),
            ("enabled = 1\n", "true or false"),
            ("sandbox = \"no\"\n", "[lsp] sandbox must be true or false"),
            ("[pyright]\ncomand = [\"x\"]\n", "comand"),
            ("[pyright]\ncommand = []\n", "program"),
            (
                "[mine]\ncommand = [\"mine\"]\n",
                "needs `command` and `languages`",
            ),
            (
                "[\"a b\"]\ncommand = [\"x\"]\nlanguages = [\"x\"]\n",
                "name",
            ),
        ];
        for (text, expected) in cases {
            let error = parse_text(text).unwrap_err();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }
}
