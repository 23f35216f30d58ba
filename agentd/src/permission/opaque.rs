//! Opaque commands (docs/architecture.md#permissions-and-modes): a simple command whose effect the
//! rules cannot see. An opaque command is never covered by an allow rule and, where any deny rule
//! exists, asks in every mode. Opaque are: shells and interpreters given code (on the line or on
//! their input), `eval`, `source` of what is not a plain file, aliases and functions defined on the
//! line, arithmetic and array subscripts that may hold code, programs that run other programs from
//! their arguments unless the rules see through them ([`super::wrappers`]), `find -delete`, `git
//! -c` overrides of commands, dangerous prefix assignments (`LD_PRELOAD=…`, also through `env` or
//! in the script a wrapper runs), and a program reached through a path whose resolved name is not
//! the one written (`./del` → `rm`).

use super::code_args::{git_overrides, operands, sed_runs_or_writes};
use super::programs::{Programs, disguised};
use super::shell::{CommandLine, SimpleCommand, Word, plain_subscript};
use super::wrappers::{Invocation, basename, expand};

/// Why `line` hides what it runs, if it does.
pub(crate) fn opaque(line: &CommandLine, programs: Programs<'_>) -> Option<String> {
    if let Some(why) = line.opaque.first() {
        return Some(why.clone());
    }
    line.commands
        .iter()
        .find_map(|command| opaque_command(command, programs))
}

fn opaque_command(command: &SimpleCommand, programs: Programs<'_>) -> Option<String> {
    let expansion = expand(command);
    // Prefix assignments, and those made for a wrapped program (`env PATH=/x ls`).
    if let Some(assignment) = command
        .assignments
        .iter()
        .chain(&expansion.assignments)
        .find(|a| dangerous_assignment(a))
    {
        return Some(format!(
            "`{assignment}` changes what the command runs or loads"
        ));
    }
    if let Some(why) = expansion.opaque.into_iter().next() {
        return Some(why);
    }
    expansion
        .invocations
        .iter()
        .find_map(|invocation| match invocation {
            Invocation::Unknown(why) => Some(why.clone()),
            Invocation::Run { program, args } => {
                program_opaque(basename(program), args).or_else(|| disguised(program, programs))
            }
        })
}

/// Families of variables through which interpreters, package managers and build tools load
/// or run code of their own choosing (`PYTHONUSERBASE` with a `.pth` file, `PYENV_HOOK_PATH`,
/// `RUSTC_WRAPPER`, `MAKEFLAGS=--eval=…`).
const LOADER_PREFIXES: [&str; 16] = [
    "LD_",
    "BASH_FUNC_",
    "GIT_",
    "PYTHON",
    "PYENV_",
    "PERL",
    "RUBY",
    "GEM_",
    "BUNDLE_",
    "NODE_",
    "NPM_CONFIG_",
    "npm_config_",
    "RUSTC",
    "CARGO_",
    "MAKE",
    "LUA_",
];

/// Assignments (`NAME=value`, or a bare `NAME`) that make a command run or load other code.
pub(super) fn dangerous_assignment(assignment: &str) -> bool {
    let name = assignment.split(['=', '[', '+']).next().unwrap_or_default();
    name.contains('[')
        || assignment.contains('[')
        || LOADER_PREFIXES.iter().any(|p| name.starts_with(p))
        || matches!(
            name,
            "BASH_ENV"
                | "ENV"
                | "PATH"
                | "IFS"
                | "SHELLOPTS"
                | "BASHOPTS"
                | "PS4"
                | "PROMPT_COMMAND"
                | "PAGER"
                | "MANPAGER"
                | "EDITOR"
                | "VISUAL"
                | "NODE_OPTIONS"
                | "PYTHONSTARTUP"
                | "PYTHONPATH"
                | "PYTHONHOME"
                | "PERL5OPT"
                | "PERL5LIB"
                | "RUBYOPT"
                | "RUBYLIB"
        )
}

