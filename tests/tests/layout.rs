//! The shape of the code a newcomer relies on: no module imports one that imports it back, no
//! source file over 500 lines (tests aside), and a protocol crate of wire types only.
//!
//! The import check follows every way a module names another: `crate::` paths, `super::` paths
//! (as many levels as written), `self::` paths and child-module paths (`children::Family` inside
//! the module that declares `mod children;`), `use` groups unfolded at any depth, in code and in
//! doc links alike. A module naming one of its own ancestors is not an import: it is part of it.
//! Test modules (`#[cfg(test)]` items and the files they declare) are left out.

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

/// Every `.rs` file under `src`, by module path (`mod.rs`, `lib.rs` and `main.rs` name their
/// directory's module), test modules left out.
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
    let tests: Vec<Module> = found
        .iter()
        .flat_map(|(module, file)| {
            let text = std::fs::read_to_string(file).unwrap();
            test_children(&text)
                .into_iter()
                .map(|child| [module.clone(), vec![child]].concat())
                .collect::<Vec<_>>()
        })
        .collect();
    found.retain(|module, _| !tests.iter().any(|t| module.starts_with(t)));
    found
}

/// The modules a file declares under `#[cfg(test)]` (`#[cfg(test)] mod tests;`).
fn test_children(text: &str) -> Vec<String> {
    let mut children = Vec::new();
    for (at, _) in text.match_indices("#[cfg(test)]") {
        let rest = text.get(at + "#[cfg(test)]".len()..).unwrap_or_default();
        let item = rest
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("#["))
            .unwrap_or_default();
        let item = item.strip_prefix("pub ").unwrap_or(item);
        if let Some(name) = item.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            children.push(name.trim().to_string());
        }
    }
    children
}

/// The text without its `#[cfg(test)]` items (an inline `mod tests { … }` is skipped to its
/// closing brace, a `mod tests;` declaration to its semicolon).
fn without_tests(text: &str) -> String {
    let mut kept = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(rest.get(..at).unwrap_or_default());
        let item = rest.get(at..).unwrap_or_default();
        let brace = item.find('{');
        let semi = item.find(';');
        let end = match (brace, semi) {
            (Some(b), Some(s)) if s < b => s + 1,
            (Some(b), _) => closing_brace(item, b).map_or(item.len(), |e| e + 1),
            (None, Some(s)) => s + 1,
            (None, None) => item.len(),
        };
        rest = item.get(end..).unwrap_or_default();
    }
    kept.push_str(rest);
    kept
}

/// Where the brace opened at `open` closes.
fn closing_brace(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices().skip_while(|(i, _)| *i < open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The source as identifiers and the punctuation of paths (`::`, `{`, `}`, `,`); anything
/// else becomes a break between paths.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
            continue;
        }
        if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
            continue;
        }
        if matches!(c, '{' | '}' | ',') {
            out.push(c.to_string());
        } else if !c.is_whitespace() && out.last().is_none_or(|t| t != ";") {
            out.push(";".into());
        }
        i += 1;
    }
    out
}

/// Reads the path starting at `tokens[*at]` (a `use` group unfolded at any depth) into `paths`,
/// each prefixed with `prefix`.
fn read_path(tokens: &[String], at: &mut usize, prefix: Vec<String>, paths: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        match tokens.get(*at).map(String::as_str) {
            Some("{") => {
                *at += 1;
                loop {
                    match tokens.get(*at).map(String::as_str) {
                        Some("}") => {
                            *at += 1;
                            return;
                        }
                        Some(",") => *at += 1,
                        Some(t) if is_ident(t) => read_path(tokens, at, path.clone(), paths),
                        None => return,
                        Some(_) => *at += 1,
                    }
                }
            }
            Some(t) if is_ident(t) => {
                path.push(t.to_string());
                *at += 1;
                if tokens.get(*at).map(String::as_str) == Some("::") {
                    *at += 1;
                    continue;
                }
                paths.push(path);
                return;
            }
            _ => {
                paths.push(path);
                return;
            }
        }
    }
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
}

/// Every path the text writes, as written (`crate::a::B`, `super::super::c`, `child::D`), a
/// group unfolded into one path per leaf.
fn written_paths(text: &str) -> Vec<Vec<String>> {
    let tokens = tokens(text);
    let mut paths = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        let starts = is_ident(&tokens[at])
            && tokens.get(at + 1).is_some_and(|t| t == "::")
            && (at == 0 || tokens[at - 1] != "::");
        if starts {
            read_path(&tokens, &mut at, Vec::new(), &mut paths);
        } else {
            at += 1;
        }
    }
    paths
}

/// Where a written path in `module` points, as a path from the crate root, or `None` for a
/// path outside the crate (another crate, a type's associated item).
fn resolve(module: &Module, path: &[String], mods: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    let first = path.first()?;
    let (mut base, rest) = match first.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (module.clone(), &path[1..]),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = module.get(..module.len().checked_sub(ups)?)?.to_vec();
            (base, &path[ups..])
        }
        child if mods.contains_key(&[module.clone(), vec![child.to_string()]].concat()) => {
            (module.clone(), path)
        }
        _ => return None,
    };
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(base)
}

