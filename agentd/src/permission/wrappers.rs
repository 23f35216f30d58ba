//! What a simple command really runs (docs/architecture.md#permissions-and-modes): the command
//! itself, and the commands the wrappers the rules see through run from their arguments (`env`
//! incl. `-S`, `nice`, `timeout`, `nohup`, `stdbuf`, `ionice`, `taskset`, `flock`, `chrt`,
//! `setpriv`, `unshare`, `script -c`, `strace`, `time`, `watch`, `sudo`, `doas`, `xargs`, `find
//! -exec`, `command`, `exec`, `builtin`, `busybox`), and the scripts `bash -c` and `eval` are
//! given. A wrapper form the rules cannot follow is reported as opaque.

use super::shell::{self, SimpleCommand, Word};
use super::wrapper_options;

/// How deep nested scripts are looked into.
const MAX_NESTING: usize = 4;

/// A program run with its arguments, once wrappers are taken off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Invocation {
    /// The program as written (a path or a name) and its arguments.
    Run {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<Word>,
    },
    /// A program that cannot be told before the command runs: why.
    Unknown(String),
}

/// Everything one simple command runs, and why parts of it are opaque.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Expansion {
    /// Every program reached, outermost first.
    pub(crate) invocations: Vec<Invocation>,
    /// Why what it runs cannot all be seen, if it cannot.
    pub(crate) opaque: Vec<String>,
    /// Variables set for the programs reached, as `NAME=value`: the operands of `env`, and the
    /// assignments of the scripts it runs (prefix or standalone). `env PATH=/x ls` runs the
    /// `ls` of `/x`.
    pub(crate) assignments: Vec<String>,
}

/// What `command` runs.
pub(crate) fn expand(command: &SimpleCommand) -> Expansion {
    let mut found = Expansion::default();
    expand_into(&command.words, 0, &mut found);
    found
}

fn expand_into(words: &[Word], depth: usize, found: &mut Expansion) {
    let mut words = words;
    loop {
        let Some(first) = words.first() else {
            return;
        };
        let program = match first {
            Word::Literal(text) => text.clone(),
            other => {
                found.invocations.push(Invocation::Unknown(format!(
                    "the program `{}` is computed when the command runs",
                    other.text()
                )));
                return;
            }
        };
        let name = basename(&program).to_string();
        let args = &words[1..];
        if name == "env" {
            // Every `NAME=value` word, wherever it is: one after an option's value is missed
            // otherwise, and an argument of the command that looks like one only asks more.
            found.assignments.extend(
                args.iter()
                    .map(Word::text)
                    .filter(|t| !t.starts_with('-') && t.contains('='))
                    .map(str::to_string),
            );
        }
        found.invocations.push(Invocation::Run {
            program: program.clone(),
            args: args.to_vec(),
        });
        match name.as_str() {
            "bash" | "sh" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "yash" => {
                if let Some(script) = shell_script(args) {
                    nested(&script, &name, depth, found);
                }
                return;
            }
            "eval" => {
                if args.iter().any(Word::is_dynamic) {
                    found
                        .invocations
                        .push(Invocation::Unknown("`eval` of computed text".into()));
                } else {
                    let script = args.iter().map(Word::text).collect::<Vec<_>>().join(" ");
                    nested(&Word::Literal(script), "eval", depth, found);
                }
                return;
            }
            "find" => {
                find_exec(args, depth, found);
                return;
            }
            _ => {}
        }
        match wrapped(&name, args) {
            Wrapped::Command(rest) if !rest.is_empty() => words = rest,
            Wrapped::Command(_) | Wrapped::NotAWrapper => return,
            Wrapped::Script(script) => {
                nested(&script, &name, depth, found);
                return;
            }
            Wrapped::Opaque(why) => {
                found.opaque.push(why);
                return;
            }
        }
    }
}

/// The script of `bash -c SCRIPT` (`-c` in any short-flag cluster), if given.
fn shell_script(args: &[Word]) -> Option<Word> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let text = word.text();
        if text == "--" || !text.starts_with('-') || word.is_dynamic() {
            return None;
        }
        if !text.starts_with("--") && text.contains('c') {
            // The first operand after the options is the script.
            return args[i + 1..]
                .iter()
                .find(|w| !w.text().starts_with('-') || w.is_dynamic())
                .cloned();
        }
        // Options of bash that take a value.
        if matches!(text, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 1;
        }
        i += 1;
    }
    None
}

