//! Around each sandboxed call: before it, the git directories under the writable roots are
//! found (`.git` entries, and directories that git would take for a bare repository); they and
//! what they point at become protected mounts. After it, whatever protected name the command
//! created where none was (a new git directory, a dot file in the home directory) is looked at.
//! A mount cannot cover a path that does not exist yet, so a new one is checked once the call's
//! processes are all gone: a git directory as `git init` or `git clone` leaves it is kept, one
//! that configures commands, has hooks or links elsewhere is removed, and the result says so.
//! The check after a call has no limit: it must see everything the call made.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::git_dirs::{self, GitDir, Identity};
use super::guarded::{self, Executables};
use super::limits::check_free_space;
use super::links;
use super::policy::Policy;
use super::protected::{common_dir_of, git_file_target};

pub(crate) use super::git_dirs::MAX_ENTRIES;

/// What a sandboxed command of a session may do, before the `.git` entries of its directories
/// are known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// The policy without the `.git` entries.
    pub policy: Policy,
    /// The directories searched for `.git` entries (the session directory and
    /// `[sandbox] writable`).
    pub search: Vec<PathBuf>,
    /// The session directory.
    pub session_dir: PathBuf,
    /// The home directory, whose dot files, `bin` and `PATH` directories are protected when it
    /// is writable.
    pub home: Option<PathBuf>,
    /// The `PATH` commands run with.
    pub path_var: Option<String>,
    /// Free space (MiB) the session directory's disk must have for a call to start.
    pub min_free_mb: u64,
}

/// What was there before a call, to compare with after it.
#[derive(Debug)]
pub struct Guard {
    search: Vec<PathBuf>,
    git_dirs: HashMap<GitDir, Identity>,
    /// The home directory when it is writable, and the protected entries it had.
    home: Option<(PathBuf, HashSet<std::ffi::OsString>)>,
    path_var: Option<String>,
    /// Guarded paths that did not exist before the call.
    missing: Vec<PathBuf>,
    /// Writable roots on `PATH`, and their programs before the call.
    roots_on_path: Vec<(PathBuf, Executables)>,
    /// What was done before the call that its result should tell.
    notes: Vec<String>,
}

impl Sandbox {
    /// The whole policy of the next call and its guard. Blocks: it walks the writable roots.
    pub fn prepare(&self) -> Result<(Policy, Guard), String> {
        let mut policy = self.policy.clone();
        if !self.session_dir.as_os_str().is_empty() {
            check_free_space(&self.session_dir, self.min_free_mb)?;
        }
        let git_dirs = git_dirs::find(&self.search, Some(MAX_ENTRIES))?;
        let mut repositories = Vec::new();
        for entry in git_dirs.keys().map(GitDir::path) {
            policy.protected.push(entry.to_path_buf());
            let meta = std::fs::symlink_metadata(entry);
            let git_dir = match meta {
                Ok(m) if m.is_file() => git_file_target(entry),
                _ => Some(entry.to_path_buf()),
            };
            if let Some(git_dir) = git_dir {
                if git_dir != entry && git_dir.exists() {
                    policy.protected.push(git_dir.clone());
                }
                if let Some(common) = common_dir_of(&git_dir).filter(|c| c.exists()) {
                    policy.protected.push(common.clone());
                    repositories.push(common);
                }
                repositories.push(git_dir);
            }
        }
        let guarded = guarded::find(
            &policy.writable,
            &self.session_dir,
            self.home.as_deref(),
            self.path_var.as_deref(),
        );
        policy.protected.extend(guarded.existing.iter().cloned());
        // A writable home directory keeps its dot files (start-up files, configs, `.local/bin`)
        // read-only, and gets no new ones.
        let home = self
            .home
            .as_ref()
            .filter(|home| self.policy.writable.iter().any(|w| home.starts_with(w)))
            .map(|home| {
                let names = home_entries(home, self.path_var.as_deref());
                policy
                    .protected
                    .extend(names.iter().map(|name| home.join(name)));
                (home.clone(), names)
            });
        // No protected file may keep a second name in the writable tree.
        let others: Vec<PathBuf> = policy
            .protected
            .iter()
            .filter(|p| !repositories.contains(p))
            .cloned()
            .collect();
        let unlinked = links::break_links(&repositories, &others, MAX_ENTRIES)?;
        let writable: Vec<PathBuf> = policy
            .writable
            .iter()
            .map(|w| w.canonicalize().unwrap_or_else(|_| w.clone()))
            .collect();
        policy.protected.extend(
            unlinked
                .link_targets
                .into_iter()
                .filter(|t| writable.iter().any(|w| t.starts_with(w))),
        );
        policy.protected.sort();
        policy.protected.dedup();
        let guard = Guard {
            search: self.search.clone(),
            git_dirs,
            home,
            path_var: self.path_var.clone(),
            missing: guarded.missing,
            roots_on_path: guarded
                .roots_on_path
                .into_iter()
                .map(|dir| {
                    let programs = Executables::of(&dir);
                    (dir, programs)
                })
                .collect(),
            notes: unlinked.notes,
        };
        Ok((policy, guard))
    }
}

