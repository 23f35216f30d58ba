//! Sessions: the actor that owns one session, its event log and queues, and the agent loop it
//! runs.

pub(crate) mod actor;
pub(crate) mod directory;
pub(crate) mod event_log;
pub(crate) mod listing;
pub(crate) mod queue;
pub(crate) mod run;
pub(crate) mod summary;
pub(crate) mod usage;

use std::sync::Arc;

use protocol::local::paths::Paths;
use tokio::sync::watch;

use crate::config::{Config, ConfigState};
use crate::tools::ToolPool;
pub(crate) use actor::{SessionActor, SessionArgs};

/// What every session shares.
pub(crate) struct SessionEnv {
    /// The daemon's paths.
    pub(crate) paths: Paths,
    /// The tool executors.
    pub(crate) tools: ToolPool,
    /// The HTTP client for providers (one connection pool).
    pub(crate) http: reqwest::Client,
    /// The configuration in force.
    pub(crate) config: watch::Receiver<ConfigState>,
    /// Watches the files sessions read.
    pub(crate) files: crate::stale_files::FileWatcher,
    /// Records of running commands' process groups.
    pub(crate) processes: crate::tools::processes::ProcessRecords,
    /// The MCP servers, shared by every session.
    pub(crate) mcp: crate::mcp::McpHub,
    /// The language servers, shared by every session.
    pub(crate) lsp: crate::lsp::LspHub,
    /// The web cache and clients of `fetch` and `web_search`, shared by every session.
    pub(crate) web: crate::web::Web,
    /// Which sessions have a run going, for the next daemon.
    pub(crate) running: crate::store::RunningJournal,
    /// The daemon's sessions: where subagents are made and other sessions found.
    pub(crate) directory: Arc<dyn directory::Directory>,
    /// The daemon's planned stop: once it is asked for, runs start nothing new.
    pub(crate) stop: crate::stop::PlannedStop,
}

impl SessionEnv {
    /// The configuration in force now.
    pub(crate) fn config(&self) -> Arc<Config> {
        self.config.borrow().config.clone()
    }
}
