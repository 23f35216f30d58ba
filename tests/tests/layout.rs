//! The shape of the code a newcomer relies on: no module imports one that imports it back, no
//! source file over 500 lines (tests aside), and a protocol crate of wire types only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// The crates' source directories.
const SOURCES: [&str; 3] = ["protocol/src", "agentd/src", "agentctl/src"];

type Module = Vec<String>;

/// Every `.rs` file under `dir`, by module path (`mod.rs`, `lib.rs` and `main.rs` name their
/// directory's module).
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: Module = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            found.insert(module, path);
        }
    }
    found
}

/// The text before the file's tests.
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |at| &text[..at])
}

/// The paths a file names after `crate::`, braces of a `use` unfolded one level.
fn crate_paths(text: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find("};").unwrap_or(group.len());
            for item in group[..end].split(',') {
                let item = item.trim().trim_start_matches('{');
                let path: String = item.chars().take_while(|&c| ident(c)).collect();
                paths.push(path);
            }
        } else {
            paths.push(rest.chars().take_while(|&c| ident(c)).collect());
        }
    }
    paths
        .into_iter()
        .map(|p| {
            p.split("::")
                .filter(|s| !s.is_empty() && *s != "self")
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// Module → the modules it imports (by the longest module prefix of each path; a parent's
/// re-export does not count).
fn imports(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mods = modules(src);
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, file) in &mods {
        let text = std::fs::read_to_string(file).unwrap();
        for path in crate_paths(without_tests(&text)) {
            let target = (1..=path.len())
                .rev()
                .map(|k| path[..k].to_vec())
                .find(|prefix| mods.contains_key(prefix));
            if let Some(target) = target {
                let parent = target.len() < module.len() && module.starts_with(&target);
                if &target != module && !parent {
                    edges.entry(module.clone()).or_default().insert(target);
                }
            }
        }
    }
    edges
}

/// Every module `from` reaches.
fn reach(edges: &BTreeMap<Module, BTreeSet<Module>>, from: &Module) -> BTreeSet<Module> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.clone()];
    while let Some(next) = todo.pop() {
        for target in edges.get(&next).into_iter().flatten() {
            if seen.insert(target.clone()) {
                todo.push(target.clone());
            }
        }
    }
    seen
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let mut circles = Vec::new();
    for src in SOURCES {
        let edges = imports(&root().join(src));
        for (module, targets) in &edges {
            for target in targets {
                if module < target && reach(&edges, target).contains(module) {
                    circles.push(format!(
                        "{src}: {} <-> {}",
                        module.join("::"),
                        target.join("::")
                    ));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_checker_sees_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(dir.path().join("a.rs"), "use crate::b::B;\npub struct A;\n").unwrap();
    std::fs::write(
        dir.path().join("b.rs"),
        "use crate::{a::A, c};\npub struct B;\n",
    )
    .unwrap();
    let edges = imports(dir.path());
    let a = vec!["a".to_string()];
    assert!(reach(&edges, &a).contains(&a));
}

#[test]
fn no_source_file_is_over_500_lines() {
    let mut long = Vec::new();
    for src in SOURCES {
        for file in modules(&root().join(src)).values() {
            let text = std::fs::read_to_string(file).unwrap();
            let lines = without_tests(&text).lines().count();
            if lines > 500 {
                long.push(format!("{} ({lines} lines)", file.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these by concept:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_protocol_crate_holds_wire_types_only() {
    let manifest = std::fs::read_to_string(root().join("protocol/Cargo.toml")).unwrap();
    let dependencies = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .unwrap_or_default();
    for line in dependencies.lines().filter(|l| !l.trim().is_empty()) {
        let name = line.split(['.', '=', ' ']).next().unwrap_or_default();
        assert!(
            ["serde", "bincode", "thiserror"].contains(&name),
            "protocol depends on {name}: it holds wire types and the frame codec only"
        );
    }
}