/// Adds what a nested script runs.
fn nested(script: &Word, name: &str, depth: usize, found: &mut Expansion) {
    let Word::Literal(script) = script else {
        found.invocations.push(Invocation::Unknown(format!(
            "the script given to `{name}` is computed when it runs"
        )));
        return;
    };
    if depth >= MAX_NESTING {
        found
            .invocations
            .push(Invocation::Unknown("commands nested too deep".into()));
        return;
    }
    match shell::parse(script) {
        Ok(line) => {
            found.opaque.extend(line.opaque);
            found.assignments.extend(line.assignments);
            // A loop variable is set for the loop's body like an assignment.
            let loops = line.loop_variables.iter().map(|name| format!("{name}="));
            found.assignments.extend(loops);
            for command in &line.commands {
                found
                    .assignments
                    .extend(command.assignments.iter().cloned());
                expand_into(&command.words, depth + 1, found);
            }
        }
        Err(_) => found.invocations.push(Invocation::Unknown(format!(
            "the script given to `{name}` could not be parsed"
        ))),
    }
}

/// The commands of `find ... -exec CMD ... ;` (and `-execdir`, `-ok`, `-okdir`).
fn find_exec(args: &[Word], depth: usize, found: &mut Expansion) {
    let mut i = 0;
    while i < args.len() {
        let is_exec = args[i]
            .literal()
            .is_some_and(|t| matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir"));
        if is_exec {
            let end = args[i + 1..]
                .iter()
                .position(|a| a.literal().is_some_and(|t| t == ";" || t == "+"))
                .map_or(args.len(), |p| i + 1 + p);
            expand_into(&args[i + 1..end], depth + 1, found);
            i = end;
        }
        i += 1;
    }
}

/// What a wrapper runs.
enum Wrapped<'a> {
    /// Not a wrapper.
    NotAWrapper,
    /// The words of the command it runs.
    Command(&'a [Word]),
    /// A shell script it runs.
    Script(Word),
    /// A form the rules cannot follow: why.
    Opaque(String),
}

/// What the wrapper `name` runs with `args`, read by its option table
/// ([`super::wrapper_options`]); an option the table does not know makes it opaque.
fn wrapped<'a>(name: &str, args: &'a [Word]) -> Wrapped<'a> {
    let Some(options) = wrapper_options::of(name) else {
        return Wrapped::NotAWrapper;
    };
    let unknown = |option: &str| {
        Wrapped::Opaque(format!(
            "`{name} {option}` is an option the rules do not know, so what it runs cannot be told"
        ))
    };
    let (mut script, mut no_command, mut exec) = (None, false, false);
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else { break };
        if text == "--" {
            i += 1;
            break;
        }
        // `env NAME=value cmd`, `env - cmd`, `nice -5 cmd`
        let old_nice = name == "nice"
            && text
                .strip_prefix('-')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if (name == "env" && (text == "-" || (!text.starts_with('-') && text.contains('='))))
            || old_nice
        {
            i += 1;
            continue;
        }
        if !text.starts_with('-') || text == "-" {
            break;
        }
        let next = args.get(i + 1);
        if let Some(long) = text.strip_prefix("--") {
            let (key, value) = match long.split_once('=') {
                Some((key, value)) => (format!("--{key}"), Some(value)),
                None => (text.to_string(), None),
            };
            let key = key.as_str();
            exec |= key == "--exec";
            no_command |= options.no_command.1.contains(&key);
            if options.script.1.contains(&key) {
                script = Some(value.map_or_else(
                    || next.cloned().unwrap_or(Word::Literal(String::new())),
                    |v| Word::Literal(v.to_string()),
                ));
                break;
            }
            if options.long_flags.contains(&key) {
                i += 1;
            } else if options.long_values.contains(&key) {
                i += if value.is_some() { 1 } else { 2 };
            } else {
                return unknown(key);
            }
            continue;
        }
        let mut takes_next = false;
        for (at, c) in text.char_indices().skip(1) {
            let rest = text.get(at + c.len_utf8()..).unwrap_or_default();
            no_command |= options.no_command.0.contains(c);
            exec |= name == "watch" && c == 'x';
            if options.script.0.contains(c) {
                script = Some(if rest.is_empty() {
                    next.cloned().unwrap_or(Word::Literal(String::new()))
                } else {
                    Word::Literal(rest.to_string())
                });
                break;
            }
            if options.flags.contains(c) {
                continue;
            }
            if options.optional.contains(c) {
                break;
            }
            if options.values.contains(c) {
                takes_next = rest.is_empty();
                break;
            }
            return unknown(&format!("-{c}"));
        }
        if script.is_some() {
            break;
        }
        i += 1 + usize::from(takes_next);
    }
    if let Some(script) = script {
        return Wrapped::Script(script);
    }
    if no_command {
        return Wrapped::Command(&[]);
    }
    let rest = args
        .get((i + options.operands).min(args.len())..)
        .unwrap_or_default();
    // `flock FILE -c 'cmd'` puts its option after the lock file.
    if name == "flock"
        && let Some(flag) = rest.first().and_then(Word::literal)
        && (flag == "-c" || flag == "--command")
    {
        return Wrapped::Script(rest.get(1).cloned().unwrap_or(Word::Literal(String::new())));
    }
    match name {
        // Without `-c`, `script` runs an interactive shell; its operand is a log file.
        "script" => Wrapped::Opaque("`script` without -c runs a shell".into()),
        // Without a command these run a shell that reads its commands from the input.
        "unshare" | "sudo" | "doas" if rest.is_empty() => {
            Wrapped::Opaque(format!("`{name}` without a command runs a shell"))
        }
        // `watch` joins its words and runs them with `sh -c`, unless `-x`.
        "watch" if !exec => {
            if rest.iter().any(Word::is_dynamic) {
                return Wrapped::Opaque("`watch` of computed text".into());
            }
            let joined = rest.iter().map(Word::text).collect::<Vec<_>>().join(" ");
            Wrapped::Script(Word::Literal(joined))
        }
        _ => Wrapped::Command(rest),
    }
}

