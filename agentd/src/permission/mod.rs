//! Whether a tool call may run: the permission matrix of the modes
//! (docs/architecture.md#permissions-and-modes), grants given for a run, the "always allow" rules a
//! user gave for a session, and the allow and deny rules of the configuration.

mod code_args;
pub(crate) mod command_rule;
pub(crate) mod lookup;
pub(crate) mod network;
pub(crate) mod opaque;
pub(crate) mod programs;
mod python_module;
mod question;
mod real_path;
pub(crate) mod rules;
pub(crate) mod shell;
pub(crate) mod wrapper_options;
pub(crate) mod wrappers;
pub(crate) mod written;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use protocol::{Mode, PermissionClass};
use serde_json::Value;

pub(crate) use crate::sandbox::protected::ProtectedPaths;
use crate::tools::{Tool, display, resolve};
use command_rule::{DenyCheck, written};
pub(crate) use lookup::changes_lookup;
use programs::Programs;
pub(crate) use question::{summary, unattended_denial};
pub(crate) use real_path::real_path;
pub(crate) use rules::PermissionRules;
use rules::Subject;
use shell::{CommandLine, SimpleCommand, Unparsable, Word};
pub(crate) use written::unchanged_since;

/// What to do with a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
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
    /// `fetch` and `web_search` calls to one host.
    Host(String),
}

/// The tool a call is for: a built-in one, or a tool of an MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallTool<'a> {
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
pub(crate) enum ToolRef {
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
    /// Whether the call writes the file its `path` names (`write`, `edit`).
    pub(crate) fn writes(&self) -> bool {
        matches!(self, ToolRef::Builtin(Tool::Write | Tool::Edit))
    }

    /// The borrowed form the decision takes.
    pub(crate) fn as_call(&self) -> CallTool<'_> {
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
    pub(crate) fn class(&self) -> PermissionClass {
        match self {
            CallTool::Builtin(tool) => tool.class(),
            CallTool::Mcp { .. } => PermissionClass::Mcp,
        }
    }

    /// The name rules use: a built-in tool's name, or `mcp`.
    pub(crate) fn rule_name(&self) -> &'static str {
        match self {
            CallTool::Builtin(tool) => tool.name(),
            CallTool::Mcp { .. } => "mcp",
        }
    }
}

/// The facts about one call that the decision needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<'a> {
    /// The tool.
    pub(crate) tool: CallTool<'a>,
    /// Its arguments.
    pub(crate) args: &'a Value,
    /// The session directory.
    pub(crate) cwd: &'a Path,
    /// The session's plan file.
    pub(crate) plan_file: &'a Path,
    /// Whether commands of this call would run in the kernel sandbox (auto mode, where the
    /// machine has one).
    pub(crate) sandbox: bool,
    /// The `PATH` commands run with, to tell what a program name runs.
    pub(crate) path_var: Option<&'a str>,
    /// Where writes are never allowed without asking (docs/architecture.md#sandbox).
    pub(crate) protected: &'a ProtectedPaths,
    /// Files changed after this may have been written by a command ([`unchanged_since`]).
    pub(crate) since: SystemTime,
    /// Whether an earlier call of the session changed which program a name runs
    /// ([`changes_lookup`]).
    pub(crate) lookup_changed_before: bool,
    /// The path the call writes, resolved once by the caller (symlinks followed) and handed
    /// to the tool as it is, so that what is checked is what is written; `None` resolves
    /// `args.path` here.
    pub(crate) target: Option<&'a Path>,
    /// The host of the configured search service (what a `web_search` call reaches).
    pub(crate) search_host: Option<&'a str>,
}

impl<'a> Call<'a> {
    /// Whether a `bash` call asks to run outside the sandbox (`"sandbox": false`).
    pub(crate) fn unsandboxed(&self) -> bool {
        self.tool == CallTool::Builtin(Tool::Bash) && self.args["sandbox"] == Value::Bool(false)
    }

