//! Opaque commands (SPEC §6): a simple command whose effect the rules cannot see. An opaque
//! command is never covered by an allow rule and, where any deny rule exists, asks in every
//! mode. Opaque are: shells and interpreters given code (on the line or on their input),
//! `eval`, `source` of what is not a plain file, aliases and functions defined on the line,
//! arithmetic and array subscripts that may hold code, programs that run other programs from
//! their arguments unless the rules see through them ([`super::wrappers`]), `find -delete`,
//! `git -c` overrides of commands, dangerous prefix assignments (`LD_PRELOAD=…`), and a
//! program reached through a path whose resolved name is not the one written (`./del` → `rm`).

use std::path::{Path, PathBuf};

use super::shell::{CommandLine, SimpleCommand, Word, plain_subscript};
use super::wrappers::{Invocation, basename, expand};

/// Where programs are found: the session directory (for `./prog`) and the session's `PATH`.
#[derive(Debug, Clone, Copy)]
pub struct Programs<'a> {
    /// The session directory.
    pub cwd: &'a Path,
    /// The `PATH` commands run with.
    pub path: Option<&'a str>,
}

/// Why `line` hides what it runs, if it does.
pub fn opaque(line: &CommandLine, programs: Programs<'_>) -> Option<String> {
    if let Some(why) = line.opaque.first() {
        return Some(why.clone());
    }
    line.commands
        .iter()
        .find_map(|command| opaque_command(command, programs))
}

