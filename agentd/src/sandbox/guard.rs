//! Around each sandboxed call: before it, the `.git` entries under the writable roots are found
//! (they and what they point at become protected mounts); after it, whatever protected name
//! the command created where none was (a new `.git`, a start-up file) is looked at. A mount
//! cannot cover a path that does not exist yet, so a new one is checked once the call's
//! processes are all gone: a git directory as `git init` or `git clone` leaves it is kept, one
//! that configures commands or hooks is removed, and the result says so.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::policy::Policy;
use super::protected::{STARTUP_FILES, common_dir_of, git_file_target};

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
    absent: Vec<PathBuf>,
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
        let git_entries = find_git_entries(&self.search)?;
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
        let mut absent = Vec::new();
        if let Some(home) = &self.home
            && self.policy.writable.iter().any(|w| home.starts_with(w))
        {
            for file in STARTUP_FILES.iter().map(|f| home.join(f)) {
                if std::fs::symlink_metadata(&file).is_ok() {
                    policy.protected.push(file);
                } else {
                    absent.push(file);
                }
            }
        }
        policy.protected.sort();
        policy.protected.dedup();
        let guard = Guard {
            search: self.search.clone(),
            git_entries: git_entries.into_iter().collect(),
            absent,
        };
        Ok((policy, guard))
    }
}

impl Guard {
    /// Looks for protected names the call created, removes the ones that could run code
    /// outside the sandbox, and says what it removed. Blocks: it walks the writable roots.
    pub fn after(self) -> Vec<String> {
        let mut notes = Vec::new();
        let now = match find_git_entries(&self.search) {
            Ok(now) => now,
            Err(err) => return vec![format!("cannot check what the command created: {err}")],
        };
        for entry in now.iter().filter(|e| !self.git_entries.contains(*e)) {
            if let Some(why) = unsafe_git_entry(entry) {
                notes.push(remove(entry, &format!("a git directory that {why}")));
            }
        }
        for file in &self.absent {
            if std::fs::symlink_metadata(file).is_ok() {
                notes.push(remove(file, "a start-up file that shells or git run later"));
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

/// Every entry named `.git` below `roots`, without following symlinks or entering `.git`.
fn find_git_entries(roots: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut seen = 0usize;
    let mut stack: Vec<PathBuf> = roots.iter().filter(|r| r.is_dir()).cloned().collect();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(format!(
                    "the writable directories hold more than {MAX_ENTRIES} entries, too many to find their .git directories before each command; start the session in a smaller directory, or run the command with \"sandbox\": false"
                ));
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if entry.file_name() == ".git" {
                found.push(entry.path());
            } else if kind.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    Ok(found)
}

/// Why a `.git` entry the sandbox created could run code outside it, or `None` when it is a
/// plain repository as `git init` or `git clone` make it.
fn unsafe_git_entry(entry: &Path) -> Option<&'static str> {
    let meta = std::fs::symlink_metadata(entry).ok()?;
    if !meta.is_dir() {
        return Some("points elsewhere");
    }
    if ["commondir", "modules", "worktrees"]
        .iter()
        .any(|name| std::fs::symlink_metadata(entry.join(name)).is_ok())
    {
        return Some("shares or nests other git directories");
    }
    let hooks_ok = match std::fs::read_dir(entry.join("hooks")) {
        Ok(hooks) => hooks.flatten().all(|h| {
            h.file_name().to_string_lossy().ends_with(".sample")
                && h.file_type().is_ok_and(|t| t.is_file())
        }),
        Err(_) => true,
    };
    if !hooks_ok {
        return Some("has hooks");
    }
    match std::fs::symlink_metadata(entry.join("config")) {
        Ok(m) if !m.is_file() => Some("has an unusual config"),
        Ok(_) => {
            let text = crate::regular_file::read_text(&entry.join("config"), 64 * 1024)?;
            (!inert_config(&text)).then_some("configures commands")
        }
        Err(_) => None,
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
        let notes = guard.after();
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(root.join("plain/.git/config").exists());
        assert!(root.join("old/.git").exists());
        for gone in ["hooked/.git", "fsm/.git", "file/.git"] {
            assert!(!root.join(gone).exists(), "{gone}");
        }
    }
}
