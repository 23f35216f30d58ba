//! Whether a tool call may run: the permission matrix of the modes (SPEC §6), grants given for
//! a run, the "always allow" rules a user gave for a session, and the allow and deny rules of
//! the configuration.

pub mod command_rule;
pub mod rules;
pub mod shell;

use std::path::{Path, PathBuf};

use protocol::{Mode, PermissionClass};
use serde_json::Value;

use crate::tools::{Tool, display, resolve};
use command_rule::{DenyCheck, written};
pub use rules::PermissionRules;
use rules::Subject;
use shell::{CommandLine, SimpleCommand, Unparsable, Word};

/// What to do with a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Ask the user; with the reason when it is not simply the mode's rule.
    Ask(Option<String>),
    /// Refuse it; the model gets this reason.
    Deny(String),
}

/// A call a user allowed for the rest of the session: the same tool on the same file, or a
/// command starting with the same words.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlwaysRule {
    /// Writes and edits of one file.
    Path(PathBuf),
    /// Commands that start with these words (every simple command of the line must).
    CommandPrefix(String),
    /// One tool of an MCP server, as `server/tool`.
    McpTool(String),
}

/// The tool a call is for: a built-in one, or a tool of an MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallTool<'a> {
    /// A built-in tool.
    Builtin(Tool),
    /// A tool of an MCP server.
    Mcp {
        /// The server's name in the config.
        server: &'a str,
        /// The tool's name on the server.
        tool: &'a str,
        /// Whether the server's `allow` list names the tool.
        allowed: bool,
    },
}

/// A call's tool, owned: what a pending permission request keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRef {
    /// A built-in tool.
    Builtin(Tool),
    /// A tool of an MCP server.
    Mcp {
        /// The server's name in the config.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// Whether the server's `allow` list names the tool.
        allowed: bool,
    },
}

impl ToolRef {
    /// The borrowed form the decision takes.
    pub fn as_call(&self) -> CallTool<'_> {
        match self {
            ToolRef::Builtin(tool) => CallTool::Builtin(*tool),
            ToolRef::Mcp {
                server,
                tool,
                allowed,
            } => CallTool::Mcp {
                server,
                tool,
                allowed: *allowed,
            },
        }
    }
}

impl From<Tool> for CallTool<'_> {
    fn from(tool: Tool) -> Self {
        CallTool::Builtin(tool)
    }
}

impl CallTool<'_> {
    /// What kind of effect the call has.
    pub fn class(&self) -> PermissionClass {
        match self {
            CallTool::Builtin(tool) => tool.class(),
            CallTool::Mcp { .. } => PermissionClass::Mcp,
        }
    }

    /// The name rules use: a built-in tool's name, or `mcp`.
    pub fn rule_name(&self) -> &'static str {
        match self {
            CallTool::Builtin(tool) => tool.name(),
            CallTool::Mcp { .. } => "mcp",
        }
    }
}

/// The facts about one call that the decision needs.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The tool.
    pub tool: CallTool<'a>,
    /// Its arguments.
    pub args: &'a Value,
    /// The session directory.
    pub cwd: &'a Path,
    /// The session's plan file.
    pub plan_file: &'a Path,
    /// Whether commands of this call would run in the kernel sandbox (auto mode, where the
    /// machine has one).
    pub sandbox: bool,
}

impl Call<'_> {
    /// Whether a `bash` call asks to run outside the sandbox (`"sandbox": false`).
    pub fn unsandboxed(&self) -> bool {
        self.tool == CallTool::Builtin(Tool::Bash) && self.args["sandbox"] == Value::Bool(false)
    }

    fn target(&self) -> Option<PathBuf> {
        self.args["path"]
            .as_str()
            .map(|p| real_path(&resolve(self.cwd, p)))
    }

    fn command(&self) -> Option<&str> {
        self.args["command"].as_str()
    }
}

