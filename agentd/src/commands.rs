//! Slash commands (docs/architecture.md#skills-and-commands): `*.md` files in the project's
//! `.agents/commands/` and `.claude/commands/` and the user's `<config>/commands/`. A message
//! `/NAME ARGS` becomes the file's text with `$ARGUMENTS` (and `$1`…`$9`) replaced, for every
//! client alike: chat, `run`, an editor. Front matter `description` and `argument-hint` are listed
//! for completion.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The most commands read from one directory.
const MAX_COMMANDS: usize = 200;
/// The most bytes a command expands to (its arguments may be repeated many times).
pub(crate) const MAX_EXPANDED: usize = 256 * 1024;

/// One command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    /// Its name (the file's, without `.md`).
    pub(crate) name: String,
    /// What it does.
    pub(crate) description: String,
    /// What its arguments are, for completion.
    pub(crate) argument_hint: Option<String>,
    /// Its file.
    pub(crate) path: PathBuf,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Head {
    description: Option<String>,
    #[serde(rename = "argument-hint", alias = "argument_hint")]
    argument_hint: Option<String>,
}

/// The directories commands are read from, the project's first.
pub(crate) fn directories(cwd: &Path, config_dir: &Path) -> Vec<PathBuf> {
    crate::front_matter::directories(cwd, config_dir, "commands")
}

/// Every command in `dirs` (the first of a name wins), by name.
pub(crate) fn discover(dirs: &[PathBuf]) -> Vec<Command> {
    let mut found: Vec<Command> = Vec::new();
    for dir in dirs {
        for path in crate::front_matter::markdown_files(dir, MAX_COMMANDS) {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !crate::front_matter::valid_name(&name) || found.iter().any(|c| c.name == name) {
                continue;
            }
            let Ok(doc) = crate::front_matter::read::<Head>(&path) else {
                continue;
            };
            let description = doc
                .head
                .description
                .unwrap_or_else(|| doc.body.lines().next().unwrap_or_default().to_string());
            found.push(Command {
                name,
                description: description
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(300)
                    .collect(),
                argument_hint: doc
                    .head
                    .argument_hint
                    .map(|h| h.chars().filter(|c| !c.is_control()).take(100).collect()),
                path,
            });
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// `message` with a leading `/NAME ARGS` expanded, when NAME is a command in `dirs`; `None`
/// when the message is not a command (it is sent as it is); an error when the expansion would
/// be over [`MAX_EXPANDED`] bytes.
pub(crate) fn expand(message: &str, dirs: &[PathBuf]) -> Option<Result<String, String>> {
    let rest = message.trim_start().strip_prefix('/')?;
    let (name, args) = match rest.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (rest.trim_end(), ""),
    };
    if !crate::front_matter::valid_name(name) {
        return None;
    }
    let path = dirs
        .iter()
        .map(|dir| dir.join(format!("{name}.md")))
        .find(|p| p.is_file())?;
    let doc = crate::front_matter::read::<Head>(&path).ok()?;
    Some(substitute(&doc.body, args).ok_or_else(|| {
        format!(
            "the command /{name} with these arguments expands to more than {} KiB; give it shorter arguments",
            MAX_EXPANDED / 1024
        )
    }))
}

/// `body` with `$ARGUMENTS` replaced by `args` and `$1`…`$9` by its words; `None` when that
/// is over [`MAX_EXPANDED`] bytes.
fn substitute(body: &str, args: &str) -> Option<String> {
    let words: Vec<&str> = args.split_whitespace().collect();
    let mut out = String::with_capacity(body.len() + args.len());
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(rest.get(..at).unwrap_or_default());
        // `$` is one byte: what follows it starts a character.
        let after = rest.get(at + 1..).unwrap_or_default();
        if out.len() > MAX_EXPANDED {
            return None;
        }
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            rest = tail;
        } else if let Some(digit) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
            let n = digit as usize - '1' as usize;
            out.push_str(words.get(n).copied().unwrap_or_default());
            rest = after.get(1..).unwrap_or_default();
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    (out.len() <= MAX_EXPANDED).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_expands_with_its_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let commands = dir.path().join(".agents/commands");
        std::fs::create_dir_all(&commands).unwrap();
        std::fs::write(
            commands.join("greet.md"),
            "---\ndescription: Greets someone.\nargument-hint: NAME [TIMES]\n---\nSay hello to $1 ($ARGUMENTS), costs $5 or $x.\n",
        )
        .unwrap();
        let dirs = directories(dir.path(), &dir.path().join("cfg"));
        assert_eq!(
            expand("/greet world twice", &dirs).unwrap().unwrap(),
            "Say hello to world (world twice), costs  or $x."
        );
        // Arguments repeated without end are refused, not expanded.
        std::fs::write(commands.join("big.md"), "$1".repeat(30_000)).unwrap();
        let big = format!("/big {}", "A".repeat(8192));
        assert!(expand(&big, &dirs).unwrap().is_err());
        // A link to the kernel's files is not read.
        std::os::unix::fs::symlink("/proc/self/environ", commands.join("env.md")).unwrap();
        assert_eq!(expand("/env", &dirs), None);
        assert!(discover(&dirs).iter().all(|c| c.name != "env"));
        // Nor a project's link that leads out of the project (a key file, say).
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("id"), "PRIVATE KEY").unwrap();
        std::os::unix::fs::symlink(outside.path().join("id"), commands.join("key.md")).unwrap();
        assert_eq!(expand("/key", &dirs), None);
        assert!(discover(&dirs).iter().all(|c| c.name != "key"));
        assert_eq!(expand("/nope x", &dirs), None);
        assert_eq!(expand("not a command", &dirs), None);
        assert_eq!(expand("/../../etc/passwd", &dirs), None);
        let listed = discover(&dirs);
        let greet = listed.iter().find(|c| c.name == "greet").unwrap();
        assert_eq!(greet.description, "Greets someone.");
        assert_eq!(greet.argument_hint.as_deref(), Some("NAME [TIMES]"));
    }
}
