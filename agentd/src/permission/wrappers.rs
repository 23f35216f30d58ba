//! What a simple command really runs (SPEC §6): the command itself, and the commands the
//! wrappers the rules see through run from their arguments (`env` incl. `-S`, `nice`,
//! `timeout`, `nohup`, `stdbuf`, `ionice`, `taskset`, `flock`, `chrt`, `setpriv`, `unshare`,
//! `script -c`, `strace`, `time`, `watch`, `sudo`, `doas`, `xargs`, `find -exec`, `command`,
//! `exec`, `builtin`, `busybox`), and the scripts `bash -c` and `eval` are given. A wrapper
//! form the rules cannot follow is reported as opaque.

use super::shell::{self, SimpleCommand, Word};

/// How deep nested scripts are looked into.
const MAX_NESTING: usize = 4;

/// A program run with its arguments, once wrappers are taken off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
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
pub struct Expansion {
    /// Every program reached, outermost first.
    pub invocations: Vec<Invocation>,
    /// Why what it runs cannot all be seen, if it cannot.
    pub opaque: Vec<String>,
}

/// What `command` runs.
pub fn expand(command: &SimpleCommand) -> Expansion {
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
            for command in &line.commands {
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

/// What the wrapper `name` runs with `args`.
fn wrapped<'a>(name: &str, args: &'a [Word]) -> Wrapped<'a> {
    // Options that take a value, and how many operands come before the command.
    let (with_value, operands): (&[&str], usize) = match name {
        "env" => (&["-u", "-C", "--unset", "--chdir"], 0),
        "sudo" => (
            &[
                "-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-T", "-U", "--user", "--group",
            ],
            0,
        ),
        "doas" => (&["-u", "-C"], 0),
        "nice" => (&["-n", "--adjustment"], 0),
        "ionice" => (&["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"], 0),
        "timeout" => (&["-s", "-k", "--signal", "--kill-after"], 1),
        "xargs" => (
            &[
                "-I",
                "-i",
                "-n",
                "-L",
                "-l",
                "-P",
                "-d",
                "-a",
                "-E",
                "-e",
                "-s",
                "--delimiter",
                "--arg-file",
                "--max-args",
                "--max-procs",
                "--replace",
                "--max-lines",
                "--eof",
                "--max-chars",
                "--process-slot-var",
            ],
            0,
        ),
        "exec" => (&["-a"], 0),
        "stdbuf" => (&["-i", "-o", "-e"], 0),
        "taskset" => (&[], 1),
        "chrt" => (&["-T", "-P", "-D"], 1),
        "flock" => (&["-w", "--timeout", "-E", "--conflict-exit-code"], 1),
        "setpriv" => (
            &[
                "--reuid",
                "--regid",
                "--ruid",
                "--rgid",
                "--euid",
                "--egid",
                "--groups",
                "--inh-caps",
                "--ambient-caps",
                "--bounding-set",
                "--securebits",
                "--pdeathsig",
                "--selinux-label",
                "--apparmor-profile",
                "--landlock-access",
                "--landlock-rule",
            ],
            0,
        ),
        "unshare" => (
            &[
                "--propagation",
                "--setgroups",
                "--map-user",
                "--map-group",
                "--map-users",
                "--map-groups",
                "-R",
                "--root",
                "-w",
                "--wd",
                "-S",
                "--setuid",
                "-G",
                "--setgid",
            ],
            0,
        ),
        "strace" | "ltrace" => (
            &[
                "-e", "-o", "-p", "-s", "-a", "-b", "-E", "-I", "-O", "-P", "-S", "-u", "-X", "-U",
                "-n",
            ],
            0,
        ),
        "watch" => (&["-n", "-d", "--interval", "-q", "--equexit"], 0),
        "script" => (
            &[
                "-T",
                "--log-timing",
                "-I",
                "--log-in",
                "-O",
                "--log-out",
                "-B",
                "--log-io",
                "-E",
                "--echo",
                "-o",
                "--output-limit",
                "-m",
                "--logging-format",
            ],
            0,
        ),
        "command" | "builtin" | "nohup" | "time" | "setsid" | "unbuffer" | "caffeinate"
        | "chroot" | "busybox" => (&[], usize::from(name == "chroot")),
        _ => return Wrapped::NotAWrapper,
    };
    // `command -v rm` and `command -V rm` only say where `rm` is.
    if name == "command"
        && args
            .first()
            .and_then(Word::literal)
            .is_some_and(|t| t == "-v" || t == "-V")
    {
        return Wrapped::Command(&[]);
    }
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else { break };
        if text == "--" {
            i += 1;
            break;
        }
        if !text.starts_with('-') || text.len() == 1 {
            // `env NAME=value cmd`, `env - cmd`
            if name == "env" && (text.contains('=') || text == "-") {
                i += 1;
                continue;
            }
            break;
        }
        // `env -S 'cmd args'`, `flock F -c 'cmd'`, `script -c 'cmd'`: a string of words.
        if let Some(script) = split_string(name, text, args.get(i + 1)) {
            return Wrapped::Script(script);
        }
        let (flag, attached) = match text.split_once('=') {
            Some((flag, _)) => (flag, true),
            None => (text, false),
        };
        i += if with_value.contains(&flag) && !attached {
            2
        } else {
            1
        };
    }
    if name == "flock" {
        // `flock F -c 'cmd'` puts its options after the lock file too.
        if let Some(pos) = args
            .iter()
            .position(|w| w.literal().is_some_and(|t| t == "-c" || t == "--command"))
        {
            return match args.get(pos + 1) {
                Some(script) => Wrapped::Script(script.clone()),
                None => Wrapped::Command(&[]),
            };
        }
    }
    let rest = args
        .get((i + operands).min(args.len())..)
        .unwrap_or_default();
    match name {
        // Without `-c`, `script` runs an interactive shell; its operand is a log file.
        "script" => Wrapped::Opaque("`script` without -c runs a shell".into()),
        // Without a command these run a shell that reads its commands from the input.
        "unshare" | "sudo" | "doas" if rest.is_empty() => {
            Wrapped::Opaque(format!("`{name}` without a command runs a shell"))
        }
        // `watch` joins its words and runs them with `sh -c`.
        "watch" => {
            if rest.iter().any(Word::is_dynamic) {
                return Wrapped::Opaque("`watch` of computed text".into());
            }
            let joined = rest.iter().map(Word::text).collect::<Vec<_>>().join(" ");
            Wrapped::Script(Word::Literal(joined))
        }
        _ => Wrapped::Command(rest),
    }
}