/// The last part of a path: `/bin/rm` is `rm`.
pub(crate) fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs(line: &str) -> Vec<String> {
        let parsed = shell::parse(line).unwrap();
        parsed
            .commands
            .iter()
            .flat_map(|c| expand(c).invocations)
            .map(|i| match i {
                Invocation::Run { program, .. } => basename(&program).to_string(),
                Invocation::Unknown(_) => "?".into(),
            })
            .collect()
    }

    #[test]
    fn wrappers_are_seen_through_to_the_command_they_run() {
        assert_eq!(programs("bash --norc -c 'rm x'"), ["bash", "rm"]);
        assert_eq!(programs("bash -lc 'rm x'"), ["bash", "rm"]);
        assert_eq!(programs("env -S 'rm x'"), ["env", "rm"]);
        assert_eq!(programs("env -S'rm x'"), ["env", "rm"]);
        assert_eq!(programs("env --split-string='rm x'"), ["env", "rm"]);
        assert_eq!(programs("taskset -c 0 rm x"), ["taskset", "rm"]);
        assert_eq!(programs("taskset 0x1 rm x"), ["taskset", "rm"]);
        assert_eq!(programs("flock /tmp/l rm x"), ["flock", "rm"]);
        assert_eq!(programs("flock /tmp/l -c 'rm x'"), ["flock", "rm"]);
        assert_eq!(programs("chrt -f 1 rm x"), ["chrt", "rm"]);
        assert_eq!(programs("setpriv --nnp rm x"), ["setpriv", "rm"]);
        assert_eq!(programs("unshare -r rm x"), ["unshare", "rm"]);
        assert_eq!(programs("script -qc 'rm x' /dev/null"), ["script", "rm"]);
        assert_eq!(programs("strace -f -o log rm x"), ["strace", "rm"]);
        assert_eq!(programs("watch -n 1 rm x"), ["watch", "rm"]);
        assert_eq!(programs("busybox rm x"), ["busybox", "rm"]);
        assert_eq!(programs("command -v rm"), ["command"]);
        assert_eq!(
            programs("ionice -c 3 nice -n 5 rm x"),
            ["ionice", "nice", "rm"]
        );
    }

    #[test]
    fn option_values_are_never_taken_for_the_program() {
        assert_eq!(
            programs("echo v | xargs -l rm -rf"),
            ["echo", "xargs", "rm"]
        );
        assert_eq!(programs("xargs -e rm -rf"), ["xargs", "rm"]);
        assert_eq!(programs("xargs -i{} rm {}"), ["xargs", "rm"]);
        assert_eq!(
            programs("strace -f --output /dev/null rm -rf v"),
            ["strace", "rm"]
        );
        assert_eq!(
            programs("chroot --userspec root:root / rm -rf v"),
            ["chroot", "rm"]
        );
        assert_eq!(programs("nice -10 rm x"), ["nice", "rm"]);
        assert_eq!(programs("watch -x rm x"), ["watch", "rm"]);
        assert_eq!(programs("taskset -p 1 2"), ["taskset"]);
    }

    #[test]
    fn a_wrapper_without_a_command_or_with_an_unknown_option_is_opaque() {
        for line in [
            "unshare -r",
            "script -q",
            "sudo -s",
            "nice --weird rm x",
            "xargs -Z rm",
        ] {
            let parsed = shell::parse(line).unwrap();
            assert!(!expand(&parsed.commands[0]).opaque.is_empty(), "{line}");
        }
    }
}
