//! A session's own git worktree (docs/architecture.md#checkpoints-fork-and-worktrees): `--worktree`
//! puts the session on a new branch `agentd/<id>` from HEAD, checked out under
//! `<data>/worktrees/<id>`, so that parallel sessions on one repository never edit the same files.
//! Deleting the session removes a clean worktree (and its branch, when it holds nothing unmerged)
//! and keeps a dirty one.

use std::path::{Path, PathBuf};

use git2::{BranchType, Repository, StatusOptions, WorktreeAddOptions, WorktreePruneOptions};
use serde::{Deserialize, Serialize};

/// Where a session's worktree is, kept in its `meta.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    /// The main work tree of the repository.
    pub(crate) repo: String,
    /// The worktree's directory.
    pub(crate) path: String,
    /// The branch checked out in it.
    pub(crate) branch: String,
    /// The commit the branch started from.
    pub(crate) base: String,
    /// git's name for the worktree (its directory under `.git/worktrees/`).
    pub(crate) name: String,
    /// The repository's git directory (shared by its worktrees), as found at creation: never
    /// read back from the worktree's `.git` file, which the session's commands may rewrite.
    #[serde(default)]
    pub(crate) common_dir: String,
}

impl Worktree {
    /// What a sandboxed command of the session must write besides the worktree for `git add`
    /// and `git commit` on its branch: the shared object store, the branch's refs and logs, and
    /// the worktree's own directory in the repository. Not the hooks or the config, which
    /// commands run outside the sandbox would obey.
    pub(crate) fn sandbox_writable(&self) -> Vec<PathBuf> {
        if self.common_dir.is_empty() {
            return Vec::new();
        }
        let common = Path::new(&self.common_dir);
        [
            common.join("objects"),
            common.join("refs/heads/agentd"),
            common.join("logs/refs/heads/agentd"),
            common.join("worktrees").join(&self.name),
        ]
        .into_iter()
        .filter(|p| p.is_dir())
        .collect()
    }

    /// The files of the worktree's own git directory that stay read-only although the
    /// directory is writable: where it says its repository is, and its own config (made empty
    /// when missing, so that a command cannot create it).
    pub(crate) fn sandbox_protected(&self) -> Vec<PathBuf> {
        if self.common_dir.is_empty() {
            return Vec::new();
        }
        let admin = Path::new(&self.common_dir)
            .join("worktrees")
            .join(&self.name);
        let config = admin.join("config.worktree");
        if admin.is_dir() && std::fs::symlink_metadata(&config).is_err() {
            let _ = std::fs::write(&config, "");
        }
        ["commondir", "gitdir", "config.worktree"]
            .iter()
            .map(|f| admin.join(f))
            .filter(|p| p.exists())
            .collect()
    }
}

/// Creates the worktree of session `id` for the repository `cwd` is in. Returns it and the
/// session's directory in it (the same place relative to the repository's top as `cwd`).
pub(crate) fn create(
    cwd: &Path,
    worktrees_dir: &Path,
    id: &str,
) -> Result<(Worktree, PathBuf), String> {
    let repo = Repository::discover(cwd).map_err(|_| {
        format!(
            "{} is not in a git repository; --worktree needs one",
            cwd.display()
        )
    })?;
    let top = repo
        .workdir()
        .ok_or("the repository is bare; --worktree needs a work tree")?
        .canonicalize()
        .map_err(|e| e.to_string())?;
    let head = repo.head().and_then(|h| h.peel_to_commit()).map_err(|_| {
        "the repository has no commit yet; --worktree branches from HEAD".to_string()
    })?;
    let inside = cwd
        .strip_prefix(&top)
        .unwrap_or(Path::new(""))
        .to_path_buf();
    let branch_name = format!("agentd/{id}");
    let name = format!("agentd-{id}");
    let path = worktrees_dir.join(id);
    std::fs::create_dir_all(worktrees_dir)
        .map_err(|e| format!("{}: {e}", worktrees_dir.display()))?;
    let branch = repo
        .branch(&branch_name, &head, false)
        .map_err(|e| format!("cannot create branch {branch_name}: {}", e.message()))?;
    let reference = branch.into_reference();
    let mut options = WorktreeAddOptions::new();
    options.reference(Some(&reference));
    if let Err(err) = repo.worktree(&name, &path, Some(&options)) {
        if let Ok(mut branch) = repo.find_branch(&branch_name, BranchType::Local) {
            let _ = branch.delete();
        }
        return Err(format!("cannot add the worktree: {}", err.message()));
    }
    let session_dir = if inside.as_os_str().is_empty() {
        path.clone()
    } else {
        path.join(&inside)
    };
    std::fs::create_dir_all(&session_dir).map_err(|e| format!("{}: {e}", session_dir.display()))?;
    let common_dir = repo
        .commondir()
        .canonicalize()
        .unwrap_or_else(|_| repo.commondir().to_path_buf());
    let worktree = Worktree {
        common_dir: common_dir.to_string_lossy().into_owned(),
        repo: top.to_string_lossy().into_owned(),
        path: path.to_string_lossy().into_owned(),
        branch: branch_name,
        base: head.id().to_string(),
        name,
    };
    Ok((worktree, session_dir))
}

