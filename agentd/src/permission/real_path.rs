//! Paths resolved as the kernel resolves them to write: what the rules compare.

use std::path::{Path, PathBuf};

/// `path` resolved as the kernel would to write it: every symlink followed, a dangling one
/// too (writing through it creates its target), `..` taken after the link it follows, so a
/// link inside the session directory pointing outside of it does not count as inside.
pub(crate) fn real_path(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut resolved = PathBuf::from("/");
    let mut pending: Vec<std::ffi::OsString> = path
        .components()
        .rev()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    let mut hops = 0;
    while let Some(part) = pending.pop() {
        if part == ".." {
            resolved.pop();
            continue;
        }
        let next = resolved.join(&part);
        match std::fs::read_link(&next) {
            Ok(link) if hops < 40 => {
                hops += 1;
                if link.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                pending.extend(link.components().rev().filter_map(|c| match c {
                    Component::Normal(p) => Some(p.to_os_string()),
                    Component::ParentDir => Some("..".into()),
                    _ => None,
                }));
            }
            _ => resolved = next,
        }
    }
    resolved
}
