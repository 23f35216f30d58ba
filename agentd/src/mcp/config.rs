//! `[mcp_servers.NAME]` entries (docs/architecture.md#mcp-servers): a stdio server (`command`,
//! `args`, `env`, `cwd`) or a Streamable HTTP one (`url`, `headers`), with `enabled`, timeouts,
//! `scope` and `allow`. Each entry is read on its own: a broken one is reported (file and line) and
//! the others are used.
//!
//! ```toml
//! [mcp_servers.files]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
//! allow = ["read_file"]
//!
//! [mcp_servers.tickets]
//! url = "https://mcp.example.com/mcp"
//! headers = { Authorization = "Bearer ${TICKETS_TOKEN}" }
//! scope = "session"
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Whether one server serves the whole daemon or each session has its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum McpScope {
    /// One process (or HTTP session) for every session.
    #[default]
    Daemon,
    /// One per session, for servers that keep state.
    Session,
}

impl McpScope {
    /// The scope as written in the config.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            McpScope::Daemon => "daemon",
            McpScope::Session => "session",
        }
    }
}

/// How to reach a server. Its `Debug` form leaves header values out: they may hold tokens.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) enum McpTransport {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, on top of the filtered environment.
        env: BTreeMap<String, String>,
        /// Its working directory (default: the daemon's, or the session's for `session` scope).
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request, `${VAR}` already expanded.
        headers: BTreeMap<String, String>,
    },
}

impl std::fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            McpTransport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

impl McpTransport {
    /// "stdio" or "http".
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http { .. } => "http",
        }
    }
}

/// One configured server, checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct McpServerConfig {
    /// Its name in the config.
    pub(crate) name: String,
    /// How to reach it.
    pub(crate) transport: McpTransport,
    /// Whether it is used.
    pub(crate) enabled: bool,
    /// How long starting and `initialize` may take.
    pub(crate) startup_timeout: Duration,
    /// How long one tool call may take.
    pub(crate) call_timeout: Duration,
    /// One for the daemon or one per session.
    pub(crate) scope: McpScope,
    /// Tools that run without asking.
    pub(crate) allow: Vec<String>,
}

/// An entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default = "yes")]
    enabled: bool,
    #[serde(default = "startup_default")]
    startup_timeout_ms: u64,
    #[serde(default = "call_default")]
    call_timeout_ms: u64,
    #[serde(default)]
    scope: McpScope,
    #[serde(default)]
    allow: Vec<String>,
}

fn yes() -> bool {
    true
}

fn startup_default() -> u64 {
    10_000
}

fn call_default() -> u64 {
    60_000
}

/// Reads entry `name` from `value`; `env` looks up `${VAR}`s of headers (the daemon's
/// environment).
pub(crate) fn parse_entry(
    name: &str,
    value: toml::Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<McpServerConfig, String> {
    super::names::check_server_name(name).map_err(|e| format!("[mcp_servers.{name}]: {e}"))?;
    let entry: Entry = value
        .try_into()
        .map_err(|e: toml::de::Error| format!("[mcp_servers.{name}]: {}", e.message().trim()))?;
    let transport = match (entry.command, entry.url) {
        (Some(command), None) => McpTransport::Stdio {
            command,
            args: entry.args,
            env: entry.env,
            cwd: entry.cwd,
        },
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "[mcp_servers.{name}]: url `{url}` is not an http:// or https:// address"
                ));
            }
            let mut headers = BTreeMap::new();
            for (header, value) in entry.headers {
                let value = expand(&value, env).map_err(|var| {
                    format!("[mcp_servers.{name}]: header `{header}` uses ${{{var}}}, which is not set in the daemon's environment")
                })?;
                check_header(&header, &value).map_err(|e| format!("[mcp_servers.{name}]: {e}"))?;
                headers.insert(header, value);
            }
            McpTransport::Http { url, headers }
        }
        (Some(_), Some(_)) => {
            return Err(format!(
                "[mcp_servers.{name}]: give either `command` (stdio) or `url` (HTTP), not both"
            ));
        }
        (None, None) => {
            return Err(format!(
                "[mcp_servers.{name}]: give `command` (a stdio server) or `url` (an HTTP one)"
            ));
        }
    };
    Ok(McpServerConfig {
        name: name.to_string(),
        transport,
        enabled: entry.enabled,
        startup_timeout: Duration::from_millis(entry.startup_timeout_ms.max(1)),
        call_timeout: Duration::from_millis(entry.call_timeout_ms.max(1)),
        scope: entry.scope,
        allow: entry.allow,
    })
}

