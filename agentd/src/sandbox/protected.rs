//! Protected paths (docs/architecture.md#sandbox): what is written there runs later outside the
//! sandbox, so it stays read-only even inside a writable root, in the sandbox and for the `write`
//! and `edit` tools in every mode but `bypass`: every `.git` (directory or file) and what a `.git`
//! file or a `commondir` points at, the daemon's config, data and socket directories, and the dot
//! files of the home directory (shell start-up files, git's and other tools' configs,
//! `.local/bin`).

use std::path::{Path, PathBuf};

/// Where protected paths are for one session.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProtectedPaths {
    /// The daemon's directories (config, data, socket).
    pub(crate) daemon_dirs: Vec<PathBuf>,
    /// The home directory, whose dot files are protected.
    pub(crate) home: Option<PathBuf>,
    /// The session directory: a worktree session's own worktree lives under the daemon's data
    /// directory and stays writable.
    pub(crate) session_dir: PathBuf,
    /// `PATH` directories (with their environments) and tools' configuration inside the
    /// session directory or `[sandbox] writable` ([`super::guarded`]).
    pub(crate) guarded: Vec<PathBuf>,
}

impl ProtectedPaths {
    /// Why writing `path` (absolute, symlinks resolved) is refused, if it is.
    pub(crate) fn refusal(&self, path: &Path) -> Option<String> {
        if let Some(git) = git_part(path) {
            return Some(format!(
                "{} is inside the git directory {} (git would run what is written there outside the sandbox)",
                path.display(),
                git.display()
            ));
        }
        if let Some(target) = self.pointed_git_dir()
            && path.starts_with(&target)
        {
            return Some(format!(
                "{} is inside the git directory {} that the session's .git file points at",
                path.display(),
                target.display()
            ));
        }
        if let Some(guarded) = self.guarded.iter().find(|g| path.starts_with(g)) {
            return Some(format!(
                "{} is inside {}, a directory on PATH or a tool's configuration: what is written there runs outside the sandbox",
                path.display(),
                guarded.display()
            ));
        }
        let own = !self.session_dir.as_os_str().is_empty() && path.starts_with(&self.session_dir);
        if !own && let Some(dir) = self.daemon_dirs.iter().find(|d| path.starts_with(d)) {
            return Some(format!(
                "{} is inside agentd's own directory {}",
                path.display(),
                dir.display()
            ));
        }
        // A session working inside a dot directory of the home directory may write there.
        if let Some(home) = &self.home
            && let Some(first) = path
                .strip_prefix(home)
                .ok()
                .and_then(|r| r.components().next())
            && (first.as_os_str().as_encoded_bytes().starts_with(b".")
                || first.as_os_str() == "bin")
            && !self.session_dir.starts_with(home.join(first))
        {
            return Some(format!(
                "{} is a dot file or `bin` of the home directory, which shells, git and tools obey or run",
                home.join(first).display()
            ));
        }
        None
    }

    /// The git directory a `.git` file at the session directory names, if it is one.
    fn pointed_git_dir(&self) -> Option<PathBuf> {
        let dot_git = self.session_dir.join(".git");
        std::fs::symlink_metadata(&dot_git)
            .ok()
            .filter(|m| m.is_file())?;
        git_file_target(&dot_git)
    }
}

/// The home directory of a command environment (`HOME`), else the daemon's.
pub(crate) fn home_of(env: &[(String, String)]) -> Option<PathBuf> {
    env.iter()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| PathBuf::from(v))
        .filter(|h| h.is_absolute())
        .or_else(|| directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()))
}

/// The `.git` component of `path` and what precedes it, if it has one.
pub(crate) fn git_part(path: &Path) -> Option<PathBuf> {
    let mut prefix = PathBuf::new();
    for part in path.components() {
        prefix.push(part);
        if part.as_os_str() == ".git" {
            return Some(prefix);
        }
    }
    None
}

/// The directory a `.git` file (`gitdir: PATH`) names, resolved against the file's directory.
pub(crate) fn git_file_target(file: &Path) -> Option<PathBuf> {
    let text = crate::regular_file::read_text(file, 4096)?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    Some(file.parent()?.join(target))
}

/// The directory a git directory's `commondir` file names (worktrees), if it has one.
pub(crate) fn common_dir_of(git_dir: &Path) -> Option<PathBuf> {
    let text = crate::regular_file::read_text(&git_dir.join("commondir"), 4096)?;
    let target = text.lines().next()?.trim();
    (!target.is_empty()).then(|| git_dir.join(target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_directories_daemon_directories_and_startup_files_are_protected() {
        let paths = ProtectedPaths {
            daemon_dirs: vec!["/h/data".into(), "/h/config".into()],
            home: Some("/home/u".into()),
            session_dir: "/h/data/worktrees/s1".into(),
            guarded: vec!["/h/data/worktrees/s1/.venv".into()],
        };
        let refused = |p: &str| paths.refusal(Path::new(p)).is_some();
        assert!(refused("/p/.git/config"));
        assert!(refused("/p/sub/.git"));
        assert!(refused("/h/config/config.toml"));
        assert!(refused("/h/data/sessions/x/log.jsonl"));
        assert!(refused("/h/data/worktrees/s1/.git"));
        assert!(refused("/home/u/.bashrc"));
        assert!(refused("/home/u/.ssh/authorized_keys"));
        assert!(refused("/home/u/.local/bin/git"));
        assert!(refused("/home/u/bin/ls"));
        assert!(!refused("/h/data/worktrees/s1/src/main.rs"));
        assert!(refused(
            "/h/data/worktrees/s1/.venv/lib/site-packages/x.pth"
        ));
        assert!(!refused("/home/u/project/.bashrc"));
        assert!(!refused("/p/.gitignore"));
        assert!(!refused("/p/src/git/x"));
    }
}
