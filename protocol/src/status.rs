//! The daemon's status, its MCP servers and its language servers.

use serde::{Deserialize, Serialize};

use crate::session::SessionId;

/// What `Status` tells about the daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStatus {
    /// Sessions loaded in memory now (the others wait on disk).
    pub loaded: u64,
    /// The daemon's version.
    pub daemon_version: String,
    /// The daemon's protocol version.
    pub protocol_version: u32,
    /// The daemon's process id.
    pub pid: u32,
    /// Milliseconds since the daemon started.
    pub uptime_ms: u64,
    /// Where the daemon listens.
    pub socket: String,
    /// Sessions the daemon knows of.
    pub sessions: u64,
    /// Sessions with a run going.
    pub running: u64,
    /// Client connections open now.
    pub clients: u64,
    /// Resident memory of the daemon in bytes, where the OS tells it.
    pub rss_bytes: Option<u64>,
    /// The daemon's data directory.
    pub data_dir: String,
    /// Why the configuration file on disk is not in force (file, line and reason), if it is not.
    pub config_error: Option<String>,
    /// With `config_error`: whether the daemon never had a good configuration, so runs are
    /// refused (unless they ignore the file); otherwise the last good configuration is in force.
    pub config_fail_closed: bool,
    /// How many times the configuration file was read (goes up with every change seen).
    pub config_generation: u64,
    /// The configured MCP servers and their instances.
    pub mcp_servers: Vec<McpServerInfo>,
    /// Language servers running now.
    pub lsp_servers: u32,
    /// What the sandbox of `auto` mode can do here, found at start.
    pub sandbox: String,
}

/// An MCP server a client brings for one session (an editor's `mcpServers`): a stdio server
/// (`command`) or a Streamable HTTP one (`url`). Kept in the daemon's memory only, since its
/// environment and headers may hold tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerSpec {
    /// Its name; its tools are `mcp__<name>__<tool>`.
    pub name: String,
    /// The program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for it.
    pub env: Vec<(String, String)>,
    /// The endpoint of an HTTP server.
    pub url: Option<String>,
    /// Headers sent to it.
    pub headers: Vec<(String, String)>,
}

/// One MCP server as `agentctl mcp list` shows it: a configured entry, or one running instance
/// of it (a `session`-scope server has one per session that used it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerInfo {
    /// Its name in the config.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// `daemon` or `session`.
    pub scope: String,
    /// The session the instance belongs to (`session` scope).
    pub session: Option<SessionId>,
    /// `idle` (not started yet), `starting`, `ready`, `restarting`, `failed`, `disabled` or
    /// `broken` (its config entry is invalid).
    pub state: String,
    /// The server process, for a running stdio server.
    pub pid: Option<u32>,
    /// Tools it offers.
    pub tools: u32,
    /// The last thing that went wrong, with the tail of its stderr when there is one.
    pub last_error: Option<String>,
}

/// One language server instance (a server for one project root) as `agentctl lsp list` shows
/// it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LspServerInfo {
    /// The server's name (`pyright`, a `[lsp.NAME]` entry).
    pub name: String,
    /// The project root it serves.
    pub root: String,
    /// `starting`, `ready`, `restarting`, `failed` or `stopped`.
    pub state: String,
    /// Its process, while it runs.
    pub pid: Option<u32>,
    /// The sessions that used it.
    pub sessions: Vec<SessionId>,
    /// The file extensions or language ids it serves.
    pub languages: Vec<String>,
    /// How many times it was started again after a crash.
    pub restarts: u32,
    /// The last thing that went wrong, with the tail of its stderr when there is one.
    pub last_error: Option<String>,
}