/// A server a client brought for one session (an editor's `mcpServers`): `session` scope,
/// default timeouts, nothing allowed without asking.
pub(crate) fn from_spec(spec: &protocol::McpServerSpec) -> Result<McpServerConfig, String> {
    let name = &spec.name;
    super::names::check_server_name(name).map_err(|e| format!("MCP server `{name}`: {e}"))?;
    let transport = match (&spec.command, &spec.url) {
        (Some(command), None) => McpTransport::Stdio {
            command: command.clone(),
            args: spec.args.clone(),
            env: spec.env.iter().cloned().collect(),
            cwd: None,
        },
        (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
            for (header, value) in &spec.headers {
                check_header(header, value).map_err(|e| format!("MCP server `{name}`: {e}"))?;
            }
            McpTransport::Http {
                url: url.clone(),
                headers: spec.headers.iter().cloned().collect(),
            }
        }
        _ => {
            return Err(format!(
                "MCP server `{name}`: give a `command` or an http(s) `url`"
            ));
        }
    };
    Ok(McpServerConfig {
        name: name.clone(),
        transport,
        enabled: true,
        startup_timeout: Duration::from_millis(startup_default()),
        call_timeout: Duration::from_millis(call_default()),
        scope: McpScope::Session,
        allow: Vec::new(),
    })
}

/// Checks a header: a valid name and value (never shown: it may hold a token), and not one the
/// transport sets itself.
fn check_header(name: &str, value: &str) -> Result<(), String> {
    if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(format!("`{name}` is not a valid header name"));
    }
    if reqwest::header::HeaderValue::from_str(value).is_err() {
        return Err(format!(
            "the value of header `{name}` is not a valid header value"
        ));
    }
    let reserved = [
        "accept",
        "mcp-session-id",
        "last-event-id",
        "mcp-protocol-version",
    ];
    if reserved.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(format!(
            "header `{name}` is set by the MCP transport and cannot be configured"
        ));
    }
    Ok(())
}

/// `text` with every `${VAR}` replaced by its value; `Err(VAR)` for the first one not set.
fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest.get(start + 2..).and_then(|r| r.find('}')) else {
            break;
        };
        let var = rest.get(start + 2..start + 2 + len).unwrap_or_default();
        out.push_str(rest.get(..start).unwrap_or_default());
        out.push_str(&env(var).ok_or_else(|| var.to_string())?);
        rest = rest.get(start + 3 + len..).unwrap_or_default();
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, text: &str) -> Result<McpServerConfig, String> {
        let env = |var: &str| (var == "TOKEN").then(|| "s3cret".to_string());
        parse_entry(name, toml::from_str(text).unwrap(), &env)
    }

    #[test]
    fn stdio_and_http_entries_parse_with_defaults() {
        let stdio = parse("files", "command = \"srv\"\nargs = [\"-v\"]\n").unwrap();
        assert_eq!(stdio.transport.kind(), "stdio");
        assert_eq!(stdio.scope, McpScope::Daemon);
        assert_eq!(stdio.call_timeout, Duration::from_secs(60));
        assert!(stdio.enabled);
        let http = parse(
            "tickets",
            "url = \"https://x/mcp\"\nheaders = { Authorization = \"Bearer ${TOKEN}\" }\nscope = \"session\"\n",
        )
        .unwrap();
        assert_eq!(
            http.transport,
            McpTransport::Http {
                url: "https://x/mcp".into(),
                headers: [("Authorization".to_string(), "Bearer s3cret".to_string())].into(),
            }
        );
        assert_eq!(http.scope, McpScope::Session);
    }

    #[test]
    fn broken_entries_say_what_is_wrong() {
        let cases = [
            ("a", "", "give `command`"),
            ("a", "command = \"x\"\nurl = \"http://y\"\n", "not both"),
            ("a", "url = \"ftp://y\"\n", "not an http"),
            (
                "a",
                "url = \"http://y\"\nheaders = { A = \"${NOPE}\" }\n",
                "${NOPE}",
            ),
            ("a b", "command = \"x\"\n", "name"),
            ("a__b", "command = \"x\"\n", "name"),
            (
                "a",
                "url = \"http://y\"\nheaders = { Accept = \"x\" }\n",
                "set by the MCP transport",
            ),
            ("a", "command = \"x\"\nsope = \"daemon\"\n", "sope"),
        ];
        for (name, text, expected) in cases {
            let error = parse(name, text).unwrap_err();
            assert!(error.contains(expected), "{name} {text:?}: {error}");
        }
        let http = parse("a", "url = \"http://y\"\nheaders = { A = \"${TOKEN}\" }\n").unwrap();
        assert!(!format!("{http:?}").contains("s3cret"));
    }
}
