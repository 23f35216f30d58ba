//! Markdown files with YAML front matter (agent definitions, skills, commands): the `---`
//! block at the top parsed with a maintained YAML parser, the rest kept as the body. The files
//! come from projects, so they are read as untrusted: regular files only, bounded in size.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// Why a file with front matter cannot be used; each says what to do about it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrontMatterError {
    /// The file's path cannot be followed to a file (it is gone, or a link leads nowhere).
    #[error("cannot read {}: {source}", path.display())]
    Unresolved {
        /// The file as found.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file cannot be opened or read, or is not a regular file.
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        /// The file as found.
        path: PathBuf,
        /// Why.
        source: crate::regular_file::OpenError,
    },
    /// A link that leads into the kernel's files (`/proc`, `/sys`, `/dev`), or out of the project
    /// that holds it.
    #[error("{} leads to {}, which is not a file of yours; it was skipped", path.display(), real.display())]
    NotYours {
        /// The file as found.
        path: PathBuf,
        /// Where it leads.
        real: PathBuf,
    },
    /// Over [`MAX_FILE_BYTES`].
    #[error("{} is over {} KiB; it was skipped", path.display(), MAX_FILE_BYTES / 1024)]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The YAML between the `---` lines does not parse into what the file is for.
    #[error("{}its front matter is not valid: {reason}", path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    Invalid {
        /// The file, when the text came from one.
        path: Option<PathBuf>,
        /// The parser's first line.
        reason: String,
    },
}

/// The most bytes of such a file that are read.
pub(crate) const MAX_FILE_BYTES: usize = 64 * 1024;

/// A file split into its front matter and its body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Document<T> {
    /// The front matter; the type's default when the file has none.
    pub(crate) head: T,
    /// What follows the front matter, trimmed.
    pub(crate) body: String,
}

/// Reads and parses the file at `path`; an error says what is wrong with it, for the user.
pub(crate) fn read<T: DeserializeOwned + Default>(
    path: &Path,
) -> Result<Document<T>, FrontMatterError> {
    // The kernel's files look regular but hold the daemon's secrets (`/proc/self/environ`):
    // a link that leads there is refused.
    let real = path
        .canonicalize()
        .map_err(|source| FrontMatterError::Unresolved {
            path: path.to_path_buf(),
            source,
        })?;
    // A project's file (under its `.agents` or `.claude`) is the project's own: a link that leads
    // out of the project (to a key file, say) is refused too.
    let project = path
        .ancestors()
        .find(|a| {
            a.file_name()
                .is_some_and(|n| n == ".agents" || n == ".claude")
        })
        .and_then(Path::parent)
        .and_then(|p| p.canonicalize().ok());
    if ["/proc", "/sys", "/dev"]
        .iter()
        .any(|p| real.starts_with(p))
        || project.is_some_and(|project| !real.starts_with(project))
    {
        return Err(FrontMatterError::NotYours {
            path: path.to_path_buf(),
            real,
        });
    }
    let (bytes, more) =
        crate::regular_file::read_at_most(&real, MAX_FILE_BYTES).map_err(|source| {
            FrontMatterError::Unreadable {
                path: path.to_path_buf(),
                source,
            }
        })?;
    if more {
        return Err(FrontMatterError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    parse(&String::from_utf8_lossy(&bytes)).map_err(|e| match e {
        FrontMatterError::Invalid { reason, .. } => FrontMatterError::Invalid {
            path: Some(path.to_path_buf()),
            reason,
        },
        other => other,
    })
}

/// The directories one kind of these files (`agents`, `skills`, `commands`) is read from, in
/// order of precedence: `.agents/KIND` and `.claude/KIND` in the session directory, the same at
/// its git root, then `KIND` in the user's config directory.
pub(crate) fn directories(cwd: &Path, config_dir: &Path, kind: &str) -> Vec<std::path::PathBuf> {
    let mut roots = vec![cwd.to_path_buf()];
    if let Some(root) = crate::prompt::git_root(cwd)
        && root != cwd
    {
        roots.push(root);
    }
    roots
        .into_iter()
        .flat_map(|root| {
            [
                root.join(".agents").join(kind),
                root.join(".claude").join(kind),
            ]
        })
        .chain([config_dir.join(kind)])
        .collect()
}

/// The `.md` files of `dir`, by name, at most `max` (a few times that many entries are looked
/// at); none when it is not a directory.
pub(crate) fn markdown_files(dir: &Path, max: usize) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<std::path::PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .take(max * 4)
        .collect();
    files.sort();
    files.truncate(max);
    files
}

/// Whether `name` may name an agent or a command: letters, digits, `-` and `_`, 64 at most.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Splits `text` and parses its front matter.
pub(crate) fn parse<T: DeserializeOwned + Default>(
    text: &str,
) -> Result<Document<T>, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some((yaml, body)) = split(text) else {
        return Ok(Document {
            head: T::default(),
            body: text.trim().to_string(),
        });
    };
    let head = if yaml.trim().is_empty() {
        T::default()
    } else {
        serde_saphyr::from_str(yaml).map_err(|e| FrontMatterError::Invalid {
            path: None,
            reason: e.to_string().lines().next().unwrap_or_default().to_string(),
        })?
    };
    Ok(Document {
        head,
        body: body.trim().to_string(),
    })
}

/// The YAML between a first line `---` and the next line `---`, and what follows.
fn split(text: &str) -> Option<(&str, &str)> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next()?;
    if first.trim_end() != "---" {
        return None;
    }
    let start = first.len();
    let mut at = start;
    for line in lines {
        if line.trim_end() == "---" {
            return Some((text.get(start..at)?, text.get(at + line.len()..)?));
        }
        at += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, serde::Deserialize, PartialEq)]
    struct Head {
        name: Option<String>,
        tools: Option<Vec<String>>,
    }

    #[test]
    fn front_matter_and_body_are_split() {
        let doc: Document<Head> =
            parse("---\nname: x\ntools: [read, grep]\n---\n\nBody\ntext\n").unwrap();
        assert_eq!(doc.head.name.as_deref(), Some("x"));
        assert_eq!(doc.head.tools.unwrap(), ["read", "grep"]);
        assert_eq!(doc.body, "Body\ntext");
        let none: Document<Head> = parse("Just text").unwrap();
        assert_eq!(none.head, Head::default());
        assert_eq!(none.body, "Just text");
        // An unclosed block is body, not YAML.
        let open: Document<Head> = parse("---\nname: x\n").unwrap();
        assert_eq!(open.head, Head::default());
    }

    #[test]
    fn bad_yaml_is_an_error_not_a_panic() {
        assert!(parse::<Head>("---\nname: [x\n---\n").is_err());
        assert!(parse::<Head>("---\nname: {a: 1}\n---\n").is_err());
        // An alias bomb stays within the parser's budget.
        let bomb = "---\na: &a [x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d]\n---\n";
        let _ = parse::<Head>(bomb);
    }
}
