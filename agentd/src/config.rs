//! `config.toml`: defaults for runs (provider, model, limits) and provider profiles.
//!
//! ```toml
//! provider = "anthropic"          # a profile name below, or "anthropic" / "openai" / "responses"
//! model = "claude-sonnet-4-5"
//! max_turns = 100                 # for `agentctl run`; interactive clients run unlimited
//!
//! [providers.local]
//! kind = "openai"
//! base_url = "http://127.0.0.1:8080/v1"
//! model = "qwen2.5-coder"
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use protocol::Mode;
use serde::{Deserialize, Serialize};

use crate::mcp::config::McpServerConfig;
use crate::permission::PermissionRules;
use crate::provider::retry::RetryPolicy;

use crate::shell_env::ShellEnv;

mod providers;
mod state;
mod web_search;
mod writable_path;

pub use state::{BROKEN_FILE_NOTE, ConfigState, Standing, watch};
pub use writable_path::writable_path_warnings;

pub(crate) use crate::sandbox::config::SandboxConfig;

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ProviderKind {
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenAI's Chat Completions API (also local servers).
    Openai,
    /// OpenAI's Responses API (docs/architecture.md#providers).
    Responses,
}

/// A named provider profile.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProviderProfile {
    /// The wire format.
    pub(crate) kind: ProviderKind,
    /// The API's base URL.
    pub(crate) base_url: Option<String>,
    /// The environment variable holding the API key.
    pub(crate) api_key_env: Option<String>,
    /// The model, if the profile has its own.
    pub(crate) model: Option<String>,
    /// The model's context window in tokens, if not the default of its family.
    pub(crate) context_window: Option<u64>,
    /// Whether tool calls the model writes as text are read as calls.
    #[serde(default)]
    pub(crate) text_tool_calls: TextToolCalls,
    /// The harness its models get, when not chosen by their window and name.
    pub(crate) profile: Option<crate::model_profile::ModelProfile>,
    /// How hard a reasoning model thinks (`low`, `medium`, `high`; the Responses API only).
    pub(crate) reasoning_effort: Option<String>,
    /// Whether the Responses API keeps the replies on its side (`false` unless set, or unless
    /// `previous_response_id` is).
    pub(crate) store: Option<bool>,
    /// Whether a Responses request names the reply before it and sends only what is newer
    /// (`false` unless set; needs `store`).
    pub(crate) previous_response_id: Option<bool>,
    /// Whether its models take images (unset: all but the families known to read text only).
    pub(crate) images: Option<bool>,
}

/// `text_tool_calls` of a provider profile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TextToolCalls {
    /// A reply whose whole text is tool calls is read as those calls.
    #[default]
    Auto,
    /// Text stays text.
    Off,
}

/// The output limit of a reply, unless configured.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 8192;
/// The output limit of a reply from a local server, unless configured.
pub(crate) const LOCAL_MAX_TOKENS: u32 = 4096;

