//! `bash:` permission rules against the simple commands of a command line
//! (docs/architecture.md#permissions-and-modes).
//!
//! An allow rule is a glob over one simple command as written (its words joined by single
//! spaces): strict, so `sudo cargo test` or `./cargo test` is not `cargo test`. A deny rule is
//! broad: it names a program and, optionally, flags and words, and it catches the program
//! however it is reached (`/bin/rm`, `\rm`, `command rm`, `env X=1 rm`, `sudo rm`,
//! `xargs rm`, `find -exec rm`, `bash -c "rm ..."`, `eval rm ...`: [`super::wrappers`]) and its
//! flags however they are written (`-rf`, `-fr`, `-r -f`, `-R`, `--recursive --force`).

use std::collections::BTreeSet;

use globset::{Glob, GlobMatcher};

use super::shell::{SimpleCommand, Word};
use super::wrappers::{Invocation, basename, expand};

/// One `bash:` rule's pattern.
#[derive(Debug, Clone)]
pub(crate) struct CommandRule {
    /// The pattern as written.
    pub(crate) pattern: String,
    /// The whole pattern as a glob.
    glob: GlobMatcher,
    /// The program a deny rule names, as a glob over its base name.
    program: Option<GlobMatcher>,
    /// Short flags the rule names (normalised).
    flags: BTreeSet<char>,
    /// Long flags the rule names (normalised; those with a short form become short).
    long: BTreeSet<String>,
    /// Other words, in order.
    words: Vec<GlobMatcher>,
}

/// What a deny rule says of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DenyCheck {
    /// A simple command matches the rule with this pattern.
    Denied(String),
    /// No simple command matches.
    Clear,
    /// A command could match but cannot be told (a computed program name or flag, a line that
    /// does not parse): why.
    Unknown(String),
}

impl CommandRule {
    /// Parses the pattern of a `bash:` rule.
    pub(crate) fn parse(pattern: &str) -> Result<CommandRule, String> {
        let glob = |p: &str| {
            Glob::new(p)
                .map(|g| g.compile_matcher())
                .map_err(|e| format!("bad pattern `{p}`: {e}"))
        };
        let whole = glob(pattern)?;
        let mut parts: Vec<&str> = pattern.split_whitespace().collect();
        // A trailing `*` means "and anything after", which a deny rule always allows.
        if let Some(last) = parts.last_mut() {
            *last = last.strip_suffix('*').unwrap_or(last);
        }
        parts.retain(|p| !p.is_empty());
        let program_name = parts.first().copied().unwrap_or_default();
        let program = if program_name.is_empty() {
            None
        } else {
            Some(glob(basename(program_name))?)
        };
        let mut rule = CommandRule {
            pattern: pattern.to_string(),
            glob: whole,
            program,
            flags: BTreeSet::new(),
            long: BTreeSet::new(),
            words: Vec::new(),
        };
        let args: Vec<Word> = parts
            .iter()
            .skip(1)
            .map(|p| Word::Literal(p.to_string()))
            .collect();
        let flags = Flags::of(basename(program_name), &args);
        rule.flags = flags.short;
        rule.long = flags.long;
        for word in flags.operands {
            rule.words.push(glob(&word)?);
        }
        Ok(rule)
    }

    /// Whether this allow rule covers `command` (written as it stands).
    pub(crate) fn allows(&self, command: &SimpleCommand) -> bool {
        command.assignments.is_empty() && self.glob.is_match(written(command))
    }

    /// Whether this deny rule refuses `command`, reached however it is.
    pub(crate) fn denies(&self, command: &SimpleCommand) -> DenyCheck {
        if self.glob.is_match(written(command)) {
            return DenyCheck::Denied(self.pattern.clone());
        }
        let mut unknown = None;
        let invocations = expand(command).invocations;
        for invocation in &invocations {
            match self.denies_invocation(invocation) {
                DenyCheck::Denied(rule) => return DenyCheck::Denied(rule),
                DenyCheck::Unknown(why) => unknown = Some(why),
                DenyCheck::Clear => {}
            }
        }
        unknown
            .or_else(|| self.named_in_arguments(&invocations))
            .map_or(DenyCheck::Clear, DenyCheck::Unknown)
    }

    /// Why the arguments of `invocations` may reach the program this rule names: they name it
    /// (`prlimit … rm x`, `make --eval='x:;rm x'`, `git grep -O'rm x'`). Programs run by
    /// programs the rules do not know are found this way, whatever runs them; a command that
    /// only mentions the program is asked about too.
    fn named_in_arguments(&self, invocations: &[Invocation]) -> Option<String> {
        let wanted = self.program.as_ref()?;
        let named = invocations.iter().find_map(|invocation| match invocation {
            Invocation::Run { args, .. } => args.iter().find_map(|arg| {
                arg.text()
                    .split(|c: char| !(c.is_alphanumeric() || "._/+-".contains(c)))
                    .map(basename)
                    .find(|token| !token.is_empty() && wanted.is_match(token))
            }),
            Invocation::Unknown(_) => None,
        })?;
        Some(format!(
            "its arguments name `{named}`, which the rule `{}` refuses, and what runs them cannot be told",
            self.pattern
        ))
    }

