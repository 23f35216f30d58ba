//! Agent definitions (docs/architecture.md#subagents): markdown files with YAML front matter in the
//! project's `.agents/agents/` and `.claude/agents/` and the user's `<config>/agents/`, in the
//! format Claude Code's subagents use, so existing definitions work as they are. `general` always
//! exists.

use std::path::{Path, PathBuf};

use protocol::Mode;
use serde::Deserialize;

/// The most definition files read from one directory.
const MAX_FILES: usize = 64;
/// The most characters of a description the `task` tool lists.
pub(crate) const MAX_DESCRIPTION: usize = 400;

/// One kind of subagent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AgentDef {
    /// The name the `task` tool's `agent` argument takes.
    pub(crate) name: String,
    /// When to use it, for the model.
    pub(crate) description: String,
    /// The tools it may use; all of the parent's when `None`.
    pub(crate) tools: Option<Vec<String>>,
    /// Its model; the parent's when `None`.
    pub(crate) model: Option<String>,
    /// Its mode, if stricter than the parent's (a child never gets more than its parent).
    pub(crate) mode: Option<Mode>,
    /// Its turn limit.
    pub(crate) max_turns: Option<u32>,
    /// Whether it works in a git worktree of its own.
    pub(crate) worktree: bool,
    /// Added to its system prompt.
    pub(crate) body: String,
    /// Where it was defined; `None` for the built-in `general`.
    pub(crate) source: Option<PathBuf>,
}

impl AgentDef {
    /// The agent that always exists.
    pub(crate) fn general() -> AgentDef {
        AgentDef {
            name: "general".to_string(),
            description: "General-purpose agent for researching questions, searching code and \
                          carrying out multi-step tasks; it has every tool its parent has."
                .to_string(),
            tools: None,
            model: None,
            mode: None,
            max_turns: None,
            worktree: false,
            body: String::new(),
            source: None,
        }
    }
}

/// A name or a list of names (`tools: Read, Grep` or `tools: [read, grep]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Names {
    One(String),
    Many(Vec<String>),
}

/// The front matter, as Claude Code writes it (unknown keys are ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "snake_case")]
struct Head {
    name: Option<String>,
    description: Option<String>,
    tools: Option<Names>,
    model: Option<String>,
    #[serde(alias = "permissionMode", alias = "permission_mode")]
    mode: Option<String>,
    #[serde(alias = "maxTurns")]
    max_turns: Option<u32>,
    isolation: Option<String>,
}

/// The directories definitions are read from, in order of precedence: the project's (at the
/// session directory and at its git root) before the user's.
pub(crate) fn directories(cwd: &Path, config_dir: &Path) -> Vec<PathBuf> {
    crate::front_matter::directories(cwd, config_dir, "agents")
}

/// Every definition found in `dirs` (the first of a name wins) and `general`; with what was
/// wrong with the files that were skipped.
pub(crate) fn discover(dirs: &[PathBuf]) -> (Vec<AgentDef>, Vec<String>) {
    let mut found: Vec<AgentDef> = Vec::new();
    let mut problems = Vec::new();
    for dir in dirs {
        for path in crate::front_matter::markdown_files(dir, MAX_FILES) {
            match read(&path) {
                Ok(def) if found.iter().any(|d| d.name == def.name) => {}
                Ok(def) => found.push(def),
                Err(problem) => problems.push(problem),
            }
        }
    }
    if !found.iter().any(|d| d.name == "general") {
        found.insert(0, AgentDef::general());
    }
    (found, problems)
}

