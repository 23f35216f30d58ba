//! agentd: the daemon that owns every agent session. Clients talk to it over a local socket
//! with the `protocol` crate; see docs/architecture.md#processes-and-actors for the actors inside.

// Text from models, files and clients is sliced by characters or checked with `get`, never by
// raw byte index: a byte index inside a character panics.
#![deny(clippy::string_slice)]

pub mod checkpoint;
pub(crate) mod commands;
pub(crate) mod compact;
pub mod config;
pub(crate) mod connection;
pub mod conversation;
pub mod daemon;
pub(crate) mod front_matter;
pub(crate) mod health;
pub(crate) mod hooks;
pub(crate) mod images;
pub(crate) mod lsp;
pub mod mcp;
pub(crate) mod model_profile;
pub(crate) mod permission;
pub(crate) mod prices;
pub(crate) mod prompt;
pub mod provider;
pub(crate) mod regular_file;
pub(crate) mod restart_backoff;
pub mod sandbox;
pub(crate) mod session;
pub mod shell_env;
pub(crate) mod skills;
pub(crate) mod stale_files;
pub(crate) mod stop;
pub mod store;
pub(crate) mod subagents;
pub(crate) mod summaries;
pub(crate) mod supervisor;
pub(crate) mod tool_spec;
pub mod tools;
pub(crate) mod web;
pub(crate) mod worktree;

use std::time::{SystemTime, UNIX_EPOCH};

/// Numbers the daemon's client connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ConnectionId(pub u64);

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The resident memory of this process in bytes, where the OS tells it.
pub(crate) fn resident_memory() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        Some(pages * u64::try_from(page).ok()?)
    }
    #[cfg(not(target_os = "linux"))]
    None
}
