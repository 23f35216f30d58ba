//! Git directories under the writable roots, as git itself would find them: entries named
//! `.git` (directories, files, links), and directories git takes for a repository of their own
//! because they hold an entry named `HEAD` (git also accepts a linked `HEAD`, linked `objects`
//! and `refs`, or a `commondir`, so any `HEAD` counts). And the check that a git directory a
//! command created is inert: what `git init` or `git clone` leave, nothing that names a command.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The most directory entries looked at under the writable roots before a call; past it the
/// call is refused rather than run with `.git` directories left unprotected.
pub(crate) const MAX_ENTRIES: usize = 500_000;

/// A git directory found, and what it is on disk (device and inode), so that one put in the
/// place of another is told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Identity {
    dev: u64,
    ino: u64,
}

/// Where a git directory is, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum GitDir {
    /// An entry named `.git`.
    DotGit(PathBuf),
    /// A directory holding a `HEAD`.
    Bare(PathBuf),
}

impl GitDir {
    /// The path that is protected, checked and removed: the `.git` entry, or the directory.
    pub(crate) fn path(&self) -> &Path {
        match self {
            GitDir::DotGit(p) | GitDir::Bare(p) => p,
        }
    }
}

/// Every git directory below `roots`, with its identity. Symlinks are not followed and git
/// directories are not entered. A directory that cannot be read is made readable first (the
/// commands that could have hidden it run as this user); one that still cannot is an error.
/// Past `limit` entries, an error.
pub(crate) fn find(
    roots: &[PathBuf],
    limit: Option<usize>,
) -> Result<HashMap<GitDir, Identity>, String> {
    let mut found = HashMap::new();
    let mut seen = 0usize;
    let mut stack: Vec<PathBuf> = roots.iter().filter(|r| r.is_dir()).cloned().collect();
    while let Some(dir) = stack.pop() {
        let entries = read_dir_forcing(&dir)
            .map_err(|e| format!("cannot look into {}: {e}", dir.display()))?;
        seen += entries.len();
        if limit.is_some_and(|limit| seen > limit) {
            return Err(format!(
                "the writable directories hold more than {} entries, too many to find their git directories before each command; start the session in a smaller directory, or run the command with \"sandbox\": false",
                limit.unwrap_or_default()
            ));
        }
        if entries
            .iter()
            .any(|(name, kind)| name == "HEAD" && !kind.is_dir())
        {
            if let Some(id) = identity(&dir) {
                found.insert(GitDir::Bare(dir), id);
            }
            continue;
        }
        for (name, kind) in entries {
            let path = dir.join(&name);
            if name == ".git" {
                if let Some(id) = identity(&path) {
                    found.insert(GitDir::DotGit(path), id);
                }
            } else if kind.is_dir() {
                stack.push(path);
            }
        }
    }
    Ok(found)
}

fn identity(path: &Path) -> Option<Identity> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some(Identity {
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

/// The entries of `dir`; a directory this user owns but may not read is given read and search
/// permission back.
fn read_dir_forcing(dir: &Path) -> std::io::Result<Vec<(std::ffi::OsString, std::fs::FileType)>> {
    let read = || -> std::io::Result<Vec<_>> {
        Ok(std::fs::read_dir(dir)?
            .flatten()
            .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
            .collect())
    };
    match read() {
        Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::symlink_metadata(dir)?.permissions().mode();
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o700))?;
            read()
        }
        other => other,
    }
}