/// Programs that run other programs from their arguments and that the rules do not see
/// through.
const RUNNERS: &[&str] = &[
    "prlimit",
    "choom",
    "ed",
    "red",
    "runcon",
    "numactl",
    "cgexec",
    "systemd-nspawn",
    "chpst",
    "pkexec",
    "eatmydata",
    "dbus-run-session",
    "tini",
    "dumb-init",
    "daemonize",
    "start-stop-daemon",
    "cpulimit",
    "trickle",
    "sshpass",
    "xdg-open",
    "ssh-agent",
    "flatpak-spawn",
    "xargs-parallel",
    "nsenter",
    "firejail",
    "systemd-run",
    "runuser",
    "su",
    "sg",
    "parallel",
    "entr",
    "hyperfine",
    "watchexec",
    "tmux",
    "screen",
    "expect",
    "dtach",
    "xvfb-run",
    "perf",
    "valgrind",
    "gdb",
    "lldb",
    "catchsegv",
    "proot",
    "bwrap",
    "setarch",
    "linux32",
    "linux64",
    "fakeroot",
    "faketime",
    "torsocks",
    "proxychains",
    "proxychains4",
];

/// Why running `name` with `args` hides what runs, if it does.
fn program_opaque(name: &str, args: &[Word]) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(Word::text).collect();
    let has = |flags: &[&str]| texts.iter().any(|t| flags.contains(t));
    let cluster_has = |letters: &[char]| {
        short_clusters(args)
            .iter()
            .any(|c| c.chars().any(|ch| letters.contains(&ch)))
    };
    let no_operand = || operands(args).is_empty();
    let asking_version = || has(&["--version", "-V", "--help", "-h", "-v"]);
    match name {
        "bash" | "sh" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "yash" | "fish" | "csh"
        | "tcsh" => {
            if cluster_has(&['c']) {
                Some(format!("`{name} -c` runs the code it is given"))
            } else if cluster_has(&['s', 'i']) || no_operand() || operands(args)[0] == "-" {
                Some(format!("`{name}` reads its commands from its input"))
            } else {
                None
            }
        }
        "eval" => Some("`eval` runs text as code".into()),
        "source" | "." => match args.first() {
            Some(Word::Literal(path)) if path != "-" && !path.is_empty() => None,
            _ => Some(format!("`{name}` of what is not a plain file")),
        },
        "alias" => (!args.is_empty()).then(|| "it defines an alias".into()),
        "trap" => (!args.is_empty() && !has(&["-l", "-p"]))
            .then(|| "`trap` sets a command to run later".into()),
        "enable" | "bind" | "complete" | "compgen" => {
            (!args.is_empty()).then(|| format!("`{name}` can load or attach code"))
        }
        "hash" => has(&["-p"]).then(|| "`hash -p` changes what a name runs".into()),
        "let" => Some("`let` evaluates arithmetic".into()),
        "declare" | "typeset" | "local" | "export" | "readonly" if cluster_has(&['i']) => {
            Some(format!("`{name} -i` evaluates arithmetic on assignment"))
        }
        "mapfile" | "readarray" if cluster_has(&['C']) => {
            Some(format!("`{name} -C` runs a callback"))
        }
        "python" | "python2" | "python3" | "pypy" | "pypy3" | "ruby" | "lua" | "luajit" | "php"
        | "tclsh" | "wish" | "Rscript" | "node" | "nodejs" | "deno" | "bun" | "perl"
        | "osascript"
            if !asking_version() =>
        {
            interpreter(name, args)
        }
        n if is_versioned(n, "python") || is_versioned(n, "pypy") => interpreter(n, args),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => {
            (!has(&["-f", "--file"])).then(|| format!("`{name}` runs the program it is given"))
        }
        "sed" | "gsed" => sed_runs_or_writes(args),
        "find" => has(&["-delete", "-fprint", "-fprint0", "-fprintf", "-fls"])
            .then(|| "`find` deletes or writes files from its arguments".into()),
        "git" => git_overrides(args),
        "vim" | "vi" | "nvim" | "ex" | "view" => (has(&["-c", "-S", "--cmd"])
            || texts.iter().any(|t| t.starts_with('+')))
        .then(|| format!("`{name}` runs editor commands it is given")),
        "emacs" => has(&["--eval", "-l", "--load", "-f", "--funcall", "--batch"])
            .then(|| "`emacs` runs Lisp it is given".into()),
        "tar" => texts
            .iter()
            .any(|t| {
                t.starts_with("--to-command")
                    || t.starts_with("--use-compress-program")
                    || t.starts_with("--checkpoint-action")
                    || t.starts_with("--info-script")
                    || t.starts_with("--new-volume-script")
                    || *t == "-I"
                    || *t == "-F"
            })
            .then(|| "`tar` runs a program from its arguments".into()),
        "rsync" => texts
            .iter()
            .any(|t| *t == "-e" || t.starts_with("--rsh") || t.starts_with("--rsync-path"))
            .then(|| "`rsync -e` runs a program from its arguments".into()),
        "ssh" | "scp" | "sftp" => texts
            .iter()
            .any(|t| {
                let lower = t.to_ascii_lowercase();
                lower.contains("proxycommand")
                    || lower.contains("localcommand")
                    || lower.contains("proxyjump")
            })
            .then(|| format!("`{name}` runs a local command from its options")),
        "zip" => has(&["-TT", "--unzip-command"])
            .then(|| "`zip -TT` runs a program from its arguments".into()),
        "make" | "gmake" => texts
            .iter()
            .any(|t| {
                t.starts_with("--eval")
                    || *t == "-E"
                    || t.starts_with("--file=-")
                    || t.starts_with("--makefile=-")
                    || *t == "-f-"
            })
            .then(|| format!("`{name}` runs a recipe given on its command line or input")),
        _ if name.starts_with("ld-linux") || (name.starts_with("ld") && name.contains(".so")) => {
            Some(format!("`{name}` runs the program it is given"))
        }
        _ if RUNNERS.contains(&name) => {
            Some(format!("`{name}` runs other programs from its arguments"))
        }
        _ => subscripted_name(name, args),
    }
}

