//! What a program name runs: a path resolved against the session directory, a name looked up
//! in the session's `PATH`, a shell builtin. A program reached through a link whose file has
//! another name is disguised (`./del` → `rm`); one inside the session directory may have been
//! written by an earlier command.

use std::path::{Path, PathBuf};

use super::wrappers::basename;

/// Where programs are found: the session directory (for `./prog`) and the session's `PATH`.
#[derive(Debug, Clone, Copy)]
pub struct Programs<'a> {
    /// The session directory.
    pub cwd: &'a Path,
    /// The `PATH` commands run with.
    pub path: Option<&'a str>,
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
pub(super) fn disguised(program: &str, programs: Programs<'_>) -> Option<String> {
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

/// Interpreters that run the script file given as their first operand.
const SCRIPT_RUNNERS: [&str; 22] = [
    "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "python", "python2",
    "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "php", "lua", "Rscript", "tclsh",
];

/// Why `line` runs code a command may have written: a program, or the script of an
/// interpreter or of `source`, found inside the session directory. Deny rules cannot see into
/// such code (`printf 'r\x6dm v' > s; bash s`), so where any exists it asks.
pub fn local_code(line: &super::shell::CommandLine, programs: Programs<'_>) -> Option<String> {
    use super::wrappers::{Invocation, expand};
    let cwd = programs.cwd.canonicalize().ok()?;
    let inside = |path: PathBuf| path.canonicalize().unwrap_or(path).starts_with(&cwd);
    for command in &line.commands {
        for invocation in expand(command).invocations {
            let Invocation::Run { program, args } = invocation else {
                continue;
            };
            let name = basename(&program);
            let found = if program.contains('/') {
                Some(crate::tools::resolve(programs.cwd, &program))
            } else {
                find_in_path(&program, programs)
            };
            if found.is_some_and(inside) {
                return Some(format!(
                    "it runs `{program}` from the session directory, which a command may have written"
                ));
            }
            let runs_script = SCRIPT_RUNNERS.contains(&name)
                || name.starts_with("python")
                || matches!(name, "source" | ".");
            let script = args
                .iter()
                .map(super::shell::Word::text)
                .find(|a| !a.starts_with('-'));
            let by_module = args.iter().any(|a| a.text() == "-m");
            // A script that is not there yet is made by this line: local all the same.
            if runs_script
                && !by_module
                && let Some(script) = script
                && inside(crate::tools::resolve(programs.cwd, script))
            {
                return Some(format!(
                    "`{name}` runs `{script}` from the session directory, which a command may have written"
                ));
            }
        }
    }
    None
}
