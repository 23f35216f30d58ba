//! Paths under the writable roots that run code later, outside the sandbox, without being git
//! directories: the `PATH` directories the user's shell looks programs up in (`.venv/bin`,
//! `~/.cargo/bin` when `~/.cargo` is writable), and configuration files of tools that run
//! commands they name (`~/.cargo/config.toml`, a `.cargo/config.toml` above the session
//! directory, `~/.npmrc`, pip's and git's global configuration). Those that exist are mounted
//! read-only; one a call creates is removed after it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Tools' configuration files (and directories) that name commands, relative to the home
/// directory.
pub(crate) const TOOL_CONFIGS: [&str; 13] = [
    ".cargo/config.toml",
    ".cargo/config",
    ".npmrc",
    ".yarnrc",
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    ".gitconfig",
    ".config/git/config",
    ".config/git/attributes",
    ".config/fish/config.fish",
    ".config/fish/conf.d",
    ".config/systemd/user",
    ".config/autostart",
];

/// Configuration files a tool reads from every directory above where it runs.
const ANCESTOR_CONFIGS: [&str; 2] = [".cargo/config.toml", ".cargo/config"];

/// The guarded paths of one call.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Guarded {
    /// Guarded paths that exist: mounted read-only.
    pub(crate) existing: Vec<PathBuf>,
    /// Guarded paths that do not exist yet: removed if a call creates them.
    pub(crate) missing: Vec<PathBuf>,
    /// `PATH` directories that are writable roots themselves, which cannot be made read-only
    /// without the root: programs a call adds or changes there lose their execute bits.
    pub(crate) roots_on_path: Vec<PathBuf>,
}

/// The guarded paths under `writable`.
pub(crate) fn find(
    writable: &[PathBuf],
    session_dir: &Path,
    home: Option<&Path>,
    path_var: Option<&str>,
) -> Guarded {
    let roots: Vec<PathBuf> = writable.iter().map(|w| real(w)).collect();
    let under = |p: &Path| {
        let p = real(p);
        roots.iter().any(|r| p.starts_with(r) && p != *r)
    };
    let mut guarded = Guarded::default();
    let mut candidates: Vec<PathBuf> = Vec::new();
    for dir in path_var.map(std::env::split_paths).into_iter().flatten() {
        // A relative entry depends on where the user types; it cannot be told here.
        if !dir.is_absolute() {
            continue;
        }
        if roots.contains(&real(&dir)) {
            guarded.roots_on_path.push(dir);
        } else {
            candidates.push(environment_root(&dir).unwrap_or(dir));
        }
    }
    if let Some(home) = home {
        candidates.extend(TOOL_CONFIGS.iter().map(|c| home.join(c)));
    }
    for ancestor in session_dir.ancestors().skip(1) {
        candidates.extend(ANCESTOR_CONFIGS.iter().map(|c| ancestor.join(c)));
    }
    for path in candidates {
        if !under(&path) {
            continue;
        }
        if std::fs::symlink_metadata(&path).is_ok() {
            guarded.existing.push(path);
        } else {
            guarded.missing.push(path);
        }
    }
    for list in [&mut guarded.existing, &mut guarded.missing] {
        list.sort();
        list.dedup();
    }
    guarded
}

/// The environment a `PATH` directory belongs to, whose libraries its programs load as they
/// start (a virtual environment's `site-packages` with its `.pth` files, a conda environment,
/// `node_modules`): the whole of it runs outside, not only `bin`.
fn environment_root(dir: &Path) -> Option<PathBuf> {
    let parent = dir.parent()?;
    let is_env = parent.join("pyvenv.cfg").is_file()
        || parent.join("conda-meta").is_dir()
        || (dir.file_name()? == ".bin" && parent.file_name()? == "node_modules");
    is_env.then(|| parent.to_path_buf())
}

/// The executable files directly in a directory, by name, with what they are on disk.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Executables(HashMap<OsString, (u64, i64, i64)>);

impl Executables {
    /// Looks at `dir` now.
    pub(crate) fn of(dir: &Path) -> Executables {
        let mut found = HashMap::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if let Ok(meta) = entry.metadata()
                && meta.is_file()
                && meta.permissions().mode() & 0o111 != 0
            {
                found.insert(
                    entry.file_name(),
                    (meta.ino(), meta.mtime(), meta.mtime_nsec()),
                );
            }
        }
        Executables(found)
    }

    /// Takes the execute bits from programs in `dir` that are new or changed since `self`,
    /// and says which.
    pub(crate) fn disarm_new(&self, dir: &Path) -> Vec<String> {
        let now = Executables::of(dir);
        let mut notes = Vec::new();
        for (name, id) in now.0 {
            if self.0.get(&name) == Some(&id) {
                continue;
            }
            let path = dir.join(&name);
            let disarmed = std::fs::symlink_metadata(&path).and_then(|m| {
                std::fs::set_permissions(
                    &path,
                    std::fs::Permissions::from_mode(m.permissions().mode() & !0o111),
                )
            });
            notes.push(match disarmed {
                Ok(()) => format!(
                    "[sandbox: the command wrote the program {} in a directory on PATH, where the user's shell would run it; it is no longer executable. Put programs elsewhere, or run the command with \"sandbox\": false (the user will be asked)]",
                    path.display()
                ),
                Err(err) => format!(
                    "[sandbox: the command wrote the program {} in a directory on PATH and it could not be made non-executable: {err}]",
                    path.display()
                ),
            });
        }
        notes
    }
}

fn real(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_directories_and_tool_configs_under_a_writable_root_are_guarded() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let project = home.join("project");
        std::fs::create_dir_all(project.join(".venv/bin")).unwrap();
        std::fs::write(project.join(".venv/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
        std::fs::write(home.join(".cargo/config.toml"), "").unwrap();
        let path_var = format!(
            "{}:{}:/usr/bin:{}:rel",
            project.join(".venv/bin").display(),
            home.join(".cargo/bin").display(),
            project.display()
        );
        let writable = [project.clone(), home.join(".cargo")];
        let guarded = find(&writable, &project, Some(&home), Some(&path_var));
        assert_eq!(
            guarded.existing,
            [
                home.join(".cargo/bin"),
                home.join(".cargo/config.toml"),
                project.join(".venv")
            ]
        );
        assert_eq!(guarded.missing, [home.join(".cargo/config")]);
        assert_eq!(guarded.roots_on_path, std::slice::from_ref(&project));
        // A program written in a root that is on PATH loses its execute bits.
        let before = Executables::of(&project);
        let tool = project.join("ls");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(before.disarm_new(&project).len(), 1);
        let mode = std::fs::metadata(&tool).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0);
    }
}