/// Why a git directory a command created could run code outside the sandbox, or `None` when
/// it is a plain repository as `git init` or `git clone` make it: a real directory, a regular
/// `HEAD`, no links in it, no other git directory named, only sample hooks, and a config that
/// names no command.
pub(crate) fn unsafe_reason(dir: &GitDir) -> Option<&'static str> {
    let path = dir.path();
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_dir() {
        return Some("points elsewhere");
    }
    if !std::fs::symlink_metadata(path.join("HEAD")).is_ok_and(|m| m.is_file())
        && matches!(dir, GitDir::Bare(_))
    {
        return Some("has a HEAD that is not a plain file");
    }
    if [
        "commondir",
        "modules",
        "worktrees",
        "config.worktree",
        "gitdir",
    ]
    .iter()
    .any(|name| std::fs::symlink_metadata(path.join(name)).is_ok())
    {
        return Some("shares or nests other git directories");
    }
    // Nothing in it may lead elsewhere (a linked `hooks` would stay writable), and no file may
    // have a second name outside it (`ln .git/config cfg`: written through `cfg` later). Only
    // the content-addressed objects may be shared, as `git clone --local` shares them.
    let mut stack = vec![(path.to_path_buf(), false)];
    let mut seen = 0usize;
    while let Some((dir, in_objects)) = stack.pop() {
        let Ok(entries) = read_dir_forcing(&dir) else {
            return Some("cannot be read whole");
        };
        for (name, kind) in entries {
            seen += 1;
            let entry = dir.join(&name);
            if kind.is_symlink() {
                return Some("links elsewhere");
            } else if kind.is_dir() {
                let objects = in_objects || (dir == path && name == "objects");
                stack.push((entry, objects));
            } else if !kind.is_file() {
                return Some("holds files of unusual kinds");
            } else if !in_objects
                && std::fs::symlink_metadata(&entry).map_or(true, |m| m.nlink() > 1)
            {
                return Some("has a file with another name elsewhere (a hard link)");
            }
            if seen > MAX_ENTRIES {
                return Some("is too large to check");
            }
        }
    }
    let hooks_ok = match std::fs::read_dir(path.join("hooks")) {
        Ok(hooks) => hooks
            .flatten()
            .all(|h| h.file_name().to_string_lossy().ends_with(".sample")),
        Err(_) => true,
    };
    if !hooks_ok {
        return Some("has hooks");
    }
    const MAX_CONFIG: usize = 1 << 20;
    match crate::regular_file::read_at_most(&path.join("config"), MAX_CONFIG) {
        Ok((_, true)) => Some("has a config too large to check"),
        Ok((bytes, false)) => match std::str::from_utf8(&bytes) {
            Ok(text) if inert_config(text) => None,
            _ => Some("configures commands"),
        },
        Err(_) if std::fs::symlink_metadata(path.join("config")).is_err() => None,
        Err(_) => Some("has an unusual config"),
    }
}

/// Whether a git config sets only what `git init` and `git clone` set: nothing that names a
/// command, a hook, a filter or another file to include. Read strictly: a line that is not a
/// plain `[section]`, `[section "sub"]` or `key = value` counts as not inert, since git reads
/// forms (a key after a header on one line, continued lines) that a loose reading would miss.
pub(crate) fn inert_config(text: &str) -> bool {
    const INERT: [&str; 13] = [
        "core.repositoryformatversion",
        "core.filemode",
        "core.bare",
        "core.logallrefupdates",
        "core.ignorecase",
        "core.precomposeunicode",
        "core.symlinks",
        "remote.*.url",
        "remote.*.fetch",
        "branch.*.remote",
        "branch.*.merge",
        "extensions.objectformat",
        "init.defaultbranch",
    ];
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let mut section = None;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.ends_with('\\') {
            return false;
        }
        if let Some(header) = line.strip_prefix('[') {
            let Some(header) = header.strip_suffix(']') else {
                return false;
            };
            section = match header.split_once(' ') {
                None if word(header) => Some(header.to_ascii_lowercase()),
                Some((name, sub))
                    if word(name)
                        && sub
                            .strip_prefix('"')
                            .and_then(|s| s.strip_suffix('"'))
                            .is_some_and(|inner| !inner.contains(['"', '\\', ']'])) =>
                {
                    Some(format!("{}.*", name.to_ascii_lowercase()))
                }
                _ => return false,
            };
            continue;
        }
        let Some(section) = &section else {
            return false;
        };
        let key = line.split('=').next().unwrap_or_default().trim();
        if !word(key)
            || !INERT.contains(&format!("{section}.{}", key.to_ascii_lowercase()).as_str())
        {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_as_git_init_or_clone_writes_it_is_inert() {
        assert!(inert_config(
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
             \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://x/y\n\
             \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\
             \tmerge = refs/heads/main\n"
        ));
        for bad in [
            "[core]\n\tfsmonitor = touch X\n",
            "[core]\n\thooksPath = /tmp/h\n",
            "[include]\n\tpath = ../x\n",
            "[includeIf \"gitdir:/\"]\n\tpath = x\n",
            "[alias]\n\tst = !touch X\n",
            "[filter \"x\"]\n\tclean = touch X\n",
            "[core]\n\tpager = touch X\n",
            "[core]\n\tbare = false \\\n",
            "[core\n",
            "[core]\tfsmonitor\t= \"touch X;:\"]\n",
            "[core] fsmonitor = x\n",
            "bare = true\n",
            "[remote.origin]\n\turl = x\n",
        ] {
            assert!(!inert_config(bad), "{bad}");
        }
    }
}
