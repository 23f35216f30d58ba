//! A file's project root for a server: the nearest directory holding one of the server's
//! markers, walking up from the file, never above the top of the session directory's
//! repository (or the filesystem root when it is in none).

use std::path::{Path, PathBuf};

/// The root `file` belongs to for a server with `markers`, in a session working in `cwd`.
/// Without a marker: the repository top, else `cwd` when the file is under it, else the file's
/// directory.
pub(crate) fn find_root(file: &Path, cwd: &Path, markers: &[String]) -> PathBuf {
    let top = repository_top(cwd);
    let start = file.parent().unwrap_or(file);
    for dir in start.ancestors() {
        if markers.iter().any(|m| dir.join(m).exists()) {
            return dir.to_path_buf();
        }
        if top.as_deref() == Some(dir) {
            break;
        }
    }
    match top {
        Some(top) if file.starts_with(&top) => top,
        _ if file.starts_with(cwd) => cwd.to_path_buf(),
        _ => start.to_path_buf(),
    }
}

/// The top of the repository `dir` is in: the nearest directory with a `.git`.
fn repository_top(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_marker_wins_and_the_walk_stops_at_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let pkg = repo.join("pkg/sub");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(dir.path().join("pyproject.toml"), "").unwrap();
        let markers = vec!["pyproject.toml".to_string()];
        // The marker above the repository is not used.
        assert_eq!(find_root(&pkg.join("m.py"), &repo, &markers), repo);
        std::fs::write(repo.join("pkg/pyproject.toml"), "").unwrap();
        assert_eq!(
            find_root(&pkg.join("m.py"), &repo, &markers),
            repo.join("pkg")
        );
    }
}
