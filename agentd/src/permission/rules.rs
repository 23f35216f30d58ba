//! Allow and deny rules from the configuration, as `tool:pattern`
//! (docs/architecture.md#permissions-and-modes): `bash:cargo test*`, `write:src/**`, `*:*.lock`,
//! `mcp:github/list_*`, `fetch:*.github.com`. A `bash` rule is matched against each simple
//! command of the command line ([`super::command_rule`]); a `fetch` or `web_search` rule is a
//! glob over the host the call reaches (`permission/network.rs`); a rule of another tool is a
//! glob over the path the call would touch, resolved (symlinks followed) and shown relative to
//! the session directory when inside it.

use globset::{Glob, GlobMatcher};

use super::CallTool;
use super::command_rule::{CommandRule, DenyCheck};
use super::shell::CommandLine;
use crate::tools::Tool;

/// The `[permissions]` section: calls that run without asking and calls that are refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct PermissionRules {
    /// Calls that run without asking.
    pub(crate) allow: Vec<String>,
    /// Calls that are refused, whatever the mode.
    pub(crate) deny: Vec<String>,
}

/// One rule, ready to match.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    /// The rule as written.
    pub(crate) text: String,
    /// The tool it is for (`bash`, `write`, ..., `mcp`); `None` for `*`.
    tool: Option<&'static str>,
    /// The pattern over paths.
    path: GlobMatcher,
    /// The pattern over commands.
    command: CommandRule,
}

impl Rule {
    fn parse(text: &str) -> Result<Rule, String> {
        let (tool, pattern) = text.split_once(':').ok_or_else(|| {
            format!("permission rule `{text}` is not `tool:pattern` (e.g. `bash:cargo test*`)")
        })?;
        let tool = match tool {
            "*" => None,
            "mcp" => Some("mcp"),
            name => Some(
                Tool::from_name(name)
                    .map(Tool::name)
                    .ok_or_else(|| format!("permission rule `{text}` names no tool `{name}`"))?,
            ),
        };
        let bad = |e: String| format!("permission rule `{text}` has a bad pattern: {e}");
        let path = Glob::new(pattern)
            .map_err(|e| bad(e.to_string()))?
            .compile_matcher();
        let command = CommandRule::parse(pattern).map_err(bad)?;
        Ok(Rule {
            text: text.to_string(),
            tool,
            path,
            command,
        })
    }

    fn covers(&self, tool: CallTool<'_>) -> bool {
        self.tool.is_none_or(|t| t == tool.rule_name())
    }
}

/// What a call touches, as the rules see it.
#[derive(Debug)]
pub(crate) enum Subject<'a> {
    /// A command line, parsed (or not parsable).
    Command(&'a Result<CommandLine, super::shell::Unparsable>),
    /// A path, resolved and shown relative to the session directory when inside it.
    Path(String),
    /// An MCP tool, as `server/tool`.
    Mcp(String),
    /// The host a network call reaches.
    Host(String),
    /// Nothing the rules look at.
    Nothing,
}

impl PermissionRules {
    /// Checks that every rule has the form `tool:pattern` with a known tool and a valid glob.
    pub(crate) fn validate(&self) -> Result<(), String> {
        for rule in self.allow.iter().chain(&self.deny) {
            Rule::parse(rule)?;
        }
        Ok(())
    }

    /// The allow rules of `tool`.
    pub(crate) fn allow_rules(&self, tool: CallTool<'_>) -> Vec<Rule> {
        compile(&self.allow, tool)
    }

    /// Whether any deny rule applies to `tool`.
    pub(crate) fn has_deny(&self, tool: CallTool<'_>) -> bool {
        !compile(&self.deny, tool).is_empty()
    }

    /// Whether an allow rule of `tool` names `host` itself: it matches, and its pattern has a
    /// letter or digit of its own (`fetch:*` lets every host run without asking; it does not
    /// let any reach a private address).
    pub(crate) fn names_host(&self, tool: CallTool<'_>, host: &str) -> bool {
        compile(&self.allow, tool).iter().any(|rule| {
            let pattern = rule.text.split_once(':').map_or("", |(_, p)| p);
            rule.path.is_match(host) && pattern.chars().any(char::is_alphanumeric)
        })
    }

    /// Whether a deny rule refuses a call of `tool` on `subject`.
    pub(crate) fn deny_check(&self, tool: CallTool<'_>, subject: &Subject<'_>) -> DenyCheck {
        let rules = compile(&self.deny, tool);
        if rules.is_empty() {
            return DenyCheck::Clear;
        }
        match subject {
            Subject::Path(path) | Subject::Mcp(path) | Subject::Host(path) => rules
                .iter()
                .find(|rule| rule.path.is_match(path))
                .map_or(DenyCheck::Clear, |rule| {
                    DenyCheck::Denied(rule.text.clone())
                }),
            Subject::Command(Err(_)) => {
                DenyCheck::Unknown("the command line could not be parsed as a whole".to_string())
            }
            Subject::Command(Ok(line)) => {
                let mut unknown = None;
                for command in &line.commands {
                    for rule in &rules {
                        match rule.command.denies(command) {
                            DenyCheck::Denied(_) => return DenyCheck::Denied(rule.text.clone()),
                            DenyCheck::Unknown(why) => unknown = Some(why),
                            DenyCheck::Clear => {}
                        }
                    }
                }
                unknown.map_or(DenyCheck::Clear, DenyCheck::Unknown)
            }
            Subject::Nothing => DenyCheck::Clear,
        }
    }
}

impl Rule {
    /// Whether this allow rule covers the path `path`.
    pub(crate) fn allows_path(&self, path: &str) -> bool {
        self.path.is_match(path)
    }

    /// Whether this allow rule covers one simple command.
    pub(crate) fn allows_command(&self, command: &super::shell::SimpleCommand) -> bool {
        self.command.allows(command)
    }
}

/// The rules of `list` that apply to `tool`; invalid ones (kept out by validation) are skipped.
fn compile(list: &[String], tool: CallTool<'_>) -> Vec<Rule> {
    list.iter()
        .filter_map(|text| Rule::parse(text).ok())
        .filter(|rule| rule.covers(tool))
        .collect()
}
