//! Code a command may have written. Deny rules see the words of a line, not what a
//! program or script does: `printf 'r\x6dm v' > ../s; bash ../s` runs `rm` unseen, and so does a
//! copy of `rm` named `ls` found first on `PATH`. So where deny rules exist, a line asks when a
//! program it runs (by path or through `PATH`), or the script it gives an interpreter or
//! `source`, may have been written by a command: anything in the session directory, anything
//! not there yet (this line may write it), anything that is not a regular file, and anything
//! changed since the session was created or the daemon checked its first command. A file under
//! a system directory, or a user's own program (`~/.cargo/bin/cargo`), that has not changed
//! since then runs as before.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::programs::{Programs, is_builtin, locate};
use super::python_module::{locate_module, module_of};
use super::shell::{CommandLine, Word};
use super::wrappers::{Invocation, basename, expand};

/// Directories whose files the system installs: a command of a session writes there only as
/// root, and then the file's change time says so.
const SYSTEM_DIRS: [&str; 11] = [
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/etc",
    "/nix/store",
    "/snap",
];

/// Interpreters that run the script file given as their first operand.
const SCRIPT_RUNNERS: [&str; 22] = [
    "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "python", "python2",
    "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "php", "lua", "Rscript", "tclsh",
];

/// Shells (and Pythons, by name) take code, not a script, with `-c`: a shell's code is looked
/// into as commands, a Python's is opaque.
const CODE_WITH_C: [&str; 9] = [
    "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish",
];

/// File times are taken from the kernel's coarse clock, which may lag the time the daemon
/// reads by a tick: a file written just after the instant must not look older than it.
const CLOCK_SLACK: Duration = Duration::from_millis(50);

/// When this daemon checked its first call. Every command of the daemon is checked before it
/// runs, so none of them wrote a file before this.
static FIRST_CHECK: LazyLock<SystemTime> = LazyLock::new(SystemTime::now);

/// The instant after which a file may have been written by a command: the session's creation
/// (`created_ms`, milliseconds since the Unix epoch; an earlier daemon may have run its
/// commands) or this daemon's first check (a command of another session), whichever came
/// first.
pub(crate) fn unchanged_since(created_ms: u64) -> SystemTime {
    let first_check = *FIRST_CHECK;
    let since = match created_ms {
        // A session stored without its creation time.
        0 => first_check,
        ms => (UNIX_EPOCH + Duration::from_millis(ms)).min(first_check),
    };
    since.checked_sub(CLOCK_SLACK).unwrap_or(UNIX_EPOCH)
}

/// Why `line` runs code a command may have written, if it does: a program, or the script of an
/// interpreter or of `source`.
pub(crate) fn written_code(line: &CommandLine, programs: Programs<'_>) -> Option<String> {
    let cwd = programs
        .cwd
        .canonicalize()
        .unwrap_or_else(|_| programs.cwd.to_path_buf());
    // A relative name a program looks up (a module, a makefile) is found where the command
    // stands, which `cd` moves.
    let changes_dir = line.commands.iter().any(|c| {
        c.words
            .first()
            .is_some_and(|w| matches!(w.text(), "cd" | "pushd" | "popd"))
    });
    for command in &line.commands {
        for invocation in expand(command).invocations {
            let Invocation::Run { program, args } = invocation else {
                continue;
            };
            if let Some(why) = written_program(&program, programs, &cwd) {
                return Some(why);
            }
            let name = basename(&program);
            if let Some(why) = loaded_code(name, &args, &cwd, programs.since, changes_dir) {
                return Some(why);
            }
            if let Some(module) = module_of(name, &args) {
                if changes_dir {
                    return Some(format!(
                        "`{name}` runs the module `{module}` after the line changes directory, so which file it is cannot be told"
                    ));
                }
                let interpreter = locate(&program, programs);
                let how = match locate_module(module, &cwd, interpreter.as_deref()) {
                    Some(file) => written(&file, &cwd, programs.since),
                    None => Some("which cannot be found to tell what it runs"),
                };
                if let Some(how) = how {
                    return Some(format!(
                        "`{}` runs the module `{module}`, {how}",
                        basename(&program)
                    ));
                }
            }
            if let Some(script) = script_of(basename(&program), &args) {
                let path = crate::tools::resolve(programs.cwd, script);
                if let Some(how) = written(&path, &cwd, programs.since) {
                    return Some(format!("`{}` runs `{script}`, {how}", basename(&program)));
                }
            }
        }
    }
    None
}

/// Why the file `program` runs may have been written by a command, if it may.
fn written_program(program: &str, programs: Programs<'_>, cwd: &Path) -> Option<String> {
    // Bash runs its builtins itself: a file of that name on `PATH` is never run.
    if is_builtin(program) {
        return None;
    }
    let Some(path) = locate(program, programs) else {
        return Some(format!(
            "it runs `{program}`, which is not on `PATH` yet, so a command of the line may write it"
        ));
    };
    written(&path, cwd, programs.since).map(|how| match program.contains('/') {
        true => format!("it runs `{program}`, {how}"),
        false => format!("it runs `{program}` (`{}`), {how}", path.display()),
    })
}