/// The daemon's configuration.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The default provider: a profile name or a kind.
    pub(crate) provider: String,
    /// The default model.
    pub(crate) model: Option<String>,
    /// The turn limit of a `run` that does not give one; 0 for unlimited.
    pub(crate) max_turns: u32,
    /// The output token limit of one reply (see [`Config::max_tokens`]).
    pub(crate) max_tokens: Option<u32>,
    /// The mode of new sessions that do not ask for one.
    pub(crate) default_mode: ModeName,
    /// The default `bash` timeout, in milliseconds.
    pub(crate) bash_timeout_ms: u64,
    /// Executors in the tool pool; 0 for the default (twice the cores, at least 4).
    pub(crate) tool_pool_size: usize,
    /// Seconds a permission request waits for an answer before it is denied; 0 waits for ever.
    pub(crate) permission_timeout_secs: u64,
    /// Provider profiles by name.
    pub(crate) providers: BTreeMap<String, ProviderProfile>,
    /// Allow and deny rules for tool calls.
    pub(crate) permissions: PermissionRules,
    /// Retries of a model call that failed for a passing reason.
    pub(crate) max_retries: u32,
    /// The wait before the first retry, in milliseconds; it doubles with each retry.
    pub(crate) retry_base_ms: u64,
    /// The longest wait between retries, in milliseconds (a `retry-after` may ask for more).
    pub(crate) retry_max_ms: u64,
    /// The model's context window in tokens, when the default for its family is wrong.
    pub(crate) context_window: Option<u64>,
    /// Whether long histories are summarised (at 80% of the context window, and once when the
    /// provider says the prompt is too long).
    pub(crate) compaction: bool,
    /// Whether a run the daemon did not live to finish (a crash, `kill -9`, a restart) goes
    /// on in the daemon that comes up after it.
    pub(crate) resume_interrupted: bool,
    /// How the client's environment becomes the environment of commands.
    pub(crate) shell_env: ShellEnv,
    /// Client connections served at once; more are refused with a clear error.
    pub(crate) max_connections: usize,
    /// Milliseconds a frame may take to arrive once its first byte did.
    pub(crate) frame_timeout_ms: u64,
    /// Seconds a model's reply stream may stay silent before it counts as broken (and is
    /// retried).
    pub(crate) stream_idle_timeout_secs: u64,
    /// Whether records that end a unit of work are synced to disk before clients hear of them.
    pub(crate) durability: DurabilityMode,
    /// Seconds a session with no run and no client stays loaded after its last use.
    pub(crate) session_idle_unload_secs: u64,
    /// Idle sessions kept loaded at most (the least recently used are unloaded first).
    pub(crate) max_loaded_sessions: usize,
    /// MCP servers by name, as written (docs/architecture.md#mcp-servers); read entry by entry into
    /// [`Config::mcp`].
    pub(crate) mcp_servers: BTreeMap<String, toml::Spanned<toml::Value>>,
    /// The MCP servers that could be read, and the entries that could not.
    #[serde(skip)]
    pub mcp: McpServers,
    /// The sandbox of `auto` mode.
    pub(crate) sandbox: SandboxConfig,
    /// The work-tree checkpoints of runs (docs/architecture.md#checkpoints-fork-and-worktrees).
    pub(crate) checkpoints: crate::checkpoint::CheckpointConfig,
    /// Model prices by model-name glob, in US dollars per million tokens, over the built-in
    /// table (for the cost the views show).
    pub(crate) prices: BTreeMap<String, crate::prices::Price>,
    /// Subagents: how many run at once, how deep they nest (docs/architecture.md#subagents).
    pub(crate) subagents: crate::subagents::SubagentConfig,
    /// Commands run at points of a session's life (docs/architecture.md#hooks), by event, in order.
    pub(crate) hooks: crate::hooks::HookTable,
    /// The daemon's own settings (how long a planned stop waits for running tool calls).
    pub(crate) daemon: crate::stop::DaemonConfig,
    /// How `fetch` and `web_search` behave (docs/architecture.md#web-access).
    pub(crate) web: crate::web::WebConfig,
    /// The search service of `web_search`; without it the tool is not offered.
    pub(crate) web_search: Option<crate::web::SearchConfig>,
    /// Settings of the built-in tools (background shells running at once).
    pub(crate) tools: crate::tools::config::ToolsConfig,
    /// Language servers (docs/architecture.md#language-servers).
    pub(crate) lsp: crate::lsp::config::LspConfig,
}

/// The `[mcp_servers]` entries, checked one by one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpServers {
    /// The usable entries, in name order.
    pub(crate) servers: Vec<McpServerConfig>,
    /// Entries that cannot be used: name, and the error (file and line).
    pub broken: Vec<(String, String)>,
}

/// How records reach the disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum DurabilityMode {
    /// Synced (`fdatasync`, grouped) before the events that announce them are sent: they
    /// survive a power loss.
    #[default]
    Fsync,
    /// Written (`write`) before they are sent: they survive a crash of the daemon, not of the
    /// machine.
    Flush,
}

/// A mode as written in the config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ModeName(pub Mode);

impl Serialize for ModeName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.as_str())
    }
}

