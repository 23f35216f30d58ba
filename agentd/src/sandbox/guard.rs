//! Around each sandboxed call: before it, the git directories under the writable roots are
//! found (`.git` entries, and directories that git would take for a bare repository); they and
//! what they point at become protected mounts. After it, whatever protected name the command
//! created where none was (a new git directory, a dot file in the home directory) is looked at.
//! A mount cannot cover a path that does not exist yet, so a new one is checked once the call's
//! processes are all gone: a git directory as `git init` or `git clone` leaves it is kept, one
//! that configures commands, has hooks or links elsewhere is removed, and the result says so.
//! The check after a call has no limit: it must see everything the call made.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::policy::Policy;
use super::protected::{common_dir_of, git_file_target};

/// The most directory entries looked at under the writable roots before a call; past it the
/// call is refused rather than run with `.git` directories left unprotected.
pub const MAX_ENTRIES: usize = 500_000;

/// What a sandboxed command of a session may do, before the `.git` entries of its directories
/// are known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// The policy without the `.git` entries.
    pub policy: Policy,
    /// The directories searched for `.git` entries (the session directory and
    /// `[sandbox] writable`).
    pub search: Vec<PathBuf>,
    /// The home directory, whose start-up files are protected when it is writable.
    pub home: Option<PathBuf>,
}

/// What was there before a call, to compare with after it.
#[derive(Debug)]
pub struct Guard {
    search: Vec<PathBuf>,
    git_entries: HashSet<PathBuf>,
    /// The home directory when it is writable, and the dot entries it had.
    home: Option<(PathBuf, HashSet<std::ffi::OsString>)>,
}

impl Sandbox {
    /// The whole policy of the next call and its guard. Blocks: it walks the writable roots.
    pub fn prepare(&self) -> Result<(Policy, Guard), String> {
        let mut policy = self.policy.clone();
        if let Some(tmp) = &policy.tmp {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(tmp)
                .map_err(|e| format!("cannot make the private /tmp {}: {e}", tmp.display()))?;
        }
        let git_entries = find_git_entries(&self.search, Some(MAX_ENTRIES))?;
        for entry in &git_entries {
            policy.protected.push(entry.clone());
            let meta = std::fs::symlink_metadata(entry);
            let git_dir = match meta {
                Ok(m) if m.is_file() => git_file_target(entry),
                _ => Some(entry.clone()),
            };
            if let Some(git_dir) = git_dir {
                if &git_dir != entry && git_dir.exists() {
                    policy.protected.push(git_dir.clone());
                }
                if let Some(common) = common_dir_of(&git_dir).filter(|c| c.exists()) {
                    policy.protected.push(common);
                }
            }
        }
        // A writable home directory keeps its dot files (start-up files, configs, `.local/bin`)
        // read-only, and gets no new ones.
        let home = self
            .home
            .as_ref()
            .filter(|home| self.policy.writable.iter().any(|w| home.starts_with(w)))
            .map(|home| {
                let dots = dot_entries(home);
                policy
                    .protected
                    .extend(dots.iter().map(|name| home.join(name)));
                (home.clone(), dots)
            });
        policy.protected.sort();
        policy.protected.dedup();
        let guard = Guard {
            search: self.search.clone(),
            git_entries: git_entries.into_iter().collect(),
            home,
        };
        Ok((policy, guard))
    }
}

impl Guard {
    /// Looks for protected names the call created, removes the ones that could run code
    /// outside the sandbox, and says what it removed. Blocks: it walks the writable roots.
    pub fn after(self) -> Vec<String> {
        let mut notes = Vec::new();
        let now = find_git_entries(&self.search, None).unwrap_or_default();
        for entry in now.iter().filter(|e| !self.git_entries.contains(*e)) {
            if let Some(why) = unsafe_git_entry(entry) {
                notes.push(remove(entry, &format!("a git directory that {why}")));
            }
        }
        if let Some((home, before)) = &self.home {
            for name in dot_entries(home).difference(before) {
                notes.push(remove(
                    &home.join(name),
                    "a dot file in the home directory, which shells, git and tools obey",
                ));
            }
        }
        notes
    }
}