fn opaque_command(command: &SimpleCommand, programs: Programs<'_>) -> Option<String> {
    if let Some(assignment) = command.assignments.iter().find(|a| dangerous_assignment(a)) {
        return Some(format!(
            "`{assignment}` changes what the command runs or loads"
        ));
    }
    let expansion = expand(command);
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

/// Prefix assignments that make the command run or load other code.
fn dangerous_assignment(assignment: &str) -> bool {
    let name = assignment.split(['=', '[', '+']).next().unwrap_or_default();
    name.contains('[')
        || assignment.contains('[')
        || name.starts_with("LD_")
        || name.starts_with("BASH_FUNC_")
        || name.starts_with("GIT_")
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

/// `sed` scripts that run commands (`e`, the `e` flag of `s`) or write files (`w`, `W`, the
/// `w` flag), or a script read from a file.
fn sed_runs_or_writes(args: &[Word]) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(Word::text).collect();
    if texts.iter().any(|t| {
        *t == "-f"
            || t.starts_with("--file")
            || (t.starts_with('-') && !t.starts_with("--") && t.contains('f'))
    }) {
        return Some("`sed -f` runs a script from a file".into());
    }
    let mut scripts = Vec::new();
    let mut i = 0;
    let mut explicit = false;
    while i < texts.len() {
        let t = texts[i];
        if t == "-e" || t == "--expression" {
            explicit = true;
            if let Some(s) = texts.get(i + 1) {
                scripts.push(*s);
            }
            i += 2;
            continue;
        }
        if let Some(s) = t.strip_prefix("--expression=") {
            explicit = true;
            scripts.push(s);
        }
        i += 1;
    }
    if !explicit && let Some(first) = operands(args).first() {
        scripts.push(first);
    }
    scripts
        .iter()
        .any(|s| sed_script_runs_or_writes(s))
        .then(|| "the `sed` script runs commands or writes files (`e`, `w`)".into())
}

/// Whether a sed script holds an `e`, `w` or `W` command, or an `s` command with the `e` or
/// `w` flag. Unsure readings count as yes.
fn sed_script_runs_or_writes(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // Skip separators and an address (numbers, `$`, `/regex/`, `,`, `!`).
        while i < chars.len() && (chars[i].is_whitespace() || matches!(chars[i], ';' | '{' | '}')) {
            i += 1;
        }
        loop {
            match chars.get(i) {
                Some(c) if c.is_ascii_digit() || matches!(c, '$' | ',' | '!' | '~' | '+') => i += 1,
                Some('/') => {
                    i = skip_delimited(&chars, i + 1, '/');
                }
                Some('\\') => match chars.get(i + 1) {
                    Some(&d) => i = skip_delimited(&chars, i + 2, d),
                    None => return true,
                },
                _ => break,
            }
        }
        let Some(&command) = chars.get(i) else {
            return false;
        };
        match command {
            'e' | 'w' | 'W' => return true,
            's' | 'y' => {
                let Some(&delim) = chars.get(i + 1) else {
                    return true;
                };
                i = skip_delimited(&chars, i + 2, delim);
                i = skip_delimited(&chars, i, delim);
                while let Some(&flag) = chars.get(i) {
                    if flag == ';' || flag == '}' || flag == '\n' {
                        break;
                    }
                    if command == 's' && (flag == 'e' || flag == 'w' || flag == 'W') {
                        return true;
                    }
                    i += 1;
                }
            }
            // Commands whose argument runs to the end of the line.
            'a' | 'i' | 'c' | 'r' | 'R' | 'b' | 't' | 'T' | ':' | 'q' | 'Q' | 'l' | 'L' => {
                while i < chars.len() && chars[i] != '\n' && chars[i] != ';' {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    false
}

/// The index after the next unescaped `delim` from `from`.
fn skip_delimited(chars: &[char], mut from: usize, delim: char) -> usize {
    while let Some(&c) = chars.get(from) {
        from += 1;
        if c == '\\' {
            from += 1;
        } else if c == delim {
            break;
        }
    }
    from
}

/// `git -c` (or `--config-env`) overrides of commands and aliases, and `git config` setting
/// them: they run programs outside what the rules see.
fn git_overrides(args: &[Word]) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(Word::text).collect();
    let dangerous = |key: &str| {
        let key = key.trim_start().to_ascii_lowercase();
        key.starts_with("core.")
            || key.starts_with("alias.")
            || key.starts_with("include")
            || key.starts_with("filter.")
            || key.starts_with("diff.")
            || key.starts_with("merge.")
            || key.starts_with("credential.")
            || key.starts_with("gpg.")
            || key.starts_with("sequence.")
            || key.starts_with("uploadpack.")
            || key.starts_with("receive.")
            || key.starts_with("remote.")
            || key.starts_with("protocol.")
            || key.starts_with("url.")
    };
    let mut i = 0;
    while i < texts.len() {
        let t = texts[i];
        let value = if t == "-c" || t == "--config-env" {
            i += 1;
            texts.get(i).copied()
        } else if let Some(v) = t.strip_prefix("--config-env=") {
            Some(v)
        } else if let Some(v) = t.strip_prefix("-c") {
            Some(v)
        } else if t == "config" {
            // `git config KEY VALUE` and its options.
            return texts[i + 1..]
                .iter()
                .find(|k| !k.starts_with('-'))
                .filter(|k| dangerous(k))
                .map(|k| format!("`git config {k}` sets a command git runs later"));
        } else if !t.starts_with('-') {
            return git_subcommand_runs(t, &texts[i + 1..]);
        } else if matches!(t, "-C" | "--git-dir" | "--work-tree" | "--namespace") {
            i += 2;
            continue;
        } else if t.starts_with("--exec-path=") || t.starts_with("--git-dir=") {
            if t.starts_with("--exec-path=") {
                return Some("`git --exec-path` changes which programs git runs".into());
            }
            None
        } else {
            None
        };
        if let Some(value) = value
            && dangerous(value.split('=').next().unwrap_or_default())
        {
            return Some(format!("`git -c {value}` overrides a command git runs"));
        }
        i += 1;
    }
    None
}

/// Why `git SUBCOMMAND ARGS` runs a program its arguments name, if it does.
fn git_subcommand_runs(subcommand: &str, args: &[&str]) -> Option<String> {
    const RUNNING: [&str; 11] = [
        "--exec",
        "--extcmd",
        "--tool",
        "--upload-pack",
        "--receive-pack",
        "--open-files-in-pager",
        "--config",
        "--template",
        "--command",
        "--shell",
        "--strategy",
    ];
    let t = subcommand;
    let runs = |a: &&str| {
        RUNNING.iter().any(|o| a.starts_with(o))
            || (a.starts_with("-O") && t == "grep")
            || (matches!(*a, "-x" | "-t") && matches!(t, "rebase" | "difftool" | "mergetool"))
            || (a.starts_with("-u")
                && matches!(t, "clone" | "fetch" | "ls-remote" | "pull" | "archive"))
            || (a.starts_with("-c") && t == "clone")
            || (matches!(*a, "run" | "foreach") && matches!(t, "bisect" | "submodule"))
    };
    (matches!(t, "filter-branch" | "daemon" | "instaweb" | "web--browse") || args.iter().any(runs))
        .then(|| format!("`git {t}` runs a command from its arguments"))
}

/// The short-flag clusters of `args` (`-lc` → `lc`), before the first operand.
fn short_clusters(args: &[Word]) -> Vec<&str> {
    args.iter()
        .map(Word::text)
        .take_while(|t| t.starts_with('-') && *t != "--")
        .filter(|t| !t.starts_with("--"))
        .map(|t| t.strip_prefix('-').unwrap_or(t))
        .collect()
}

/// The operands of `args`: what does not start with `-`, after the options.
fn operands(args: &[Word]) -> Vec<&str> {
    let mut past = false;
    args.iter()
        .map(Word::text)
        .filter(|t| {
            if past {
                return true;
            }
            if *t == "--" {
                past = true;
                return false;
            }
            !t.starts_with('-') || *t == "-"
        })
        .collect()
}

/// `python3.11` is a version of `python`.
fn is_versioned(name: &str, base: &str) -> bool {
    name.strip_prefix(base)
        .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// Shell builtins and keywords: bash runs these itself, whatever `PATH` holds.
const BUILTINS: [&str; 58] = [
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
];

/// Why `program` is not what its name says: a path or `PATH` entry whose resolved file has
/// another name (a symlink `./del` to `rm`), or a program that cannot be found to tell.
fn disguised(program: &str, programs: Programs<'_>) -> Option<String> {
    if !program.contains('/')
        && (BUILTINS.contains(&program) || matches!(program, "." | ":" | "[" | "time"))
    {
        return None;
    }
    let found = if program.contains('/') {
        Some(crate::tools::resolve(programs.cwd, program))
    } else {
        find_in_path(program, programs)
    };
    let Some(real) = found.and_then(|p| p.canonicalize().ok()) else {
        return Some(format!(
            "the program `{program}` cannot be found to tell what it is"
        ));
    };
    let written = basename(program);
    let resolved = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // A version or variant of the same program (`python3` → `python3.11`, `gcc` → `gcc-12`,
    // `which` → `which.debianutils`), or a program that runs as the name it is called by.
    let same = resolved == written
        || resolved.strip_prefix(written).is_some_and(|rest| {
            rest.starts_with(['.', '-']) || rest.starts_with(|c: char| c.is_ascii_digit())
        })
        || MULTICALL.contains(&resolved.as_str());
    (!same).then(|| format!("`{program}` is really `{}`", real.display()))
}

/// Programs that do what the name they are called by says (`cargo` is a link to `rustup`).
const MULTICALL: [&str; 4] = ["rustup", "busybox", "toybox", "coreutils"];

fn find_in_path(name: &str, programs: Programs<'_>) -> Option<PathBuf> {
    let path = programs.path?;
    std::env::split_paths(path)
        .map(|dir| {
            let dir = if dir.is_absolute() {
                dir
            } else {
                programs.cwd.join(dir)
            };
            dir.join(name)
        })
        .find(|candidate| {
            std::fs::metadata(candidate).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
        })
}
