//! Changes a command line makes for the commands after it. The deny rules tell what a
//! name runs from the session's `PATH`; a line that changes `PATH` (`PATH=…;`,
//! `export PATH=…`, `read PATH`, `for PATH in …`, `unset PATH`), the hash table (`hash -p`),
//! aliases, builtins (`enable`), or the directory while `PATH` holds a relative entry, may make
//! a name run another program; one that sets `LD_PRELOAD`, `GIT_*` and the like for later
//! commands makes them load or run other code. Where deny rules exist such a line asks; and
//! once one that changes lookup was let run, every program found through `PATH` asks for the
//! rest of the session.

use super::Call;
use super::opaque::{dangerous_assignment, short_clusters};
use super::programs::is_builtin;
use super::shell::{self, CommandLine, Word};
use super::wrappers::{Invocation, basename, expand};
use crate::tools::Tool;

/// A change a line makes for the commands after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LaterChange {
    /// What it changes, said so that it can follow "it cannot be checked against the deny
    /// rules: ".
    pub(crate) why: String,
    /// Whether it changes which program a name runs (not only what programs load).
    pub(crate) lookup: bool,
}

/// Builtins that set (or unset) the variables their operands name.
const SETS_NAMED: [&str; 10] = [
    "export",
    "declare",
    "typeset",
    "local",
    "readonly",
    "unset",
    "read",
    "mapfile",
    "readarray",
    "getopts",
];

/// What `line` changes for the commands after it, if anything: one that changes which program
/// a name runs before one that only changes what programs load. `path_var` is the session's
/// `PATH`: with a relative entry in it, changing directory changes lookup too.
pub(crate) fn later_change(line: &CommandLine, path_var: Option<&str>) -> Option<LaterChange> {
    let mut changes: Vec<LaterChange> = line
        .assignments
        .iter()
        .chain(&line.loop_variables)
        .filter_map(|assignment| of_variable(variable_name(assignment)))
        .collect();
    for command in &line.commands {
        let expansion = expand(command);
        changes.extend(
            expansion
                .assignments
                .iter()
                .filter_map(|assignment| of_variable(variable_name(assignment))),
        );
        for invocation in &expansion.invocations {
            if let Invocation::Run { program, args } = invocation {
                changes.extend(of_builtin(basename(program), args, path_var));
            }
        }
    }
    match changes.iter().position(|change| change.lookup) {
        Some(at) => Some(changes.swap_remove(at)),
        None => changes.into_iter().next(),
    }
}

/// Whether the `bash` call `call` changes which program a name runs for the commands after it:
/// once one was let run, the session asks for every program found through `PATH`.
pub(crate) fn changes_lookup(call: Call<'_>) -> bool {
    if call.tool != super::CallTool::Builtin(Tool::Bash) {
        return false;
    }
    let Some(Ok(line)) = call.command().map(shell::parse) else {
        return false;
    };
    later_change(&line, call.path_var).is_some_and(|change| change.lookup)
}

/// Why a command asks in a session where an earlier call changed lookup: it runs a program
/// found through `PATH`, and which one that is cannot be told any more.
pub(crate) fn after_earlier_change(line: &CommandLine, changed_before: bool) -> Option<String> {
    if !changed_before {
        return None;
    }
    line.commands
        .iter()
        .flat_map(|command| expand(command).invocations)
        .find_map(|invocation| match invocation {
            Invocation::Run { program, .. } if !program.contains('/') && !is_builtin(&program) => {
                Some(format!(
                    "an earlier command of this session changed `PATH`, the hash table or \
                     aliases, so which program `{program}` runs cannot be told"
                ))
            }
            _ => None,
        })
}

/// The variable `NAME=value`, `NAME+=value` or `NAME[i]=value` sets.
fn variable_name(assignment: &str) -> &str {
    assignment.split(['=', '[', '+']).next().unwrap_or_default()
}

/// What setting the variable `name` changes for later commands, if anything that matters.
fn of_variable(name: &str) -> Option<LaterChange> {
    if finds_programs(name) {
        Some(LaterChange {
            why: format!(
                "it changes `{name}` for the commands after it, so which program a name runs \
                 cannot be told"
            ),
            lookup: true,
        })
    } else if dangerous_assignment(name) {
        Some(LaterChange {
            why: format!(
                "it sets `{name}` for the commands after it, which changes what they run or load"
            ),
            lookup: false,
        })
    } else {
        None
    }
}

/// Variables that decide which program a name runs, or what a shell runs before its script.
fn finds_programs(name: &str) -> bool {
    matches!(name, "PATH" | "CDPATH" | "BASH_ENV" | "ENV") || name.starts_with("BASH_FUNC_")
}

/// What running the builtin `name` with `args` changes for later commands.
fn of_builtin(name: &str, args: &[Word], path_var: Option<&str>) -> Vec<LaterChange> {
    let lookup = |why: String| LaterChange { why, lookup: true };
    let mut changes = Vec::new();
    let clusters = short_clusters(args);
    match name {
        _ if SETS_NAMED.contains(&name) => {
            if matches!(name, "declare" | "typeset" | "local")
                && clusters.iter().any(|c| c.contains('n'))
            {
                changes.push(lookup(format!(
                    "`{name} -n` makes a name stand for another variable, which the deny rules \
                     cannot follow"
                )));
            }
            for arg in args.iter().filter(|a| !a.text().starts_with(['-', '+'])) {
                match arg {
                    Word::Literal(text) => changes.extend(of_variable(variable_name(text))),
                    // A glob may match a file named `PATH`.
                    _ => changes.push(lookup(format!(
                        "`{name}` sets a variable whose name is computed when it runs"
                    ))),
                }
            }
        }
        // `printf -v NAME`, `wait -p NAME`: the variable is an option's value.
        "printf" | "wait" => {
            let option = if name == "printf" { "-v" } else { "-p" };
            let texts: Vec<&str> = args.iter().map(Word::text).collect();
            let target = texts.iter().enumerate().find_map(|(i, t)| {
                if *t == option {
                    Some(texts.get(i + 1).copied().unwrap_or_default())
                } else {
                    t.strip_prefix(option)
                }
            });
            changes.extend(target.and_then(|t| of_variable(variable_name(t))));
        }
        "hash" if clusters.iter().any(|c| c.contains('p')) => {
            changes.push(lookup("`hash -p` changes which program a name runs".into()));
        }
        "alias"
            if args
                .iter()
                .any(|a| a.is_dynamic() || a.text().contains('=')) =>
        {
            changes.push(lookup(
                "it defines an alias, which changes what a name runs".into(),
            ));
        }
        "enable" if args.iter().any(|a| !matches!(a.text(), "-a" | "-p" | "-s")) => {
            changes.push(lookup(
                "`enable` turns builtins on or off, which changes what a name runs".into(),
            ));
        }
        "cd" | "pushd" | "popd" => {
            let relative = path_var
                .and_then(|path| std::env::split_paths(path).find(|dir| !dir.is_absolute()));
            if let Some(dir) = relative {
                let entry = match dir.as_os_str().is_empty() {
                    true => "an empty entry (the current directory)".to_string(),
                    false => format!("the relative entry `{}`", dir.display()),
                };
                changes.push(lookup(format!(
                    "it changes directory while `PATH` holds {entry}, so which program a name \
                     runs cannot be told"
                )));
            }
        }
        _ => {}
    }
    changes
}
