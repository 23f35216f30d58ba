//! The file `python -m NAME` runs. Python looks for the module first in the directory it runs
//! in (the session directory, where a command may have just written `NAME.py`), then in its
//! own and the system's library directories. A deny rule cannot see into that file any more
//! than into a script, so the same rule applies: it must be found, and found unchanged.

use std::path::{Path, PathBuf};

use super::shell::Word;

/// The module `python -m` is given in `args`, if any (`-m NAME` or `-mNAME`).
pub(crate) fn module_of<'a>(name: &str, args: &'a [Word]) -> Option<&'a str> {
    if !name.starts_with("python") && !name.starts_with("pypy") {
        return None;
    }
    let mut texts = args.iter().map(Word::text);
    while let Some(arg) = texts.next() {
        if arg == "-m" {
            return texts.next();
        }
        if let Some(module) = arg.strip_prefix("-m") {
            return Some(module);
        }
        if !arg.starts_with('-') || arg == "--" {
            return None;
        }
    }
    None
}

/// Where Python would find the top package of `module`, looking in `cwd` first, then next to
/// the interpreter (`interpreter`, resolved: a virtual environment's own packages) and in the
/// system's library directories; `None` when it is nowhere to be found.
pub(crate) fn locate_module(
    module: &str,
    cwd: &Path,
    interpreter: Option<&Path>,
) -> Option<PathBuf> {
    let top = module.split('.').next().filter(|t| !t.is_empty())?;
    let mut dirs = vec![cwd.to_path_buf()];
    let prefixes = interpreter
        .and_then(|i| i.parent()?.parent().map(Path::to_path_buf))
        .into_iter()
        .chain(["/usr", "/usr/local"].map(PathBuf::from));
    for prefix in prefixes {
        dirs.extend(library_dirs(&prefix.join("lib")));
    }
    dirs.push(PathBuf::from("/usr/lib/python3/dist-packages"));
    dirs.iter().find_map(|dir| {
        let package = dir.join(top);
        // A compiled `top.pyc` beside the sources is loaded as it is.
        let candidates = [
            dir.join(format!("{top}.py")),
            dir.join(format!("{top}.pyc")),
            package.join("__init__.py"),
            package.join("__main__.py"),
        ];
        candidates
            .into_iter()
            .find(|c| c.is_file())
            .or_else(|| package.is_dir().then_some(package))
            .or_else(|| extension(dir, top))
    })
}

/// `lib/python3.X` and its `site-packages` and `dist-packages` under `lib`.
fn library_dirs(lib: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(lib).into_iter().flatten().flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("python") {
            let dir = entry.path();
            found.push(dir.join("site-packages"));
            found.push(dir.join("dist-packages"));
            found.push(dir);
        }
    }
    found
}

/// A compiled module `top.*.so` in `dir`.
fn extension(dir: &Path, top: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        (name.starts_with(&format!("{top}.")) && name.ends_with(".so")).then(|| entry.path())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_in_the_session_directory_is_found_there_first() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("json.py"), "import os\n").unwrap();
        let found = locate_module("json.tool", dir.path(), None).unwrap();
        assert_eq!(found, dir.path().join("json.py"));
        assert_eq!(
            locate_module("zz_no_such_module_zz", dir.path(), None),
            None
        );
        let args: Vec<Word> = ["-u", "-m", "zapmod"]
            .iter()
            .map(|s| Word::Literal(s.to_string()))
            .collect();
        assert_eq!(module_of("python3", &args), Some("zapmod"));
        assert_eq!(module_of("bash", &args), None);
    }
}
