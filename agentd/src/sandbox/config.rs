//! `[sandbox]` of `config.toml`: what commands in `auto` mode may reach besides the session
//! directory, what they may never see, and how much of the machine one call may take.
//!
//! ```toml
//! [sandbox]
//! writable = ["~/.cache/pip"]     # more places commands may write
//! network = false
//! hidden = ["~/secrets"]          # more places commands and read/grep/glob never see
//! visible = ["~/.npmrc"]          # let one of the default credential stores through
//! max_processes = 512             # processes (and threads) of one call
//! max_memory_mb = 8192            # memory of one call (of each process, where no cgroup)
//! tmp_size_mb = 1024              # the call's private /tmp
//! min_free_mb = 1024              # free space the session directory's disk must keep
//! ```

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::limits::Limits;

/// `[sandbox]`: the reach and the bounds of commands in `auto` mode.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct SandboxConfig {
    /// More paths commands may write below.
    pub(crate) writable: Vec<PathBuf>,
    /// Whether commands may use the network.
    pub(crate) network: bool,
    /// More paths hidden from commands and from `read`, `grep` and `glob`, besides the
    /// credential stores hidden by default.
    pub(crate) hidden: Vec<PathBuf>,
    /// Default credential stores let through on purpose.
    pub(crate) visible: Vec<PathBuf>,
    /// Processes (threads count too) one call may have at once.
    pub(crate) max_processes: u64,
    /// Memory one call may use, in MiB (each of its processes where no cgroup can be made).
    pub(crate) max_memory_mb: u64,
    /// Size of a call's private `/tmp` (and `/dev/shm`), in MiB.
    pub(crate) tmp_size_mb: u64,
    /// Free space, in MiB, the session directory's file system must have for a call to start.
    pub(crate) min_free_mb: u64,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        let limits = Limits::default();
        SandboxConfig {
            writable: Vec::new(),
            network: false,
            hidden: Vec::new(),
            visible: Vec::new(),
            max_processes: limits.max_processes,
            max_memory_mb: limits.max_memory_mb,
            tmp_size_mb: limits.tmp_size_mb,
            min_free_mb: 1024,
        }
    }
}

impl SandboxConfig {
    /// The bounds of one call.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            max_processes: self.max_processes.max(1),
            max_memory_mb: self.max_memory_mb.max(1),
            tmp_size_mb: self.tmp_size_mb.max(1),
        }
    }
}