    fn target(&self) -> Option<PathBuf> {
        if let Some(target) = self.target {
            return Some(target.to_path_buf());
        }
        self.args["path"]
            .as_str()
            .map(|p| real_path(&resolve(self.cwd, p)))
    }

    fn programs(&self) -> Programs<'a> {
        Programs {
            cwd: self.cwd,
            path: self.path_var,
            since: self.since,
        }
    }

    /// The same facts, for a write of `path` (what a redirection does).
    fn write_of(&self, args: &'a Value) -> Call<'a> {
        Call {
            tool: CallTool::Builtin(Tool::Write),
            args,
            target: None,
            ..*self
        }
    }

    fn command(&self) -> Option<&str> {
        self.args["command"].as_str()
    }
}

/// Files outside the session directory that output may still be redirected to.
const HARMLESS_TARGETS: [&str; 4] = ["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

/// Decides a call: deny rules first (a command that cannot be checked against them asks);
/// reads always run; `bypass` runs everything; a write to a protected path asks; grants of the
/// run, the mode's rules, the session's always-rules and the allow rules allow the rest;
/// anything else asks.
pub(crate) fn check(
    call: Call<'_>,
    mode: Mode,
    grants: &[PermissionClass],
    always: &[AlwaysRule],
    rules: &PermissionRules,
) -> Verdict {
    let parsed = call.command().map(shell::parse);
    let line = match &parsed {
        Some(Ok(line)) => Some(line),
        _ => None,
    };
    let opaque = line.and_then(|line| opaque::opaque(line, call.programs()));
    let subject = match (call.tool, &parsed, call.target()) {
        (CallTool::Mcp { server, tool, .. }, _, _) => Subject::Mcp(format!("{server}/{tool}")),
        (CallTool::Builtin(Tool::Bash), Some(parsed), _) => Subject::Command(parsed),
        (CallTool::Builtin(Tool::Fetch | Tool::WebSearch), _, _) => match network::host(&call) {
            Ok(host) => Subject::Host(host),
            Err(why) => return Verdict::Deny(why),
        },
        (_, _, Some(target)) => Subject::Path(display(&real_path(call.cwd), &target)),
        _ => Subject::Nothing,
    };
    let cannot_check = |why: &str| {
        Verdict::Ask(Some(format!(
            "it cannot be checked against the deny rules: {why}"
        )))
    };
    match rules.deny_check(call.tool, &subject) {
        DenyCheck::Denied(rule) => {
            return Verdict::Deny(format!(
                "denied by the permission rule `{rule}` in config.toml"
            ));
        }
        DenyCheck::Unknown(why) => return cannot_check(&why),
        DenyCheck::Clear => {}
    }
    if let Some(why) = network::refused_early(&call, rules) {
        return Verdict::Deny(why);
    }
    // What the deny rules cannot follow: code a command may have written, and changes to what
    // names run for the commands after it (or made by an earlier call).
    let unseen = |line: &CommandLine| {
        written::written_code(line, call.programs())
            .or_else(|| lookup::later_change(line, call.path_var).map(|change| change.why))
            .or_else(|| lookup::after_earlier_change(line, call.lookup_changed_before))
    };
    if rules.has_deny(call.tool)
        && let Some(why) = opaque.clone().or_else(|| line.and_then(unseen))
    {
        return cannot_check(&why);
    }
    // Redirections are writes: a write deny rule refuses them too.
    if let Some(line) = line {
        for target in line
            .redirects
            .iter()
            .filter(|r| r.writes)
            .map(|r| &r.target)
        {
            match redirect_path(target, call.cwd) {
                Some(Ok(path)) => {
                    let args = serde_json::json!({ "path": path.to_string_lossy() });
                    if let Verdict::Deny(reason) =
                        check(call.write_of(&args), mode, grants, always, rules)
                    {
                        return Verdict::Deny(format!(
                            "its output redirection is a write: {reason}"
                        ));
                    }
                }
                Some(Err(())) if rules.has_deny(CallTool::Builtin(Tool::Write)) => {
                    return cannot_check(&format!(
                        "the redirection target `{}` is computed when it runs",
                        target.text()
                    ));
                }
                _ => {}
            }
        }
    }
    let class = call.tool.class();
    if class == PermissionClass::Read || mode == Mode::Bypass {
        return Verdict::Allow;
    }
    let target = call.target();
    // The plan file lives in the daemon's data directory: plan mode writes it all the same.
    if class == PermissionClass::Write
        && mode == Mode::Plan
        && target.as_deref() == Some(real_path(call.plan_file).as_path())
    {
        return Verdict::Allow;
    }
    if class == PermissionClass::Write
        && let Some(why) = target.as_deref().and_then(|t| call.protected.refusal(t))
    {
        return Verdict::Ask(Some(why));
    }
    if grants.contains(&class) {
        return Verdict::Allow;
    }
    if let CallTool::Mcp { allowed: true, .. } = call.tool {
        return Verdict::Allow;
    }
    if class == PermissionClass::Write
        && let Some(target) = &target
        && matches!(mode, Mode::AcceptEdits | Mode::Auto)
        && target.starts_with(real_path(call.cwd))
    {
        return Verdict::Allow;
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
        Subject::Command(Ok(line)) => {
            opaque.is_none() && command_allowed(line, call, mode, grants, always, rules)
        }
        Subject::Command(Err(Unparsable)) => false,
        Subject::Path(path) => {
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
        Subject::Host(host) => network::allowed(host, call.tool, always, rules),
        Subject::Nothing => false,
    };
    if allowed {
        Verdict::Allow
    } else {
        Verdict::Ask(None)
    }
}

/// Whether rules allow a whole command line: every simple command is allowed by an allow rule
/// or an always-rule, no assignment stands alone, and every file it writes by a redirection is
/// one the mode, grants or rules would let `write` write without asking.
fn command_allowed(
    line: &CommandLine,
    call: Call<'_>,
    mode: Mode,
    grants: &[PermissionClass],
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
                AlwaysRule::Path(_) | AlwaysRule::McpTool(_) | AlwaysRule::Host(_) => false,
            })
    };
    let may_write = |target: &Word| match redirect_path(target, call.cwd) {
        None => true,
        Some(Ok(path)) => {
            let args = serde_json::json!({ "path": path.to_string_lossy() });
            check(call.write_of(&args), mode, grants, always, rules) == Verdict::Allow
        }
        Some(Err(())) => false,
    };
    !line.commands.is_empty()
        && line.assignments.is_empty()
        && line.commands.iter().all(covered)
        && line
            .redirects
            .iter()
            .filter(|r| r.writes)
            .all(|r| may_write(&r.target))
}

/// Where a writing redirection writes: `None` for a harmless device, `Err` when the target is
/// computed when the command runs, else the path resolved like a `write` path (a dangling
/// symlink resolves to where it points).
fn redirect_path(target: &Word, cwd: &Path) -> Option<Result<PathBuf, ()>> {
    match target.literal() {
        Some(path) if HARMLESS_TARGETS.contains(&path) => None,
        // Joined, not normalised: the kernel takes `..` after the symlink before it.
        Some(path) => {
            let home = path
                .strip_prefix("~/")
                .and_then(|rest| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(rest)));
            Some(Ok(real_path(&home.unwrap_or_else(|| cwd.join(path)))))
        }
        None => Some(Err(())),
    }
}

/// The rule that "allow always" on this call remembers.
pub(crate) fn rule_for(call: Call<'_>) -> Option<AlwaysRule> {
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
        PermissionClass::Network => network::rule_for(&call),
        PermissionClass::Read => None,
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod unseen_tests;