fn remove(path: &Path, what: &str) -> String {
    let removed = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        _ => std::fs::remove_file(path),
    };
    match removed {
        Ok(()) => format!(
            "[sandbox: the command created {} ({what}); auto mode does not allow that, so it was removed. If it is needed, run the command again with \"sandbox\": false (the user will be asked)]",
            path.display()
        ),
        Err(err) => format!(
            "[sandbox: the command created {} ({what}) and it could not be removed: {err}. Do not run git there until it is removed]",
            path.display()
        ),
    }
}

/// The names of the entries of `dir` that start with a dot.
fn dot_entries(dir: &Path) -> HashSet<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name())
                .filter(|n| n.as_encoded_bytes().starts_with(b"."))
                .collect()
        })
        .unwrap_or_default()
}

/// Every git directory below `roots`: entries named `.git`, and directories git would take
/// for a bare repository (a `HEAD` file beside `objects` and `refs`). Symlinks are not
/// followed and git directories are not entered. Past `limit` entries, an error.
fn find_git_entries(roots: &[PathBuf], limit: Option<usize>) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut seen = 0usize;
    let mut stack: Vec<PathBuf> = roots.iter().filter(|r| r.is_dir()).cloned().collect();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let entries: Vec<(std::ffi::OsString, std::fs::FileType)> = entries
            .flatten()
            .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
            .collect();
        seen += entries.len();
        if limit.is_some_and(|limit| seen > limit) {
            return Err(format!(
                "the writable directories hold more than {MAX_ENTRIES} entries, too many to find their git directories before each command; start the session in a smaller directory, or run the command with \"sandbox\": false"
            ));
        }
        let has = |name: &str, dir: bool| {
            entries
                .iter()
                .any(|(n, t)| n == name && if dir { t.is_dir() } else { t.is_file() })
        };
        if has("HEAD", false) && has("objects", true) && has("refs", true) {
            found.push(dir);
            continue;
        }
        for (name, kind) in entries {
            if name == ".git" {
                found.push(dir.join(name));
            } else if kind.is_dir() {
                stack.push(dir.join(name));
            }
        }
    }
    Ok(found)
}

/// Why a git directory the sandbox created could run code outside it, or `None` when it is a
/// plain repository as `git init` or `git clone` make it: a real directory, no links in it,
/// no other git directory named, only sample hooks, and a config that names no command.
fn unsafe_git_entry(entry: &Path) -> Option<&'static str> {
    let meta = std::fs::symlink_metadata(entry).ok()?;
    if !meta.is_dir() {
        return Some("points elsewhere");
    }
    if ["commondir", "modules", "worktrees", "config.worktree"]
        .iter()
        .any(|name| std::fs::symlink_metadata(entry.join(name)).is_ok())
    {
        return Some("shares or nests other git directories");
    }
    // Nothing in it may lead elsewhere (a linked `hooks` would stay writable).
    let mut stack = vec![entry.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Some("cannot be read whole");
        };
        for e in entries.flatten() {
            seen += 1;
            match e.file_type() {
                Ok(t) if t.is_symlink() => return Some("links elsewhere"),
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => {}
                _ => return Some("holds files of unusual kinds"),
            }
            if seen > MAX_ENTRIES {
                return Some("is too large to check");
            }
        }
    }
    let hooks_ok = match std::fs::read_dir(entry.join("hooks")) {
        Ok(hooks) => hooks
            .flatten()
            .all(|h| h.file_name().to_string_lossy().ends_with(".sample")),
        Err(_) => true,
    };
    if !hooks_ok {
        return Some("has hooks");
    }
    const MAX_CONFIG: usize = 1 << 20;
    match crate::regular_file::read_at_most(&entry.join("config"), MAX_CONFIG) {
        Ok((_, true)) => Some("has a config too large to check"),
        Ok((bytes, false)) => match std::str::from_utf8(&bytes) {
            Ok(text) if inert_config(text) => None,
            _ => Some("configures commands"),
        },
        Err(_) if std::fs::symlink_metadata(entry.join("config")).is_err() => None,
        Err(_) => Some("has an unusual config"),
    }
}

