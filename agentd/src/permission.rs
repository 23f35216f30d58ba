//! Whether a tool call may run: the permission matrix of the modes (SPEC §6), grants given for
//! a run, and the "always allow" rules a user gave for a session.

use std::path::{Path, PathBuf};

use protocol::{Mode, PermissionClass};
use serde_json::Value;

use crate::tools::{Tool, display, resolve};

/// What to do with a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Ask the user.
    Ask,
    /// Refuse it; the model gets this reason.
    Deny(String),
}

/// Allow and deny rules from the configuration, as `tool:pattern`: `bash:cargo test*`,
/// `write:src/**`, `*:*.lock`. The pattern is a glob over the command of `bash` and the path
/// (relative to the session directory when inside it) of the other tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PermissionRules {
    /// Calls that run without asking.
    pub allow: Vec<String>,
    /// Calls that are refused, whatever the mode.
    pub deny: Vec<String>,
}

impl PermissionRules {
    /// Checks that every rule has the form `tool:pattern` with a known tool and a valid glob.
    pub fn validate(&self) -> Result<(), String> {
        for rule in self.allow.iter().chain(&self.deny) {
            parse_rule(rule)?;
        }
        Ok(())
    }

    fn matching<'a>(list: &'a [String], call: &Call<'_>) -> Option<&'a str> {
        let subject = match call.tool.class() {
            PermissionClass::Command => call.command().map(|c| c.trim().to_string()),
            _ => call.args["path"]
                .as_str()
                .map(|p| display(call.cwd, &resolve(call.cwd, p))),
        }?;
        list.iter()
            .find(|rule| {
                parse_rule(rule).is_ok_and(|(tool, glob)| {
                    (tool == "*" || tool == call.tool.name()) && glob.is_match(&subject)
                })
            })
            .map(String::as_str)
    }
}

fn parse_rule(rule: &str) -> Result<(&str, globset::GlobMatcher), String> {
    let (tool, pattern) = rule.split_once(':').ok_or_else(|| {
        format!("permission rule `{rule}` is not `tool:pattern` (e.g. `bash:cargo test*`)")
    })?;
    if tool != "*" && Tool::from_name(tool).is_none() {
        return Err(format!("permission rule `{rule}` names no tool `{tool}`"));
    }
    let glob = globset::Glob::new(pattern)
        .map_err(|e| format!("permission rule `{rule}` has a bad pattern: {e}"))?
        .compile_matcher();
    Ok((tool, glob))
}

/// A call a user allowed for the rest of the session: the same tool on the same file, or a
/// command starting with the same words.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlwaysRule {
    /// Writes and edits of one file.
    Path(PathBuf),
    /// Commands that start with these words (and contain no shell operators).
    CommandPrefix(String),
}

/// The facts about one call that the decision needs.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The tool.
    pub tool: Tool,
    /// Its arguments.
    pub args: &'a Value,
    /// The session directory.
    pub cwd: &'a Path,
    /// The session's plan file.
    pub plan_file: &'a Path,
}

impl Call<'_> {
    fn target(&self) -> Option<PathBuf> {
        self.args["path"]
            .as_str()
            .map(|p| real_path(&resolve(self.cwd, p)))
    }

    fn command(&self) -> Option<&str> {
        self.args["command"].as_str()
    }
}

/// Decides a call: reads always run; `bypass` runs everything; grants of the run, the mode's
/// rules and the session's always-rules allow the rest; anything else asks.
pub fn check(
    call: Call<'_>,
    mode: Mode,
    grants: &[PermissionClass],
    always: &[AlwaysRule],
    rules: &PermissionRules,
) -> Verdict {
    if let Some(rule) = PermissionRules::matching(&rules.deny, &call) {
        return Verdict::Deny(format!(
            "denied by the permission rule `{rule}` in config.toml"
        ));
    }
    let class = call.tool.class();
    if class == PermissionClass::Read || mode == Mode::Bypass || grants.contains(&class) {
        return Verdict::Allow;
    }
    if class == PermissionClass::Write
        && let Some(target) = call.target()
    {
        if mode == Mode::Plan && target == real_path(call.plan_file) {
            return Verdict::Allow;
        }
        if mode == Mode::AcceptEdits && target.starts_with(real_path(call.cwd)) {
            return Verdict::Allow;
        }
    }
    if always.iter().any(|rule| rule_allows(rule, &call))
        || PermissionRules::matching(&rules.allow, &call).is_some()
    {
        return Verdict::Allow;
    }
    Verdict::Ask
}

fn rule_allows(rule: &AlwaysRule, call: &Call<'_>) -> bool {
    match (rule, call.tool.class()) {
        (AlwaysRule::Path(path), PermissionClass::Write) => call.target().as_ref() == Some(path),
        (AlwaysRule::CommandPrefix(prefix), PermissionClass::Command) => {
            call.command().is_some_and(|command| {
                let command = command.trim();
                !has_shell_operators(command)
                    && command.strip_prefix(prefix.as_str()).is_some_and(|rest| {
                        rest.is_empty() || rest.starts_with(char::is_whitespace)
                    })
            })
        }
        _ => false,
    }
}

/// Operators that could chain another command onto an allowed prefix.
fn has_shell_operators(command: &str) -> bool {
    command.contains([';', '&', '|', '<', '>', '$', '`', '(', ')', '\n'])
}

