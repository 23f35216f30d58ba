//! What a run is given when it starts, grouped by what it is for: how it begins, where it
//! works and with what, and its place among subagents.

use std::path::Path;
use std::sync::Arc;

use protocol::{RunId, SessionId};
use tokio_util::sync::CancellationToken;

use super::port::SessionPort;
use super::{Resumed, TaskSetup};
use crate::checkpoint::Checkpoints;
use crate::config::Config;
use crate::mcp::{McpHub, SessionSide};
use crate::provider::Choice;
use crate::stale_files::FileTracker;
use crate::stop::PlannedStop;
use crate::tools::ToolPool;
use crate::tools::processes::ProcessRecords;

/// Everything a run needs.
pub(crate) struct RunSetup {
    /// The session the run belongs to: the run's only way to it.
    pub(crate) session: SessionPort,
    /// The run's id.
    pub(crate) run: RunId,
    /// The configuration in force when the run started.
    pub(crate) config: Arc<Config>,
    /// The provider, model and limits chosen for the run.
    pub(crate) choice: Choice,
    /// The turn limit; 0 for none.
    pub(crate) max_turns: u32,
    /// Fires when the user cancels.
    pub(crate) cancel: CancellationToken,
    /// The daemon's planned stop: once it is asked for, the run starts no model turn and no
    /// tool call, and waits to be stopped (the next daemon resumes it).
    pub(crate) stop: PlannedStop,
    /// How the run begins.
    pub(crate) start: Start,
    /// Where the run works, and with what.
    pub(crate) place: Workplace,
    /// The run's place among subagents.
    pub(crate) nesting: Nesting,
}

/// How a run begins: with a message, or where a run the daemon did not live to finish stood.
pub(crate) struct Start {
    /// The message that started the run (its hooks see it); `None` for a resumed run.
    pub(crate) prompt: Option<String>,
    /// Where the run stood, when it is resumed after the daemon stopped.
    pub(crate) resumed: Option<Resumed>,
}

/// Where a run works, and with what.
pub(crate) struct Workplace {
    /// The session, its directory and the environment its commands run with, as its MCP
    /// servers see them.
    pub(crate) side: SessionSide,
    /// The files the session read, for the stale-file guard.
    pub(crate) files: Arc<FileTracker>,
    /// Where running commands are recorded.
    pub(crate) processes: ProcessRecords,
    /// The tool pool.
    pub(crate) tools: ToolPool,
    /// The MCP servers.
    pub(crate) mcp: McpHub,
    /// The language servers, for this session.
    pub(crate) lsp: crate::lsp::LspHub,
    /// Whether a language server covers the session's files (`code` is offered).
    pub(crate) code: bool,
    /// Where the run's checkpoints go; `None` when they are off.
    pub(crate) checkpoints: Option<Arc<Checkpoints>>,
    /// The session's background shells, with the limit the run's configuration sets.
    pub(crate) shells: crate::tools::shells::Shells,
    /// The daemon's web cache and clients (docs/architecture.md#web-access).
    pub(crate) web: crate::web::Web,
    /// The run's search service: configured, and its key found (`web_search` is offered).
    pub(crate) search: Option<Arc<crate::web::SearchEngine>>,
    /// The session's image store, or why the run's model may not be sent images.
    pub(crate) images: crate::images::ImageAccess,
}

impl Workplace {
    /// The session's id.
    pub(crate) fn id(&self) -> &SessionId {
        &self.side.id
    }

    /// The session directory.
    pub(crate) fn cwd(&self) -> &Path {
        &self.side.cwd
    }

    /// The environment commands run with.
    pub(crate) fn env(&self) -> &Arc<Vec<(String, String)>> {
        &self.side.env
    }
}

/// A run's place among subagents (docs/architecture.md#subagents).
pub(crate) struct Nesting {
    /// What starting subagents needs; `None` where this session may not.
    pub(crate) children: Option<Arc<TaskSetup>>,
    /// The tools a subagent's definition allows it; every tool when `None`.
    pub(crate) allowed_tools: Option<Vec<String>>,
    /// Whether the session is a subagent (its Stop hooks are `SubagentStop`).
    pub(crate) subagent: bool,
}