    fn denies_invocation(&self, invocation: &Invocation) -> DenyCheck {
        let Invocation::Run { program, args } = invocation else {
            return match invocation {
                Invocation::Unknown(why) => DenyCheck::Unknown(why.clone()),
                _ => DenyCheck::Clear,
            };
        };
        let name = basename(program);
        let normalized = std::iter::once(name)
            .chain(args.iter().map(Word::text))
            .collect::<Vec<_>>()
            .join(" ");
        if self.glob.is_match(&normalized) {
            return DenyCheck::Denied(self.pattern.clone());
        }
        let Some(wanted) = &self.program else {
            return DenyCheck::Clear;
        };
        if !wanted.is_match(name) {
            return DenyCheck::Clear;
        }
        let flags = Flags::of(name, args);
        let mut operands = flags.operands.iter();
        let has_words = self
            .words
            .iter()
            .all(|word| operands.any(|o| word.is_match(o)));
        if self.flags.is_subset(&flags.short) && self.long.is_subset(&flags.long) && has_words {
            return DenyCheck::Denied(self.pattern.clone());
        }
        if args.iter().any(|a| matches!(a, Word::Dynamic(_))) {
            return DenyCheck::Unknown(format!(
                "`{name}` has arguments computed when it runs, which could make it match `{}`",
                self.pattern
            ));
        }
        DenyCheck::Clear
    }
}

/// A command as written: its words joined by single spaces.
pub(crate) fn written(command: &SimpleCommand) -> String {
    command
        .words
        .iter()
        .map(Word::text)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The flags and operands of a command's arguments, normalised so that one flag has one name.
struct Flags {
    short: BTreeSet<char>,
    long: BTreeSet<String>,
    operands: Vec<String>,
}

impl Flags {
    fn of(program: &str, args: &[Word]) -> Flags {
        let mut flags = Flags {
            short: BTreeSet::new(),
            long: BTreeSet::new(),
            operands: Vec::new(),
        };
        let mut options_end = false;
        for arg in args {
            let text = arg.text();
            if options_end || arg.is_dynamic() {
                flags.operands.push(text.to_string());
                continue;
            }
            if text == "--" {
                options_end = true;
            } else if let Some(long) = text.strip_prefix("--") {
                let long = long.split('=').next().unwrap_or(long);
                match short_form(program, long) {
                    Some(short) => {
                        flags.short.insert(short);
                    }
                    None => {
                        flags.long.insert(long.to_string());
                    }
                }
            } else if let Some(short) = text
                .strip_prefix('-')
                .filter(|s| !s.is_empty() && !s.starts_with(|c: char| c.is_ascii_digit()))
            {
                flags
                    .short
                    .extend(short.chars().map(|c| same_flag(program, c)));
            } else {
                flags.operands.push(text.to_string());
            }
        }
        flags
    }
}

/// Long flags with a short form, per program.
fn short_form(program: &str, long: &str) -> Option<char> {
    match (program, long) {
        ("rm" | "cp" | "chmod" | "chown" | "chgrp" | "mv", "recursive") => Some('r'),
        ("rm" | "cp" | "mv" | "ln" | "git", "force") => Some('f'),
        ("rm", "dir") => Some('d'),
        ("git", "delete") => Some('d'),
        _ => None,
    }
}

/// Short flags that mean the same, per program: `rm -R` is `rm -r`.
fn same_flag(program: &str, flag: char) -> char {
    match (program, flag) {
        ("rm" | "cp" | "chmod" | "chown" | "chgrp", 'R') => 'r',
        _ => flag,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::shell;

    fn check(rule: &str, line: &str) -> DenyCheck {
        let rule = CommandRule::parse(rule).unwrap();
        let mut result = DenyCheck::Clear;
        for command in shell::parse(line).unwrap().commands {
            match rule.denies(&command) {
                DenyCheck::Denied(p) => return DenyCheck::Denied(p),
                DenyCheck::Unknown(why) => result = DenyCheck::Unknown(why),
                DenyCheck::Clear => {}
            }
        }
        result
    }

    #[test]
    fn a_deny_rule_sees_through_spelling_and_wrappers() {
        for line in [
            "rm -rf x",
            "rm -fr x",
            "rm -r -f x",
            "rm -Rf x",
            "rm --recursive --force x",
            "/bin/rm -rf x",
            "\\rm -rf x",
            "command rm -rf x",
            "env X=1 rm -rf x",
            "sudo -u root rm -rf x",
            "timeout 5 nice -n 3 rm -rf x",
            "find . -exec rm -rf {} \\;",
            "xargs -n 1 rm -rf < list",
            "bash -c 'rm -rf x'",
            "eval rm -rf x",
        ] {
            assert!(
                matches!(check("rm -rf*", line), DenyCheck::Denied(_)),
                "{line}"
            );
        }
        assert_eq!(check("rm -rf*", "rm -f x"), DenyCheck::Clear);
        assert_eq!(check("rm -rf*", "ls -rf"), DenyCheck::Clear);
        assert!(matches!(
            check("rm -rf*", "$(echo rm) -rf x"),
            DenyCheck::Unknown(_)
        ));
        assert!(matches!(
            check("rm -rf*", "rm $FLAGS x"),
            DenyCheck::Unknown(_)
        ));
        assert!(matches!(
            check("git push --force*", "git push -f origin"),
            DenyCheck::Denied(_)
        ));
    }

    #[test]
    fn an_allow_rule_matches_the_command_as_written() {
        let rule = CommandRule::parse("cargo test*").unwrap();
        let allows = |line: &str| {
            shell::parse(line)
                .unwrap()
                .commands
                .iter()
                .all(|c| rule.allows(c))
        };
        assert!(allows("cargo test"));
        assert!(allows("cargo  test  --all"));
        assert!(allows("cargo 'test' -q"));
        assert!(!allows("sudo cargo test"));
        assert!(!allows("./cargo test"));
        assert!(!allows("RUSTFLAGS=x cargo test"));
    }
}