/// The rule that "allow always" on this call remembers.
pub fn rule_for(call: Call<'_>) -> Option<AlwaysRule> {
    match call.tool.class() {
        PermissionClass::Write => call.target().map(AlwaysRule::Path),
        PermissionClass::Command => {
            let words: Vec<&str> = call.command()?.split_whitespace().collect();
            let take = match words.get(1) {
                Some(second) if !second.starts_with('-') => 2,
                _ => 1,
            };
            (!words.is_empty())
                .then(|| AlwaysRule::CommandPrefix(words[..take.min(words.len())].join(" ")))
        }
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
    match call.tool {
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
mod tests {
    use super::*;
    use serde_json::json;

    fn verdict(
        tool: Tool,
        args: Value,
        mode: Mode,
        grants: &[PermissionClass],
        always: &[AlwaysRule],
    ) -> Verdict {
        let cwd = std::env::temp_dir();
        let plan = cwd.join("plan-test.md");
        check(
            Call {
                tool,
                args: &args,
                cwd: &cwd,
                plan_file: &plan,
            },
            mode,
            grants,
            always,
            &PermissionRules::default(),
        )
    }

    #[test]
    fn the_default_matrix_reads_freely_and_asks_for_the_rest() {
        assert_eq!(
            verdict(Tool::Read, json!({"path": "a"}), Mode::Default, &[], &[]),
            Verdict::Allow
        );
        assert_eq!(
            verdict(Tool::Write, json!({"path": "a"}), Mode::Default, &[], &[]),
            Verdict::Ask
        );
        assert_eq!(
            verdict(
                Tool::Bash,
                json!({"command": "ls"}),
                Mode::Default,
                &[],
                &[]
            ),
            Verdict::Ask
        );
        assert_eq!(
            verdict(Tool::Bash, json!({"command": "ls"}), Mode::Bypass, &[], &[]),
            Verdict::Allow
        );
        assert_eq!(
            verdict(
                Tool::Bash,
                json!({"command": "ls"}),
                Mode::Default,
                &[PermissionClass::Command],
                &[]
            ),
            Verdict::Allow
        );
    }

    #[test]
    fn accept_edits_allows_writes_inside_the_directory_only() {
        assert_eq!(
            verdict(
                Tool::Edit,
                json!({"path": "src/a.rs"}),
                Mode::AcceptEdits,
                &[],
                &[]
            ),
            Verdict::Allow
        );
        assert_eq!(
            verdict(
                Tool::Write,
                json!({"path": "/etc/x"}),
                Mode::AcceptEdits,
                &[],
                &[]
            ),
            Verdict::Ask
        );
        assert_eq!(
            verdict(
                Tool::Bash,
                json!({"command": "ls"}),
                Mode::AcceptEdits,
                &[],
                &[]
            ),
            Verdict::Ask
        );
    }

    #[test]
    fn plan_mode_allows_only_the_plan_file() {
        let plan = std::env::temp_dir().join("plan-test.md");
        let args = json!({"path": plan.to_string_lossy()});
        assert_eq!(
            verdict(Tool::Write, args, Mode::Plan, &[], &[]),
            Verdict::Allow
        );
        assert_eq!(
            verdict(
                Tool::Write,
                json!({"path": "other.md"}),
                Mode::Plan,
                &[],
                &[]
            ),
            Verdict::Ask
        );
    }

    #[test]
    fn an_always_rule_for_a_command_prefix_does_not_cover_chained_commands() {
        let cwd = std::env::temp_dir();
        let args = json!({"command": "cargo test --all"});
        let call = Call {
            tool: Tool::Bash,
            args: &args,
            cwd: &cwd,
            plan_file: &cwd,
        };
        let rule = rule_for(call).unwrap();
        assert_eq!(rule, AlwaysRule::CommandPrefix("cargo test".into()));
        let always = [rule];
        assert_eq!(
            verdict(
                Tool::Bash,
                json!({"command": "cargo test -q"}),
                Mode::Default,
                &[],
                &always
            ),
            Verdict::Allow
        );
        assert_eq!(
            verdict(
                Tool::Bash,
                json!({"command": "cargo testx"}),
                Mode::Default,
                &[],
                &always
            ),
            Verdict::Ask
        );
        assert_eq!(
            verdict(
                Tool::Bash,
                json!({"command": "cargo test; rm -rf /"}),
                Mode::Default,
                &[],
                &always
            ),
            Verdict::Ask
        );
    }

    #[test]
    fn config_rules_deny_before_anything_and_allow_without_asking() {
        let cwd = std::env::temp_dir();
        let rules = PermissionRules {
            allow: vec!["bash:cargo test*".into(), "write:docs/*".into()],
            deny: vec!["bash:rm *".into()],
        };
        let run = |tool, args: Value, mode| {
            check(
                Call {
                    tool,
                    args: &args,
                    cwd: &cwd,
                    plan_file: &cwd,
                },
                mode,
                &[],
                &[],
                &rules,
            )
        };
        assert_eq!(
            run(
                Tool::Bash,
                json!({"command": "cargo test -q"}),
                Mode::Default
            ),
            Verdict::Allow
        );
        assert_eq!(
            run(Tool::Write, json!({"path": "docs/a.md"}), Mode::Default),
            Verdict::Allow
        );
        assert_eq!(
            run(Tool::Write, json!({"path": "src/a.rs"}), Mode::Default),
            Verdict::Ask
        );
        assert!(matches!(
            run(Tool::Bash, json!({"command": "rm -rf x"}), Mode::Bypass),
            Verdict::Deny(_)
        ));
        assert!(
            PermissionRules {
                allow: vec!["nope".into()],
                deny: vec![]
            }
            .validate()
            .is_err()
        );
        assert!(
            PermissionRules {
                allow: vec!["fly:x".into()],
                deny: vec![]
            }
            .validate()
            .is_err()
        );
    }
}
