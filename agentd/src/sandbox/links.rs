//! Hard links into protected places. A read-only mount protects a path, not a file: a file of
//! `.git` that has a second name in the writable tree (`ln .git/config cfg`) is written through
//! that name, and git then runs what was written outside the sandbox. Before each call every
//! such file is given a copy of its own (the link is broken); a symlink inside a git directory
//! that leads into the writable tree has its target protected too.

use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What a look through the protected paths found and did.
#[derive(Debug, Default)]
pub(crate) struct Unlinked {
    /// Notes for the call's result: the links that were broken.
    pub(crate) notes: Vec<String>,
    /// Targets of symlinks inside git directories, to protect as well.
    pub(crate) link_targets: Vec<PathBuf>,
}

/// Breaks every hard link of a file in `protected` (a git directory is looked through whole,
/// but for its content-addressed `objects`, which `git clone --local` links on purpose; other
/// directories, such as `PATH` directories, one level deep). `Err` when a link cannot be
/// broken, or when there are more than `limit` entries: the call must not run then.
pub(crate) fn break_links(
    git_dirs: &[PathBuf],
    others: &[PathBuf],
    limit: usize,
) -> Result<Unlinked, String> {
    let mut found = Unlinked::default();
    let mut seen = 0usize;
    for (root, deep) in git_dirs
        .iter()
        .map(|p| (p, true))
        .chain(others.iter().map(|p| (p, false)))
    {
        let Ok(meta) = std::fs::symlink_metadata(root) else {
            continue;
        };
        if !meta.is_dir() {
            if meta.is_file() && meta.nlink() > 1 {
                found.notes.push(unlink(root)?);
            }
            continue;
        }
        let mut stack = vec![(root.clone(), 0usize)];
        while let Some((dir, depth)) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > limit {
                    return Err(format!(
                        "the protected directories hold more than {limit} entries, too many to check for hard links before each command; run it with \"sandbox\": false"
                    ));
                }
                let path = entry.path();
                let Ok(meta) = std::fs::symlink_metadata(&path) else {
                    continue;
                };
                if meta.is_dir() {
                    let objects = deep && depth == 0 && entry.file_name() == "objects";
                    if deep && !objects {
                        stack.push((path, depth + 1));
                    }
                } else if meta.is_file() && meta.nlink() > 1 {
                    found.notes.push(unlink(&path)?);
                } else if deep
                    && meta.file_type().is_symlink()
                    && let Ok(target) = path.canonicalize()
                {
                    found.link_targets.push(target);
                }
            }
        }
    }
    Ok(found)
}

/// Gives `path` a copy of its own, so that its other names no longer reach it.
fn unlink(path: &Path) -> Result<String, String> {
    let fail = |e: std::io::Error| {
        format!(
            "{} has another name (a hard link) through which a command could change it, and the link could not be broken: {e}; the command was not run",
            path.display()
        )
    };
    let meta = std::fs::symlink_metadata(path).map_err(fail)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let copy = path.with_file_name(format!(".{name}.agentd-unlink-{}", std::process::id()));
    let result = (|| {
        let mut from = std::fs::File::options()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)?;
        let mut to = std::fs::File::options()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o600)
            .open(&copy)?;
        std::io::copy(&mut from, &mut to)?;
        to.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
        std::fs::rename(&copy, path)
    })();
    if let Err(err) = result {
        let _ = std::fs::remove_file(&copy);
        return Err(fail(err));
    }
    Ok(format!(
        "[sandbox: {} had another name (a hard link); it was given a copy of its own so that writes through the other name no longer reach it]",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_file_in_a_git_directory_gets_a_copy_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("objects/ab")).unwrap();
        std::fs::write(git.join("config"), "[core]\n").unwrap();
        std::fs::hard_link(git.join("config"), dir.path().join("cfg")).unwrap();
        std::fs::write(git.join("objects/ab/cd"), "blob").unwrap();
        std::fs::hard_link(git.join("objects/ab/cd"), dir.path().join("obj")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("hooks2"), git.join("hooks")).unwrap();
        std::fs::create_dir(dir.path().join("hooks2")).unwrap();
        let found = break_links(std::slice::from_ref(&git), &[], 1000).unwrap();
        assert_eq!(found.notes.len(), 1, "{:?}", found.notes);
        std::fs::write(dir.path().join("cfg"), "[core]\n\tfsmonitor = x\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(git.join("config")).unwrap(),
            "[core]\n"
        );
        assert_eq!(
            std::fs::metadata(git.join("objects/ab/cd"))
                .unwrap()
                .nlink(),
            2
        );
        assert_eq!(
            found.link_targets,
            [dir.path().join("hooks2").canonicalize().unwrap()]
        );
        assert!(break_links(&[git], &[], 2).is_err(), "past the limit");
    }
}
