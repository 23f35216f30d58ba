//! `[sandbox] writable` entries that hold a directory of `PATH`: a command in auto mode could
//! plant a program there that the user later runs by name, outside any sandbox. `agentctl
//! config check` warns of them; it is not an error, as those directories stay read-only in the
//! sandbox.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

/// Only `[sandbox] writable` of the file, each entry with where it is written.
#[derive(Deserialize, Default)]
#[serde(default)]
struct WritableOnly {
    sandbox: SandboxWritable,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SandboxWritable {
    writable: Vec<toml::Spanned<PathBuf>>,
}

/// A warning for every `[sandbox] writable` entry of `text` (the file `file`) that is, or holds,
/// a directory of `path_var` (the `PATH` of whoever checks). `~` is `home`; relative entries
/// are relative to each session's directory, so they cannot be judged here and are skipped.
pub fn writable_path_warnings(
    text: &str,
    file: &Path,
    home: Option<&Path>,
    path_var: Option<&OsStr>,
) -> Vec<String> {
    // A file that does not parse is reported as an error elsewhere.
    let Ok(parsed) = toml::from_str::<WritableOnly>(text) else {
        return Vec::new();
    };
    let on_path: Vec<PathBuf> = path_var
        .map(|var| {
            std::env::split_paths(var)
                .filter(|dir| dir.is_absolute())
                .collect()
        })
        .unwrap_or_default();
    let mut warnings = Vec::new();
    for entry in &parsed.sandbox.writable {
        let Some(root) = expand(entry.get_ref(), home) else {
            continue;
        };
        let held: Vec<String> = on_path
            .iter()
            .filter(|dir| holds(&root, dir))
            .map(|dir| dir.display().to_string())
            .collect();
        if held.is_empty() {
            continue;
        }
        let line = super::line_of(text, entry.span().start);
        warnings.push(format!(
            "{}:{line}: [sandbox] writable `{}` holds {} on PATH: commands in auto mode could plant programs there that you would later run by name; those PATH directories stay read-only in the sandbox",
            file.display(),
            entry.get_ref().display(),
            held.join(", "),
        ));
    }
    warnings
}

/// The absolute path an entry names, `~` being `home`; `None` for a relative entry.
fn expand(entry: &Path, home: Option<&Path>) -> Option<PathBuf> {
    match entry.strip_prefix("~") {
        Ok(rest) => home.map(|home| normal(&home.join(rest))),
        Err(_) if entry.is_absolute() => Some(normal(entry)),
        Err(_) => None,
    }
}

/// Whether the writable `root` is `dir` or one of its parents, as written or once links are
/// followed (a link to the PATH directory is as writable).
fn holds(root: &Path, dir: &Path) -> bool {
    if normal(dir).starts_with(root) {
        return true;
    }
    match (root.canonicalize(), dir.canonicalize()) {
        (Ok(root), Ok(dir)) => dir.starts_with(root),
        _ => false,
    }
}

/// `path` without `.` and with `..` applied, as the words say (no links followed).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warnings(text: &str, path: &str) -> Vec<String> {
        writable_path_warnings(
            text,
            Path::new("/c/config.toml"),
            Some(Path::new("/home/u")),
            Some(OsStr::new(path)),
        )
    }

    #[test]
    fn a_writable_home_entry_that_holds_a_path_directory_is_named_with_its_line() {
        let text = "model = \"m\"\n[sandbox]\nwritable = [\"/data\", \"~/.cargo\"]\n";
        let found = warnings(text, "/usr/bin:/home/u/.cargo/bin");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("/c/config.toml:3: "), "{}", found[0]);
        assert!(
            found[0].contains("`~/.cargo` holds /home/u/.cargo/bin"),
            "{}",
            found[0]
        );
    }

    #[test]
    fn an_entry_equal_to_a_path_directory_is_named() {
        let found = warnings(
            "[sandbox]\nwritable = [\"/opt/tools/bin/\"]\n",
            "/opt/tools/bin",
        );
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn entries_beside_or_below_path_directories_and_relative_ones_are_fine() {
        let text = "[sandbox]\nwritable = [\"/usr/bin/cache\", \"/home/u/.cargo-x\", \"bin\"]\n";
        let found = warnings(text, "/usr/bin:/home/u/.cargo:bin");
        assert!(found.is_empty(), "{found:?}");
    }
}