/// Files outside the session directory that output may still be redirected to.
const HARMLESS_TARGETS: [&str; 4] = ["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

/// Decides a call: deny rules first (a command that cannot be checked against them asks);
/// reads always run; `bypass` runs everything; grants of the run, the mode's rules, the
/// session's always-rules and the allow rules allow the rest; anything else asks.
pub fn check(
    call: Call<'_>,
    mode: Mode,
    grants: &[PermissionClass],
    always: &[AlwaysRule],
    rules: &PermissionRules,
) -> Verdict {
    let parsed = call.command().map(shell::parse);
    let subject = match (call.tool, &parsed, call.target()) {
        (CallTool::Mcp { server, tool, .. }, _, _) => Subject::Mcp(format!("{server}/{tool}")),
        (CallTool::Builtin(Tool::Bash), Some(parsed), _) => Subject::Command(parsed),
        (_, _, Some(target)) => Subject::Path(display(&real_path(call.cwd), &target)),
        _ => Subject::Nothing,
    };
    match rules.deny_check(call.tool, &subject) {
        DenyCheck::Denied(rule) => {
            return Verdict::Deny(format!(
                "denied by the permission rule `{rule}` in config.toml"
            ));
        }
        DenyCheck::Unknown(why) => {
            return Verdict::Ask(Some(format!(
                "it cannot be checked against the deny rules: {why}"
            )));
        }
        DenyCheck::Clear => {}
    }
    let class = call.tool.class();
    if class == PermissionClass::Read || mode == Mode::Bypass || grants.contains(&class) {
        return Verdict::Allow;
    }
    if let CallTool::Mcp { allowed: true, .. } = call.tool {
        return Verdict::Allow;
    }
    if class == PermissionClass::Write
        && let Some(target) = call.target()
    {
        if mode == Mode::Plan && target == real_path(call.plan_file) {
            return Verdict::Allow;
        }
        if matches!(mode, Mode::AcceptEdits | Mode::Auto) && target.starts_with(real_path(call.cwd))
        {
            return Verdict::Allow;
        }
    }
    // In auto mode a command runs without asking inside the sandbox, unless it asks to leave it.
    if class == PermissionClass::Command
        && mode == Mode::Auto
        && call.sandbox
        && !call.unsandboxed()
    {
        return Verdict::Allow;
    }
    let allowed = match &subject {
        Subject::Command(Ok(line)) => command_allowed(line, call, always, rules),
        Subject::Command(Err(Unparsable)) => false,
        Subject::Path(path) => {
            let target = call.target();
            always
                .iter()
                .any(|rule| matches!(rule, AlwaysRule::Path(p) if Some(p) == target.as_ref()))
                || rules
                    .allow_rules(call.tool)
                    .iter()
                    .any(|rule| rule.allows_path(path))
        }
        Subject::Mcp(name) => {
            always
                .iter()
                .any(|rule| matches!(rule, AlwaysRule::McpTool(n) if n == name))
                || rules
                    .allow_rules(call.tool)
                    .iter()
                    .any(|rule| rule.allows_path(name))
        }
        Subject::Nothing => false,
    };
    if allowed {
        Verdict::Allow
    } else {
        Verdict::Ask(None)
    }
}

/// Whether rules allow a whole command line: every simple command is allowed by an allow rule
/// or an always-rule, no assignment stands alone, and nothing is written outside the session
/// directory.
fn command_allowed(
    line: &CommandLine,
    call: Call<'_>,
    always: &[AlwaysRule],
    rules: &PermissionRules,
) -> bool {
    let allow = rules.allow_rules(call.tool);
    let covered = |command: &SimpleCommand| {
        allow.iter().any(|rule| rule.allows_command(command))
            || always.iter().any(|rule| match rule {
                AlwaysRule::CommandPrefix(prefix) => {
                    let text = written(command);
                    command.assignments.is_empty()
                        && text
                            .strip_prefix(prefix.as_str())
                            .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
                }
                AlwaysRule::Path(_) | AlwaysRule::McpTool(_) => false,
            })
    };
    let cwd = real_path(call.cwd);
    let inside = |target: &Word| match target.literal() {
        Some(path) if HARMLESS_TARGETS.contains(&path) => true,
        Some(path) => real_path(&resolve(call.cwd, path)).starts_with(&cwd),
        None => false,
    };
    !line.commands.is_empty()
        && line.assignments.is_empty()
        && line.commands.iter().all(covered)
        && line
            .redirects
            .iter()
            .filter(|r| r.writes)
            .all(|r| inside(&r.target))
}

/// The rule that "allow always" on this call remembers.
pub fn rule_for(call: Call<'_>) -> Option<AlwaysRule> {
    match call.tool.class() {
        PermissionClass::Write => call.target().map(AlwaysRule::Path),
        PermissionClass::Command => {
            let line = shell::parse(call.command()?).ok()?;
            let words: Vec<&str> = line
                .commands
                .first()?
                .words
                .iter()
                .map_while(Word::literal)
                .collect();
            let take = match words.get(1) {
                Some(second) if !second.starts_with('-') => 2,
                _ => 1,
            };
            (!words.is_empty())
                .then(|| AlwaysRule::CommandPrefix(words[..take.min(words.len())].join(" ")))
        }
        PermissionClass::Mcp => match call.tool {
            CallTool::Mcp { server, tool, .. } => {
                Some(AlwaysRule::McpTool(format!("{server}/{tool}")))
            }
            CallTool::Builtin(_) => None,
        },
        PermissionClass::Read => None,
    }
}

/// One line saying what the call would do, for a permission question.
pub fn summary(call: Call<'_>) -> String {
    let path = || {
        call.args["path"]
            .as_str()
            .map(|p| display(call.cwd, &resolve(call.cwd, p)))
            .unwrap_or_else(|| "?".to_string())
    };
    let CallTool::Builtin(tool) = call.tool else {
        let CallTool::Mcp { server, tool, .. } = call.tool else {
            unreachable!("a call is built-in or of an MCP server")
        };
        let args = call.args.to_string();
        let shown: String = args.chars().take(200).collect();
        let more = if shown.len() < args.len() { "…" } else { "" };
        return format!("call {server}/{tool} (MCP) with {shown}{more}");
    };
    match tool {
        Tool::Write => {
            let lines = call.args["content"]
                .as_str()
                .map_or(0, |c| c.lines().count());
            format!("write {} ({} lines)", path(), lines)
        }
        Tool::Edit => format!("edit {}", path()),
        Tool::Bash => format!("run `{}`", call.command().unwrap_or("?")),
        other => format!("{} {}", other.name(), path()),
    }
}

/// The result the model gets when a run without a terminal has no grant for the call.
pub fn unattended_denial(class: PermissionClass) -> String {
    match class {
        PermissionClass::Command => "denied: run with --allow bash to permit commands".to_string(),
        PermissionClass::Mcp => {
            "denied: run with --allow mcp to permit MCP tool calls, or list the tool in the server's `allow`".to_string()
        }
        _ => "denied: run with --allow write to permit file changes".to_string(),
    }
}

/// `path` with its existing part resolved through symlinks, so that a link inside the session
/// directory pointing outside of it does not count as inside.
fn real_path(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest
                .iter()
                .rev()
                .fold(real, |acc: PathBuf, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests;