/// Code a program loads from a file by convention rather than by an operand: a makefile
/// (`make`, `make -f FILE`, `make -C DIR`), and a Perl module from a directory given with `-I`.
fn loaded_code(
    name: &str,
    args: &[Word],
    cwd: &Path,
    since: SystemTime,
    changes_dir: bool,
) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(Word::text).collect();
    if name.starts_with("perl") && texts.iter().any(|t| t.starts_with("-I")) {
        return Some(format!(
            "`{name}` loads modules from a directory given with -I, which a command may have written"
        ));
    }
    if !matches!(name, "make" | "gmake" | "bmake") {
        return None;
    }
    let mut dir = cwd.to_path_buf();
    let mut files = Vec::new();
    let mut rest = texts.iter();
    while let Some(arg) = rest.next() {
        let value = |flag: &str| {
            arg.strip_prefix(flag)
                .map(|v| v.trim_start_matches('='))
                .filter(|v| !v.is_empty())
        };
        if let Some(file) = value("--file")
            .or_else(|| value("--makefile"))
            .or_else(|| value("-f"))
        {
            files.push(file.to_string());
        } else if matches!(*arg, "-f" | "--file" | "--makefile") {
            files.extend(rest.next().map(|f| f.to_string()));
        } else if let Some(d) = value("--directory").or_else(|| value("-C")) {
            dir = crate::tools::resolve(&dir, d);
        } else if matches!(*arg, "-C" | "--directory")
            && let Some(d) = rest.next()
        {
            dir = crate::tools::resolve(&dir, d);
        }
    }
    if changes_dir && files.iter().all(|f| !f.starts_with('/')) {
        return Some(format!(
            "`{name}` runs a makefile after the line changes directory, so which file it is cannot be told"
        ));
    }
    if files.is_empty() {
        files = ["GNUmakefile", "makefile", "Makefile"]
            .iter()
            .map(|f| f.to_string())
            .filter(|f| dir.join(f).exists())
            .take(1)
            .collect();
    }
    files.iter().find_map(|file| {
        let how = written(&crate::tools::resolve(&dir, file), cwd, since)?;
        Some(format!("`{name}` runs the makefile `{file}`, {how}"))
    })
}

/// The script an interpreter or `source` runs from a file: its first operand, unless the code
/// comes from the line (`bash -c`) or a module (`python -m`).
fn script_of<'a>(name: &str, args: &'a [Word]) -> Option<&'a str> {
    let runs_script = SCRIPT_RUNNERS.contains(&name)
        || name.starts_with("python")
        || matches!(name, "source" | ".");
    let texts = || args.iter().map(Word::text);
    let options = || texts().take_while(|t| t.starts_with('-') && *t != "--");
    let by_module = texts().any(|t| t == "-m");
    let code_given = (CODE_WITH_C.contains(&name) || name.starts_with("python"))
        && options().any(|t| !t.starts_with("--") && t.contains('c'));
    if !runs_script || by_module || code_given {
        return None;
    }
    texts().find(|a| !a.starts_with('-'))
}

/// How the file at `path` may have been written by a command since `since`, if it may: said so
/// that it follows "runs `…`, ".
fn written(path: &Path, cwd: &Path, since: SystemTime) -> Option<&'static str> {
    let Ok(real) = path.canonicalize() else {
        return Some("which is not there yet, so a command of the line may write it");
    };
    if real.starts_with(cwd) {
        return Some("a file in the session directory, which a command may have written");
    }
    let Ok(metadata) = std::fs::metadata(&real) else {
        return Some("a file that cannot be looked at to tell who wrote it");
    };
    if !metadata.is_file() {
        return Some("which is not a regular file, so what it holds cannot be told");
    }
    if !changed_after(&metadata, since) {
        return None;
    }
    Some(if in_system_dir(&real) {
        "a system file changed since this session or the daemon started, maybe by a command"
    } else {
        "a file outside the system directories that changed since this session or the daemon \
         started, so a command may have written it"
    })
}

/// Whether `real` (a resolved path) lies in a directory the system installs.
fn in_system_dir(real: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|dir| real.starts_with(dir))
}

/// Whether the file's contents (modification time) or its inode (change time: a rename, a
/// `chmod`, a copy that kept the modification time) changed after `since`. The change time
/// cannot be set back, so a file a command made looks new however it was made.
fn changed_after(metadata: &std::fs::Metadata, since: SystemTime) -> bool {
    let changed = u64::try_from(metadata.ctime()).ok().map(|secs| {
        let nanos = u32::try_from(metadata.ctime_nsec()).unwrap_or(0);
        UNIX_EPOCH + Duration::new(secs, nanos.min(999_999_999))
    });
    match (changed, metadata.modified().ok()) {
        (Some(changed), Some(modified)) => changed.max(modified) > since,
        // A time that cannot be read cannot show the file is old.
        _ => true,
    }
}
