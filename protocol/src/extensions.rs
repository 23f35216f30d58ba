//! What shapes a session besides its settings (docs/architecture.md#hooks,
//! docs/architecture.md#skills-and-commands): the hooks in force, and the skills and slash commands
//! a directory has.

use serde::{Deserialize, Serialize};

/// The hooks, skills and commands for one directory.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Extensions {
    /// The configured hooks, by event, in the order they run.
    pub hooks: Vec<HookInfo>,
    /// The skills.
    pub skills: Vec<SkillInfo>,
    /// The slash commands, by name.
    pub commands: Vec<CommandInfo>,
}

/// One configured hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookInfo {
    /// Its event.
    pub event: String,
    /// The tools it applies to, when it names them.
    pub matcher: Option<String>,
    /// Its command.
    pub command: String,
    /// When it is killed.
    pub timeout_secs: u64,
    /// What its failure means: `ignore` or `block`.
    pub on_error: String,
}

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillInfo {
    /// Its name.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Its `SKILL.md`.
    pub path: String,
}

/// One slash command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandInfo {
    /// Its name, typed as `/NAME`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// What its arguments are.
    pub argument_hint: Option<String>,
}