/// Whether a git config sets only what `git init` and `git clone` set: nothing that names a
/// command, a hook, a filter or another file to include. Anything unusual counts as not inert.
fn inert_config(text: &str) -> bool {
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
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let Some(header) = header.strip_suffix(']') else {
                return false;
            };
            section = match header.split_once(' ') {
                Some((name, sub)) if sub.starts_with('"') && sub.ends_with('"') => {
                    format!("{}.*", name.to_ascii_lowercase())
                }
                None if !header.contains('"') => header.to_ascii_lowercase(),
                _ => return false,
            };
            continue;
        }
        let key = line
            .split('=')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if line.ends_with('\\') || !INERT.contains(&format!("{section}.{key}").as_str()) {
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
        ] {
            assert!(!inert_config(bad), "{bad}");
        }
    }

    #[test]
    fn a_new_git_directory_with_a_hook_or_a_command_is_removed_and_a_plain_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("old/.git")).unwrap();
        let sandbox = Sandbox {
            policy: Policy {
                writable: vec![root.clone()],
                ..Policy::default()
            },
            search: vec![root.clone()],
            home: None,
        };
        let (policy, guard) = sandbox.prepare().unwrap();
        assert_eq!(policy.protected, [root.join("old/.git")]);
        // After the call: a plain repository, one with a hook, one with a command, a gitfile.
        std::fs::create_dir_all(root.join("plain/.git/hooks")).unwrap();
        std::fs::write(root.join("plain/.git/hooks/pre-commit.sample"), "").unwrap();
        std::fs::write(root.join("plain/.git/config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::create_dir_all(root.join("hooked/.git/hooks")).unwrap();
        std::fs::write(root.join("hooked/.git/hooks/pre-commit"), "").unwrap();
        std::fs::create_dir_all(root.join("fsm/.git")).unwrap();
        std::fs::write(root.join("fsm/.git/config"), "[core]\n\tfsmonitor = x\n").unwrap();
        std::fs::create_dir_all(root.join("file")).unwrap();
        std::fs::write(root.join("file/.git"), "gitdir: /elsewhere\n").unwrap();
        // Past 64 KiB of padding, a command at the end of the config.
        std::fs::create_dir_all(root.join("padded/.git")).unwrap();
        let padding = format!("#{}\n", "x".repeat(70_000));
        std::fs::write(
            root.join("padded/.git/config"),
            format!("{padding}[core]\n\tfsmonitor = x\n"),
        )
        .unwrap();
        // A hooks directory that links to a writable one.
        std::fs::create_dir_all(root.join("linked/.git")).unwrap();
        std::fs::create_dir_all(root.join("linked/myhooks")).unwrap();
        std::os::unix::fs::symlink("../myhooks", root.join("linked/.git/hooks")).unwrap();
        // A directory git takes for a bare repository, with a pager command.
        for dir in ["bare/objects", "bare/refs"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("bare/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join("bare/config"), "[core]\n\tpager = x\n").unwrap();
        let notes = guard.after();
        assert_eq!(notes.len(), 6, "{notes:?}");
        assert!(root.join("plain/.git/config").exists());
        assert!(root.join("old/.git").exists());
        for gone in [
            "hooked/.git",
            "fsm/.git",
            "file/.git",
            "padded/.git",
            "linked/.git",
            "bare",
        ] {
            assert!(!root.join(gone).exists(), "{gone}");
        }
    }
}
