//! Hooks (SPEC §15): commands from the user's configuration that run at points of a session's
//! life (a tool call, a prompt, the end of a run) with a JSON description on stdin, in Claude
//! Code's field names so existing scripts work, and whose exit code and JSON output can refuse,
//! allow, change or add to what happens.

pub mod chain;
pub mod config;
pub mod output;
pub mod process;

pub use config::{Hook, HookEvent, HookTable, OnError, hooks_for};
