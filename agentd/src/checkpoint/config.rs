//! `[checkpoints]` of the configuration: what a checkpoint may hold.

use serde::{Deserialize, Serialize};

/// `[checkpoints]`: what the state of the session directory recorded around each run may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointConfig {
    /// Whether runs record checkpoints at all.
    pub enabled: bool,
    /// Files larger than this are not stored; they are listed as not restorable.
    pub max_file_bytes: u64,
    /// A directory with more files than this (not counting ignored ones) gets no checkpoint:
    /// the run says why, and goes on.
    pub max_files: usize,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            enabled: true,
            max_file_bytes: 10 << 20,
            max_files: 50_000,
        }
    }
}