impl<'de> Deserialize<'de> for ModeName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map(ModeName).map_err(serde::de::Error::custom)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            provider: "anthropic".to_string(),
            model: None,
            max_turns: 100,
            max_tokens: None,
            default_mode: ModeName::default(),
            bash_timeout_ms: 120_000,
            tool_pool_size: 0,
            permission_timeout_secs: 0,
            providers: BTreeMap::new(),
            permissions: PermissionRules::default(),
            max_retries: 4,
            retry_base_ms: 1000,
            retry_max_ms: 30_000,
            context_window: None,
            compaction: true,
            resume_interrupted: true,
            shell_env: ShellEnv::default(),
            max_connections: 256,
            frame_timeout_ms: 5000,
            stream_idle_timeout_secs: 300,
            durability: DurabilityMode::Fsync,
            session_idle_unload_secs: 600,
            max_loaded_sessions: 64,
            mcp_servers: BTreeMap::new(),
            mcp: McpServers::default(),
            sandbox: SandboxConfig::default(),
            checkpoints: crate::checkpoint::CheckpointConfig::default(),
            subagents: crate::subagents::SubagentConfig::default(),
            hooks: crate::hooks::HookTable::default(),
            prices: BTreeMap::new(),
            daemon: crate::stop::DaemonConfig::default(),
            web: crate::web::WebConfig::default(),
            web_search: None,
            tools: crate::tools::config::ToolsConfig::default(),
            lsp: crate::lsp::config::LspConfig::default(),
        }
    }
}

/// A configuration file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    /// The file.
    pub(crate) file: String,
    /// The line of the problem, when known.
    pub(crate) line: Option<usize>,
    /// What is wrong.
    pub(crate) message: String,
}

impl Config {
    /// Reads `path`; a missing file gives the defaults.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Config::parse(&text, path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(err) => Err(ConfigError {
                file: path.display().to_string(),
                line: None,
                message: err.to_string(),
            }),
        }
    }

    /// Parses the text of `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|err| ConfigError {
            file: path.display().to_string(),
            line: err.span().map(|span| line_of(text, span.start)),
            message: err.message().trim().to_string(),
        })?;
        config.check(path)?;
        config.mcp = config.read_mcp_servers(text, path, &|var| std::env::var(var).ok());
        Ok(config)
    }

    /// Reads the `[mcp_servers]` entries one by one: a broken entry is logged and listed with
    /// its file and line, and the others are used.
    fn read_mcp_servers(
        &self,
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> McpServers {
        let mut mcp = McpServers::default();
        for (name, entry) in &self.mcp_servers {
            match crate::mcp::config::parse_entry(name, entry.get_ref().clone(), env) {
                Ok(server) => mcp.servers.push(server),
                Err(message) => {
                    let error = ConfigError {
                        file: path.display().to_string(),
                        line: Some(line_of(text, entry.span().start)),
                        message,
                    };
                    tracing::error!("MCP server `{name}` not used: {error}");
                    mcp.broken.push((name.clone(), error.to_string()));
                }
            }
        }
        mcp
    }

    fn check(&self, path: &Path) -> Result<(), ConfigError> {
        let search = self
            .web_search
            .as_ref()
            .map_or(Ok(()), crate::web::SearchConfig::validate);
        if let Err(message) = self
            .permissions
            .validate()
            .and(self.shell_env.validate())
            .and(search)
            .and(self.check_profiles())
        {
            return Err(ConfigError {
                file: path.display().to_string(),
                line: None,
                message,
            });
        }
        if self.default_mode.0 == Mode::Bypass {
            return Err(ConfigError {
                file: path.display().to_string(),
                line: None,
                message: "default_mode cannot be `bypass`; ask for it on the command line with --mode bypass".to_string(),
            });
        }
        let known = matches!(self.provider.as_str(), "anthropic" | "openai" | "responses")
            || self.providers.contains_key(&self.provider);
        if !known {
            return Err(ConfigError {
                file: path.display().to_string(),
                line: None,
                message: format!(
                    "provider `{}` is neither `anthropic`, `openai`, `responses` nor a [providers.{}] profile",
                    self.provider, self.provider
                ),
            });
        }
        Ok(())
    }

    /// How long a permission request waits; `None` for ever.
    pub(crate) fn permission_timeout(&self) -> Option<Duration> {
        (self.permission_timeout_secs > 0)
            .then(|| Duration::from_secs(self.permission_timeout_secs))
    }

    /// The configuration as TOML, defaults included.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self)
            .unwrap_or_else(|e| format!("# cannot show the configuration: {e}\n"))
    }

    /// How long a frame may take once begun.
    pub(crate) fn frame_timeout(&self) -> Duration {
        Duration::from_millis(self.frame_timeout_ms.max(1))
    }

    /// How long a model's reply stream may stay silent.
    pub(crate) fn stream_idle_timeout(&self) -> Duration {
        Duration::from_secs(self.stream_idle_timeout_secs.max(1))
    }

    /// The default `bash` timeout.
    pub(crate) fn bash_timeout(&self) -> Duration {
        Duration::from_millis(self.bash_timeout_ms.max(1))
    }

    /// The retry policy of model calls.
    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.max_retries,
            base: Duration::from_millis(self.retry_base_ms),
            max_wait: Duration::from_millis(self.retry_max_ms.max(self.retry_base_ms)),
        }
    }
}

