//! Sessions: the actor that owns one session, its event log and queues, and the agent loop it
//! runs.

pub mod actor;
pub mod directory;
pub mod event_log;
pub mod listing;
pub mod queue;
pub mod run;
pub mod summary;
pub mod usage;

use std::sync::Arc;

use agentctl::client::paths::Paths;
use tokio::sync::watch;

use crate::config::{Config, ConfigState};
use crate::tools::ToolPool;
pub use actor::{SessionActor, SessionArgs};

/// What every session shares.
pub struct SessionEnv {
    /// The daemon's paths.
    pub paths: Paths,
    /// The tool executors.
    pub tools: ToolPool,
    /// The HTTP client for providers (one connection pool).
    pub http: reqwest::Client,
    /// The configuration in force.
    pub config: watch::Receiver<ConfigState>,
    /// Watches the files sessions read.
    pub files: crate::stale_files::FileWatcher,
    /// Records of running commands' process groups.
    pub processes: crate::tools::processes::ProcessRecords,
    /// The MCP servers, shared by every session.
    pub mcp: crate::mcp::McpHub,
    /// Which sessions have a run going, for the next daemon.
    pub running: crate::store::RunningJournal,
    /// The daemon's sessions: where subagents are made and other sessions found.
    pub directory: Arc<dyn directory::Directory>,
    /// The daemon's planned stop: once it is asked for, runs start nothing new.
    pub stop: crate::stop::PlannedStop,
}

impl SessionEnv {
    /// The configuration in force now.
    pub fn config(&self) -> Arc<Config> {
        self.config.borrow().config.clone()
    }
}
