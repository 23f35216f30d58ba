//! What every connection task shares: the supervisor, the configuration, the MCP servers, the
//! table of open connections and the shutdown signal.

use std::sync::Arc;

use kameo::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::config::ConfigState;
use crate::supervisor::Supervisor;

/// What every connection task shares.
pub(crate) struct Shared {
    /// The registry of sessions.
    pub(crate) supervisor: ActorRef<Supervisor>,
    /// Cancelled when the daemon stops serving (a planned stop first waits for running tool
    /// calls): connections close.
    pub(crate) shutdown: CancellationToken,
    /// The daemon's planned stop, which `Shutdown` asks for.
    pub(crate) stop: crate::stop::PlannedStop,
    /// Open connections.
    pub(crate) connections: Arc<super::table::Connections>,
    /// The socket path, for `Status`.
    pub(crate) socket: String,
    /// The configuration in force.
    pub(crate) config: tokio::sync::watch::Receiver<ConfigState>,
    /// The MCP servers.
    pub(crate) mcp: crate::mcp::McpHub,
    /// The language servers.
    pub(crate) lsp: crate::lsp::LspHub,
    /// The user's configuration directory (agents, skills, commands).
    pub(crate) config_dir: std::path::PathBuf,
}