/// The 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    let before = text.as_bytes().get(..at).unwrap_or(text.as_bytes());
    1 + before.iter().filter(|&&b| b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ProviderError, anthropic};

    #[test]
    fn a_missing_file_gives_the_defaults() {
        let config = Config::load(Path::new("/no/such/config.toml")).unwrap();
        assert_eq!(config, Config::default());
        assert_eq!(config.max_turns, 100);
    }

    #[test]
    fn an_error_names_the_file_and_line() {
        let text = "model = \"m\"\nmax_turns = \"many\"\n";
        let err = Config::parse(text, Path::new("/c/config.toml")).unwrap_err();
        assert_eq!(err.line, Some(2));
        assert!(err.to_string().starts_with("/c/config.toml:2: "), "{err}");
    }

    #[test]
    fn an_unknown_key_is_an_error() {
        let err = Config::parse("modle = \"x\"\n", Path::new("c.toml")).unwrap_err();
        assert!(err.message.contains("modle"), "{err}");
    }

    #[test]
    fn a_broken_mcp_entry_is_reported_with_its_line_and_the_others_are_used() {
        let text = "model = \"m\"\n\n[mcp_servers.good]\ncommand = \"srv\"\n\n[mcp_servers.bad]\nurl = \"ftp://x\"\n";
        let config = Config::parse(text, Path::new("/c/config.toml")).unwrap();
        assert_eq!(config.mcp.servers.len(), 1);
        assert_eq!(config.mcp.servers[0].name, "good");
        assert_eq!(config.mcp.broken.len(), 1);
        let (name, error) = &config.mcp.broken[0];
        assert_eq!(name, "bad");
        assert!(error.starts_with("/c/config.toml:6: "), "{error}");
        assert!(error.contains("ftp://x"), "{error}");
    }

    #[test]
    fn profiles_and_modes_parse() {
        let text = "provider = \"local\"\ndefault_mode = \"plan\"\n[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n";
        let config = Config::parse(text, Path::new("c.toml")).unwrap();
        assert_eq!(config.default_mode.0, Mode::Plan);
        assert_eq!(config.providers["local"].kind, ProviderKind::Openai);
    }

    #[test]
    fn the_client_environment_wins_over_the_daemons() {
        let config = Config::default();
        let env = vec![
            ("ANTHROPIC_API_KEY".to_string(), "k".to_string()),
            (
                "ANTHROPIC_BASE_URL".to_string(),
                "http://127.0.0.1:9".to_string(),
            ),
        ];
        let (_, model) = config
            .provider(&reqwest::Client::new(), None, None, &env)
            .unwrap();
        assert_eq!(model, anthropic::DEFAULT_MODEL);
        let missing = config.provider(&reqwest::Client::new(), None, None, &[]);
        if std::env::var_os("ANTHROPIC_API_KEY").is_none() {
            assert!(
                matches!(missing, Err(ProviderError::MissingKey { env }) if env == "ANTHROPIC_API_KEY")
            );
        }
    }
}