/// The shell string a wrapper's option carries: `env -S STR` (`--split-string`, attached or
/// not), `script -c STR` (`--command`), `su -c STR`.
fn split_string(name: &str, flag: &str, next: Option<&Word>) -> Option<Word> {
    let long = match name {
        "env" => "--split-string",
        "script" => "--command",
        _ => return None,
    };
    let short = if name == "env" { 'S' } else { 'c' };
    if let Some(value) = flag.strip_prefix(&format!("{long}=")) {
        return Some(Word::Literal(value.to_string()));
    }
    if flag == long {
        return next.cloned().or(Some(Word::Literal(String::new())));
    }
    if flag.starts_with("--") {
        return None;
    }
    // A cluster: `-iS'cmd'`, `-qc 'cmd'`; what follows the letter is the value, else the next
    // word is.
    let (_, attached) = flag.split_once(short)?;
    if attached.is_empty() {
        next.cloned().or(Some(Word::Literal(String::new())))
    } else {
        Some(Word::Literal(attached.to_string()))
    }
}

/// The last part of a path: `/bin/rm` is `rm`.
pub fn basename(program: &str) -> &str {
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
    fn a_wrapper_without_a_command_is_opaque() {
        for line in ["unshare -r", "script -q", "sudo -s"] {
            let parsed = shell::parse(line).unwrap();
            assert!(!expand(&parsed.commands[0]).opaque.is_empty(), "{line}");
        }
    }
}
