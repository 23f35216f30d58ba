//! agentd: the daemon that owns every agent session. Clients talk to it over a local socket
//! with the `protocol` crate; see SPEC §2 for the actors inside.

// Text from models, files and clients is sliced by characters or checked with `get`, never by
// raw byte index: a byte index inside a character panics.
#![deny(clippy::string_slice)]

pub mod checkpoint;
pub mod commands;
pub mod compact;
pub mod config;
pub mod connection;
pub mod conversation;
pub mod daemon;
pub mod front_matter;
pub mod health;
pub mod hooks;
pub mod mcp;
pub mod model_profile;
pub mod permission;
pub mod prices;
pub mod prompt;
pub mod provider;
pub mod regular_file;
pub mod sandbox;
pub mod session;
pub mod shell_env;
pub mod skills;
pub mod stale_files;
pub mod stop;
pub mod store;
pub mod subagents;
pub mod summaries;
pub mod supervisor;
pub mod tools;
pub mod worktree;

use std::time::{SystemTime, UNIX_EPOCH};

/// Numbers the daemon's client connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionId(pub u64);

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The resident memory of this process in bytes, where the OS tells it.
pub fn resident_memory() -> Option<u64> {
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
