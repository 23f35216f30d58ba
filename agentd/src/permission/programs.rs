//! What a program name runs: a path resolved against the session directory, a name looked up
//! in the session's `PATH`, a shell builtin. A program reached through a link whose file has
//! another name is disguised (`./del` → `rm`). Whether a command may have written the program
//! is for the `written` module to tell.

use std::path::{Path, PathBuf};

use super::wrappers::basename;

/// Where programs are found: the session directory (for `./prog`) and the session's `PATH`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Programs<'a> {
    /// The session directory.
    pub(crate) cwd: &'a Path,
    /// The `PATH` commands run with.
    pub(crate) path: Option<&'a str>,
    /// Files changed after this may have been written by a command (see the `written` module).
    pub(crate) since: std::time::SystemTime,
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

/// The file a program name runs: a path resolved against the session directory, a name looked
/// up in the session's `PATH`.
pub(super) fn locate(program: &str, programs: Programs<'_>) -> Option<PathBuf> {
    if program.contains('/') {
        Some(crate::tools::resolve(programs.cwd, program))
    } else {
        find_in_path(program, programs)
    }
}

/// Why `program` is not what its name says: a path or `PATH` entry whose resolved file has
/// another name (a symlink `./del` to `rm`), or a program that cannot be found to tell.
pub(super) fn disguised(program: &str, programs: Programs<'_>) -> Option<String> {
    if is_builtin(program) {
        return None;
    }
    let Some(real) = locate(program, programs).and_then(|p| p.canonicalize().ok()) else {
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

/// Whether bash runs `program` itself (a builtin or keyword), whatever `PATH` holds.
pub(super) fn is_builtin(program: &str) -> bool {
    !program.contains('/')
        && (BUILTINS.contains(&program) || matches!(program, "." | ":" | "[" | "time"))
}

/// Programs that do what the name they are called by says (`cargo` is a link to `rustup`).
const MULTICALL: [&str; 4] = ["rustup", "busybox", "toybox", "coreutils"];

/// The file a program name runs: the first executable file of that name in the `PATH`
/// directories (a relative one taken from the session directory).
pub(super) fn find_in_path(name: &str, programs: Programs<'_>) -> Option<PathBuf> {
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