/// Reads one definition.
fn read(path: &Path) -> Result<AgentDef, String> {
    let doc = crate::front_matter::read::<Head>(path).map_err(|e| e.to_string())?;
    let head = doc.head;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = head.name.unwrap_or(stem);
    if !crate::front_matter::valid_name(&name) {
        return Err(format!(
            "{}: the agent name `{}` is not usable; use letters, digits, `-` and `_` (64 at most)",
            path.display(),
            name.escape_debug()
        ));
    }
    let mode = match head.mode.as_deref().map(str::trim) {
        None | Some("") | Some("inherit") => None,
        Some(mode) => Some(parse_mode(mode).ok_or_else(|| {
            format!(
                "{}: unknown mode `{}`; use plan, default, accept-edits, auto or bypass",
                path.display(),
                mode.escape_debug()
            )
        })?),
    };
    let tools = head.tools.map(|names| {
        let names = match names {
            Names::One(list) => list.split(',').map(str::to_string).collect(),
            Names::Many(list) => list,
        };
        names
            .iter()
            .map(|n| tool_name(n.trim()))
            .filter(|n| !n.is_empty())
            .collect::<Vec<_>>()
    });
    let description = head
        .description
        .unwrap_or_else(|| doc.body.lines().next().unwrap_or_default().to_string());
    Ok(AgentDef {
        name,
        description: description.chars().take(MAX_DESCRIPTION).collect(),
        tools,
        model: head.model.filter(|m| !matches!(m.trim(), "" | "inherit")),
        mode,
        max_turns: head.max_turns,
        worktree: head.isolation.as_deref().map(str::trim) == Some("worktree"),
        body: doc.body,
        source: Some(path.to_path_buf()),
    })
}

/// A mode by our name or Claude Code's.
fn parse_mode(mode: &str) -> Option<Mode> {
    Some(match mode {
        "acceptEdits" => Mode::AcceptEdits,
        "bypassPermissions" => Mode::Bypass,
        other => other.parse().ok()?,
    })
}

/// Our name for a tool named the way Claude Code names its own (`Read`, `MultiEdit`, `LS`);
/// other names (an MCP server's tools) are kept as they are.
fn tool_name(name: &str) -> String {
    match name.to_ascii_lowercase().as_str() {
        "read" | "notebookread" => "read".to_string(),
        "write" => "write".to_string(),
        "edit" | "multiedit" | "notebookedit" => "edit".to_string(),
        "bash" => "bash".to_string(),
        "grep" => "grep".to_string(),
        "glob" | "ls" => "glob".to_string(),
        "task" | "agent" => "task".to_string(),
        _ => name.to_string(),
    }
}

/// How much a mode lets an agent do without asking, least first.
fn latitude(mode: Mode) -> u8 {
    match mode {
        Mode::Plan => 0,
        Mode::Default => 1,
        Mode::AcceptEdits => 2,
        Mode::Auto => 3,
        Mode::Bypass => 4,
    }
}

/// The mode of a child of a session in `parent` mode whose definition asks for `wanted`: never
/// more than its parent's.
pub(crate) fn child_mode(parent: Mode, wanted: Option<Mode>) -> Mode {
    match wanted {
        Some(wanted) if latitude(wanted) < latitude(parent) => wanted,
        _ => parent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_definition_reads_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join(".claude/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("reviewer.md"),
            "---\nname: code-reviewer\ndescription: Reviews code.\ntools: Read, Grep, Glob, MultiEdit\nmodel: inherit\npermissionMode: acceptEdits\nmaxTurns: 7\ncolor: blue\n---\nYou review code.\n",
        )
        .unwrap();
        std::fs::write(agents.join("bad.md"), "---\nname: [\n---\n").unwrap();
        std::fs::write(agents.join("notes.txt"), "not a definition").unwrap();
        let (defs, problems) = discover(&directories(dir.path(), &dir.path().join("cfg")));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(defs[0].name, "general");
        let reviewer = &defs[1];
        assert_eq!(reviewer.name, "code-reviewer");
        assert_eq!(
            reviewer.tools.as_deref().unwrap(),
            ["read", "grep", "glob", "edit"]
        );
        assert_eq!(reviewer.model, None);
        assert_eq!(reviewer.mode, Some(Mode::AcceptEdits));
        assert_eq!(reviewer.max_turns, Some(7));
        assert_eq!(reviewer.body, "You review code.");
    }

    #[test]
    fn a_child_never_gets_more_than_its_parent() {
        assert_eq!(child_mode(Mode::Default, Some(Mode::Bypass)), Mode::Default);
        assert_eq!(child_mode(Mode::Auto, Some(Mode::Plan)), Mode::Plan);
        assert_eq!(child_mode(Mode::Bypass, None), Mode::Bypass);
    }
}