/// Removes the worktree if it has no uncommitted changes, and its branch if the branch holds
/// no commit that HEAD lacks. Returns what was kept and why, for the user.
pub(crate) fn remove(worktree: &Worktree) -> Vec<String> {
    let path = Path::new(&worktree.path);
    if path.exists() {
        match dirty(path, &worktree.branch) {
            Ok(false) => {
                if let Err(err) = std::fs::remove_dir_all(path) {
                    return vec![format!("worktree kept at {}: {err}", worktree.path)];
                }
            }
            Ok(true) => {
                return vec![format!(
                    "worktree kept at {} (branch {}): it has uncommitted changes, or is not on its branch",
                    worktree.path, worktree.branch
                )];
            }
            Err(err) => {
                return vec![format!(
                    "worktree kept at {}: its state cannot be read ({err})",
                    worktree.path
                )];
            }
        }
    }
    let Ok(repo) = Repository::open(&worktree.repo) else {
        return vec![format!(
            "the repository {} is gone; branch {} was not looked at",
            worktree.repo, worktree.branch
        )];
    };
    if let Ok(found) = repo.find_worktree(&worktree.name) {
        // The directory is gone already: libgit2 would find it through the worktree's own
        // git files, which the session could have pointed anywhere.
        let _ = found.prune(Some(
            WorktreePruneOptions::new().valid(true).working_tree(false),
        ));
    }
    match unmerged(&repo, worktree) {
        Ok(None) => Vec::new(),
        Ok(Some(note)) => vec![note],
        Err(err) => vec![format!(
            "branch {} kept: {}",
            worktree.branch,
            err.message()
        )],
    }
}

/// Whether the worktree has changes git would show (untracked files included, ignored ones
/// not).
fn dirty(path: &Path, branch: &str) -> Result<bool, String> {
    let repo = Repository::open(path).map_err(|e| e.message().to_string())?;
    // Commits made away from the branch (a detached HEAD) would be lost with the worktree.
    let on_branch = repo
        .head()
        .ok()
        .and_then(|head| {
            head.name()
                .ok()
                .map(|n| n == format!("refs/heads/{branch}"))
        })
        .unwrap_or(false);
    if !on_branch {
        return Ok(true);
    }
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(|e| e.message().to_string())?;
    Ok(!statuses.is_empty())
}

/// Deletes the branch when HEAD already has its commits; otherwise says why it stays.
fn unmerged(repo: &Repository, worktree: &Worktree) -> Result<Option<String>, git2::Error> {
    let mut branch = match repo.find_branch(&worktree.branch, BranchType::Local) {
        Ok(branch) => branch,
        Err(_) => return Ok(None),
    };
    let tip = branch.get().peel_to_commit()?.id();
    let head = repo.head().and_then(|h| h.peel_to_commit()).map(|c| c.id());
    let merged = tip.to_string() == worktree.base
        || head
            .is_ok_and(|head| head == tip || repo.graph_descendant_of(head, tip).unwrap_or(false));
    if merged {
        branch.delete()?;
        Ok(None)
    } else {
        Ok(Some(format!(
            "branch {} kept: it has commits HEAD does not (`git log HEAD..{}`)",
            worktree.branch, worktree.branch
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_with_commit(dir: &Path) {
        let repo = Repository::init(dir).unwrap();
        std::fs::write(dir.join("f.txt"), "one\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("f.txt")).unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
            .unwrap();
    }

    #[test]
    fn a_clean_worktree_and_its_branch_are_removed_and_a_dirty_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("repo");
        std::fs::create_dir(&main).unwrap();
        repo_with_commit(&main);
        let trees = dir.path().join("trees");
        let (clean, cwd) = create(&main.canonicalize().unwrap(), &trees, "aaaa").unwrap();
        assert_eq!(std::fs::read_to_string(cwd.join("f.txt")).unwrap(), "one\n");
        assert_eq!(clean.branch, "agentd/aaaa");
        assert!(remove(&clean).is_empty());
        assert!(!Path::new(&clean.path).exists());
        let repo = Repository::open(&main).unwrap();
        assert!(repo.find_branch("agentd/aaaa", BranchType::Local).is_err());

        let (messy, cwd) = create(&main.canonicalize().unwrap(), &trees, "bbbb").unwrap();
        std::fs::write(cwd.join("new.txt"), "x").unwrap();
        let notes = remove(&messy);
        assert!(notes[0].contains("uncommitted changes"), "{notes:?}");
        assert!(Path::new(&messy.path).join("new.txt").exists());
    }

    #[test]
    fn outside_a_repository_it_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let err = create(dir.path(), &dir.path().join("t"), "cccc").unwrap_err();
        assert!(err.contains("not in a git repository"), "{err}");
    }
}