/// Module → the modules it imports (by the longest module prefix of each path; naming an
/// ancestor does not count).
fn imports(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mods = modules(src);
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, file) in &mods {
        let text = std::fs::read_to_string(file).unwrap();
        for path in written_paths(&without_tests(&text)) {
            let Some(path) = resolve(module, &path, &mods) else {
                continue;
            };
            let target = (1..=path.len())
                .rev()
                .map(|k| path[..k].to_vec())
                .find(|prefix| mods.contains_key(prefix));
            if let Some(target) = target
                && !module.starts_with(&target)
            {
                edges.entry(module.clone()).or_default().insert(target);
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

/// Each import `a → b` where `b` leads back to `a`, as `a <-> b`.
fn circles(src: &Path) -> Vec<String> {
    let edges = imports(src);
    let mut found = Vec::new();
    for (module, targets) in &edges {
        for target in targets {
            if reach(&edges, target).contains(module) {
                found.push(format!("{} -> {}", module.join("::"), target.join("::")));
            }
        }
    }
    found
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let mut found = Vec::new();
    for src in SOURCES {
        found.extend(
            circles(&root().join(src))
                .into_iter()
                .map(|c| format!("{src}: {c}")),
        );
    }
    assert!(
        found.is_empty(),
        "imports that lead back to the importer (move the shared piece down):\n{}",
        found.join("\n")
    );
}

/// A crate in a temporary directory, from `(file, text)` pairs.
fn planted(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (file, text) in files {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn the_checker_sees_a_circle_through_crate_paths() {
    let dir = planted(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b.rs", "use crate::{a::A, c};\npub struct B;\n"),
    ]);
    assert_eq!(circles(dir.path()), ["a -> b", "b -> a"]);
}

#[test]
fn the_checker_sees_a_circle_through_super_paths() {
    let dir = planted(&[
        ("lib.rs", "mod m;\n"),
        ("m/mod.rs", "mod a;\nmod b;\n"),
        ("m/a.rs", "use super::b::B;\npub struct A;\n"),
        (
            "m/b.rs",
            "pub struct B;\nfn f() { super::super::m::a::A; }\n",
        ),
    ]);
    assert_eq!(circles(dir.path()), ["m::a -> m::b", "m::b -> m::a"]);
}

#[test]
fn the_checker_sees_a_circle_through_self_paths() {
    let dir = planted(&[
        ("lib.rs", "mod m;\nmod x;\n"),
        (
            "m/mod.rs",
            "mod a;\nuse self::{a::{A, self}};\npub struct T;\n",
        ),
        ("m/a.rs", "use crate::x::X;\npub struct A;\n"),
        ("x.rs", "use crate::m::T;\npub struct X;\n"),
    ]);
    assert_eq!(circles(dir.path()).len(), 3, "{:?}", circles(dir.path()));
}

#[test]
fn the_checker_sees_a_circle_through_child_paths() {
    let dir = planted(&[
        ("lib.rs", "mod m;\nmod x;\n"),
        ("m/mod.rs", "mod a;\npub struct T;\nfn f() { a::make(); }\n"),
        (
            "m/a.rs",
            "/// Made from [`crate::x::X`].\npub fn make() {}\n",
        ),
        ("x.rs", "pub struct X(crate::m::T);\n"),
    ]);
    assert_eq!(circles(dir.path()).len(), 3, "{:?}", circles(dir.path()));
}

#[test]
fn naming_an_ancestor_or_a_test_module_is_not_a_circle() {
    let dir = planted(&[
        ("lib.rs", "mod m;\n"),
        (
            "m/mod.rs",
            "mod a;\n#[cfg(test)]\nmod tests;\npub use a::A;\npub struct T;\n",
        ),
        ("m/a.rs", "use super::T;\npub struct A(crate::m::T);\n"),
        ("m/tests.rs", "use super::a::A;\n"),
    ]);
    assert!(circles(dir.path()).is_empty(), "{:?}", circles(dir.path()));
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

/// The protocol crate's default build holds the wire types and the frame codec only; what both
/// ends of the socket share beyond them (paths, async frame reading) is behind its `local`
/// feature, so those dependencies are optional and no feature is on by default.
#[test]
fn the_protocol_crate_holds_wire_types_only() {
    let manifest = std::fs::read_to_string(root().join("protocol/Cargo.toml")).unwrap();
    let section = |name: &str| {
        manifest
            .split(&format!("\n[{name}]"))
            .nth(1)
            .and_then(|rest| rest.split("\n[").next())
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    for line in section("dependencies") {
        let name = line.split(['.', '=', ' ']).next().unwrap_or_default();
        assert!(
            ["serde", "bincode", "thiserror"].contains(&name) || line.contains("optional = true"),
            "protocol's default build depends on {name}: it holds wire types and the frame codec only"
        );
    }
    assert!(
        !section("features").iter().any(|l| l.starts_with("default")),
        "protocol turns features on by default: its default build holds wire types only"
    );
}

/// GitHub's anchor of a markdown heading: lower case, spaces to hyphens, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn every_pointer_to_the_design_names_one_of_its_sections() {
    let design = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let anchors: BTreeSet<String> = design
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect();
    let mut files: Vec<PathBuf> = SOURCES
        .iter()
        .flat_map(|src| modules(&root().join(src)).into_values().collect::<Vec<_>>())
        .collect();
    files.push(root().join("README.md"));
    let mut broken = Vec::new();
    let mut seen = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (at, _) in text.match_indices("docs/architecture.md#") {
            let rest = text
                .get(at + "docs/architecture.md#".len()..)
                .unwrap_or_default();
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            seen += 1;
            if !anchors.contains(&name) {
                broken.push(format!("{}: #{name}", file.display()));
            }
        }
    }
    assert!(seen > 0, "the code points to its design somewhere");
    assert!(
        broken.is_empty(),
        "pointers to sections docs/architecture.md does not have:\n{}",
        broken.join("\n")
    );
    assert!(anchors.contains("the-agent-loop"), "{anchors:?}");
}