impl Guard {
    /// Looks for protected names the call created, removes the ones that could run code
    /// outside the sandbox, and says what it removed. Blocks: it walks the writable roots.
    pub fn after(self) -> Vec<String> {
        let mut notes = self.notes;
        let now = match git_dirs::find(&self.search, None) {
            Ok(now) => now,
            Err(err) => {
                notes.push(format!(
                    "[sandbox: {err}; do not run git in the session directory until it is looked at]"
                ));
                return notes;
            }
        };
        // A git directory is new when nothing was at its place before, or something else was;
        // one moved from elsewhere is the same directory, still read-only.
        let known: HashSet<&Identity> = self.git_dirs.values().collect();
        for (dir, id) in &now {
            let same = self.git_dirs.get(dir) == Some(id) || known.contains(id);
            if same {
                continue;
            }
            if let Some(why) = git_dirs::unsafe_reason(dir) {
                notes.push(match dir {
                    GitDir::DotGit(path) => remove(path, &format!("a git directory that {why}")),
                    // Without its HEAD git does not take the directory for a repository; the
                    // rest of it may be the user's.
                    GitDir::Bare(path) => remove(
                        &path.join("HEAD"),
                        &format!(
                            "the HEAD of a directory git would take for a repository that {why}"
                        ),
                    ),
                });
            }
        }
        if let Some((home, before)) = &self.home {
            for name in home_entries(home, self.path_var.as_deref()).difference(before) {
                notes.push(remove(
                    &home.join(name),
                    "an entry of the home directory that shells, git and tools obey or run",
                ));
            }
        }
        for path in &self.missing {
            if std::fs::symlink_metadata(path).is_ok() {
                notes.push(remove(
                    path,
                    "a directory on PATH or a tool's configuration, which runs outside the sandbox",
                ));
            }
        }
        for (dir, before) in &self.roots_on_path {
            notes.extend(before.disarm_new(dir));
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

/// The entries of the home directory that are protected: dot files (start-up files, configs,
/// `.local/bin`), `bin`, and the first part of every `PATH` directory inside it.
fn home_entries(home: &Path, path_var: Option<&str>) -> HashSet<std::ffi::OsString> {
    let mut names: HashSet<std::ffi::OsString> = std::fs::read_dir(home)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name())
                .filter(|n| n.as_encoded_bytes().starts_with(b".") || n == "bin")
                .collect()
        })
        .unwrap_or_default();
    for dir in path_var.map(std::env::split_paths).into_iter().flatten() {
        if let Some(first) = dir
            .strip_prefix(home)
            .ok()
            .and_then(|r| r.components().next())
            && std::fs::symlink_metadata(home.join(first)).is_ok()
        {
            names.insert(first.as_os_str().to_os_string());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ..Sandbox::default()
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
        // The user's repository moved aside, and a copy with a command put in its place.
        std::fs::rename(root.join("old"), root.join("old-moved")).unwrap();
        std::fs::create_dir_all(root.join("old/.git")).unwrap();
        std::fs::write(root.join("old/.git/config"), "[core]\n\tfsmonitor = x\n").unwrap();
        // A repository git finds through a linked HEAD.
        std::fs::create_dir_all(root.join("b1/objects")).unwrap();
        std::fs::create_dir_all(root.join("b1/refs")).unwrap();
        std::os::unix::fs::symlink("refs/heads/main", root.join("b1/HEAD")).unwrap();
        let notes = guard.after();
        assert_eq!(notes.len(), 8, "{notes:?}");
        assert!(root.join("plain/.git/config").exists());
        assert!(
            root.join("old-moved/.git").exists(),
            "the moved repository is the user's"
        );
        assert!(root.join("bare/config").exists(), "only the HEAD goes");
        for gone in [
            "hooked/.git",
            "fsm/.git",
            "file/.git",
            "padded/.git",
            "linked/.git",
            "bare/HEAD",
            "old/.git",
            "b1/HEAD",
        ] {
            assert!(!root.join(gone).exists(), "{gone}");
        }
    }
}