/// Builtins that take variable names evaluate a subscript in them as arithmetic:
/// `read 'a[$(cmd)]'` runs `cmd`.
fn subscripted_name(name: &str, args: &[Word]) -> Option<String> {
    const TAKE_NAMES: [&str; 14] = [
        "read",
        "unset",
        "mapfile",
        "readarray",
        "getopts",
        "printf",
        "wait",
        "test",
        "[",
        "declare",
        "typeset",
        "local",
        "export",
        "readonly",
    ];
    if !TAKE_NAMES.contains(&name) {
        return None;
    }
    args.iter()
        .map(Word::text)
        .find(|t| {
            let name_part = t.split('=').next().unwrap_or_default();
            match name_part.split_once('[') {
                Some((var, rest)) => {
                    let index = rest.strip_suffix(']').unwrap_or(rest);
                    !var.is_empty()
                        && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        && !plain_subscript(index)
                }
                None => false,
            }
        })
        .map(|t| format!("`{name}` evaluates the array subscript in `{t}`"))
}

/// An interpreter given code on the line (`-c`, `-e`, `--eval`, …) or reading it from its
/// input (no script operand, or `-`).
fn interpreter(name: &str, args: &[Word]) -> Option<String> {
    let code_letters: &[char] = match name {
        "perl" => &['e', 'E'],
        "ruby" | "lua" | "luajit" | "Rscript" | "osascript" => &['e'],
        "node" | "nodejs" | "bun" => &['e', 'p'],
        "php" => &['r', 'R', 'B', 'E', 'F'],
        "deno" => &[],
        _ => &['c'],
    };
    let long_code = args
        .iter()
        .map(Word::text)
        .any(|t| matches!(t, "--eval" | "--print" | "--command") || t.starts_with("--eval="));
    let code = long_code
        || short_clusters(args)
            .iter()
            .any(|c| c.chars().any(|ch| code_letters.contains(&ch)));
    if code {
        return Some(format!("`{name}` runs the code it is given"));
    }
    // `python -m module` runs a module's file; `deno run file`, `bun run file` a file.
    let by_module = args.iter().any(|a| a.text() == "-m");
    let operands = operands(args);
    if name == "deno"
        && operands
            .first()
            .is_some_and(|o| *o == "eval" || *o == "repl")
    {
        return Some("`deno eval` runs the code it is given".into());
    }
    if !by_module && (operands.is_empty() || operands[0] == "-") {
        return Some(format!("`{name}` reads its program from its input"));
    }
    None
}

/// The short-flag clusters of `args` (`-lc` → `lc`), before the first operand.
pub(super) fn short_clusters(args: &[Word]) -> Vec<&str> {
    args.iter()
        .map(Word::text)
        .take_while(|t| t.starts_with('-') && *t != "--")
        .filter(|t| !t.starts_with("--"))
        .map(|t| t.strip_prefix('-').unwrap_or(t))
        .collect()
}

/// `python3.11` is a version of `python`.
fn is_versioned(name: &str, base: &str) -> bool {
    name.strip_prefix(base)
        .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}
