//! `@path` in a message: the file goes along with it, so the model need not read it first.
//! The file's text is appended after the message in a `<file path="…">` block, capped; the
//! views show a one-line note in its place. An image file (`@shot.png`) goes along as an image
//! instead, and the text keeps the word. A path with spaces is quoted (`@"my shot.png"`) or
//! has them escaped (`@my\ shot.png`, as dragging a file into a terminal types it); `~/` is the
//! home directory.

mod words;

pub use words::{escape, unescape, word_start};

use std::io::Read;
use std::path::{Path, PathBuf};

use protocol::ImageUpload;

/// The most of one file that is attached.
const MAX_FILE_BYTES: u64 = 100 * 1024;
/// The most files one message attaches.
const MAX_FILES: usize = 10;

/// Where the attached files begin in a message.
const OPEN: &str = "\n\n<file path=\"";

/// A message with the files its `@path` words name.
#[derive(Debug)]
pub struct Attached {
    /// The text, the text files' blocks appended.
    pub text: String,
    /// A note per file for the user.
    pub notes: Vec<String>,
    /// The image files, to send with the message.
    pub images: Vec<ImageUpload>,
}

/// `text` with the files its `@path` words name (relative to `cwd`, `~/` in `$HOME`) appended,
/// and a note per file for the user; image files (by their extension) go along as images. A
/// word that names no file is left as it is (an e-mail address, a handle); a file that cannot
/// be attached (binary, unreadable) is an error that says so.
pub fn attach(text: &str, cwd: &Path) -> Result<Attached, String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    attach_in(text, cwd, home.as_deref())
}

/// [`attach`] with `home` as the directory `~/` names.
fn attach_in(text: &str, cwd: &Path, home: Option<&Path>) -> Result<Attached, String> {
    let mut blocks = String::new();
    let mut notes: Vec<String> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut images: Vec<ImageUpload> = Vec::new();
    for named in words::mentioned(text) {
        let named = named.as_str();
        let path = resolve(named, cwd, home);
        if !path.is_file() || seen.contains(&path) {
            continue;
        }
        if seen.len() == MAX_FILES {
            return Err(format!(
                "a message attaches at most {MAX_FILES} files; mention fewer with @"
            ));
        }
        seen.push(path.clone());
        if let Some(real) = leads_out(named, &path, cwd) {
            return Err(format!(
                "@{named} is a link to {}, outside this directory; mention that file itself to attach it, or remove the @",
                real.display()
            ));
        }
        if crate::images::has_image_extension(named) {
            let image = crate::images::read(&path, named)
                .map_err(|e| format!("{e}; remove the @ to send the word as text"))?;
            notes.push(format!(
                "@{named} (image, {})",
                crate::format::bytes(image.data.len() as u64)
            ));
            images.push(image);
            continue;
        }
        let (content, total) = read_capped(&path)
            .map_err(|e| format!("cannot attach @{named}: {e}; remove the @ to send it as text"))?;
        let mut note = format!("@{named} ({})", crate::format::bytes(total));
        let mut body = content;
        if total > MAX_FILE_BYTES {
            let left = total - MAX_FILE_BYTES;
            body.push_str(&format!("\n[cut; {left} bytes left out]"));
            note.push_str(&format!(
                ", its first {} only",
                crate::format::bytes(MAX_FILE_BYTES)
            ));
        }
        blocks.push_str(&format!("{OPEN}{named}\">\n{body}\n</file>"));
        notes.push(note);
    }
    Ok(Attached {
        text: format!("{text}{blocks}"),
        notes,
        images,
    })
}

/// The file a mentioned path names: in `home` when it starts with `~/`, else relative to `cwd`
/// (an absolute path stays as it is).
pub fn resolve(named: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    match (named.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => cwd.join(named),
    }
}

/// The first [`MAX_FILE_BYTES`] of a text file, and its whole size.
/// Where `path` (mentioned as `named`, relative to `cwd`) really is, when a link takes it out of
/// `cwd`: a repository's `notes.txt` that is a link to `~/.ssh/id_ed25519` is not sent under its
/// harmless name. A file named outside `cwd` (an absolute path, `~/…`, `../…`) is the user's
/// own choice.
fn leads_out(named: &str, path: &Path, cwd: &Path) -> Option<PathBuf> {
    let relative = Path::new(named);
    if relative.is_absolute()
        || named.starts_with('~')
        || relative
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return None;
    }
    let real = path.canonicalize().ok()?;
    let top = cwd.canonicalize().ok()?;
    (!real.starts_with(&top)).then_some(real)
}

fn read_capped(path: &Path) -> Result<(String, u64), String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let total = file.metadata().map_err(|e| e.to_string())?.len();
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.contains(&0) {
        return Err("it is not a text file".to_string());
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    // A cut in the middle of a character shows as one replacement character at the end.
    if total > MAX_FILE_BYTES && text.ends_with('\u{fffd}') {
        text.pop();
    }
    Ok((text, total))
}

/// A message as the views show it: the text the user typed, and the paths of the files
/// attached to it.
pub fn collapse(text: &str) -> (&str, Vec<String>) {
    let Some(at) = text.find(OPEN) else {
        return (text, Vec::new());
    };
    let mut paths = Vec::new();
    let mut rest = &text[at..];
    while let Some(block) = rest.strip_prefix(OPEN) {
        let Some(end) = block.find("\">\n") else {
            break;
        };
        paths.push(block[..end].to_string());
        match block.find("\n</file>") {
            Some(close) => rest = &block[close + "\n</file>".len()..],
            None => break,
        }
    }
    (&text[..at], paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_out_of_the_directory_is_not_sent_under_its_name() {
        let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let key = outside.path().join("id_ed25519");
        std::fs::write(&key, "PRIVATE KEY").unwrap();
        std::os::unix::fs::symlink(&key, dir.path().join("notes.txt")).unwrap();
        let refused = attach("look at @notes.txt", dir.path()).err().unwrap();
        assert!(refused.contains("@notes.txt is a link to"), "{refused}");
        assert!(refused.contains("outside this directory"), "{refused}");
        // Named as what it is, it goes.
        let named = format!("look at @{}", key.display());
        assert!(
            attach(&named, dir.path())
                .unwrap()
                .text
                .contains("PRIVATE KEY")
        );
        // A link inside the directory is fine.
        std::fs::write(dir.path().join("real.md"), "inside").unwrap();
        std::os::unix::fs::symlink("real.md", dir.path().join("alias.md")).unwrap();
        assert!(
            attach("@alias.md", dir.path())
                .unwrap()
                .text
                .contains("inside")
        );
    }

    #[test]
    fn a_mentioned_file_goes_along_and_the_view_shows_its_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "remember the milk\n").unwrap();
        let Attached { text, notes, .. } = attach(
            "summarise @notes.txt, please; mail me@example.com",
            dir.path(),
        )
        .unwrap();
        assert!(text.contains("<file path=\"notes.txt\">\nremember the milk\n\n</file>"));
        assert_eq!(notes, vec!["@notes.txt (18 B)"]);
        let (typed, paths) = collapse(&text);
        assert_eq!(typed, "summarise @notes.txt, please; mail me@example.com");
        assert_eq!(paths, vec!["notes.txt"]);
    }

    #[test]
    fn a_binary_file_is_refused_and_a_large_one_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.bin"), [0u8, 1, 2]).unwrap();
        assert!(
            attach("@a.bin", dir.path())
                .unwrap_err()
                .contains("not a text file")
        );
        std::fs::write(dir.path().join("big.txt"), "x".repeat(300 * 1024)).unwrap();
        let Attached { text, notes, .. } = attach("@big.txt", dir.path()).unwrap();
        assert!(text.contains("bytes left out]"));
        assert!(notes[0].contains("first"), "{notes:?}");
    }

    #[test]
    fn a_mentioned_image_goes_along_as_an_image_and_the_text_keeps_the_word() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Shot.PNG"), [0x89, b'P', b'N', b'G']).unwrap();
        let attached = attach("look at @Shot.PNG.", dir.path()).unwrap();
        assert_eq!(attached.text, "look at @Shot.PNG.");
        assert_eq!(attached.images.len(), 1);
        assert_eq!(attached.images[0].name, "Shot.PNG");
        assert_eq!(attached.images[0].data, vec![0x89, b'P', b'N', b'G']);
        assert_eq!(attached.notes, vec!["@Shot.PNG (image, 4 B)"]);
    }

    #[test]
    fn paths_with_spaces_are_attached_quoted_or_escaped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("my notes.txt"), "milk\n").unwrap();
        let shot = "Screenshot 2026-12-05 at 10.00.00.png";
        std::fs::write(dir.path().join(shot), [0x89, b'P', b'N', b'G']).unwrap();
        for text in [
            r#"read @"my notes.txt" and @'Screenshot 2026-12-05 at 10.00.00.png'"#,
            r"read @my\ notes.txt and @Screenshot\ 2026-12-05\ at\ 10.00.00.png",
        ] {
            let attached = attach(text, dir.path()).unwrap();
            assert!(
                attached
                    .text
                    .ends_with("<file path=\"my notes.txt\">\nmilk\n\n</file>"),
                "{}",
                attached.text
            );
            assert_eq!(attached.images.len(), 1, "{text}");
            assert_eq!(attached.images[0].name, shot);
            assert_eq!(
                collapse(&attached.text),
                (text, vec!["my notes.txt".into()])
            );
        }
    }

    #[test]
    fn a_leading_tilde_is_the_home_directory() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("Desktop")).unwrap();
        std::fs::write(home.path().join("Desktop/todo.txt"), "eggs\n").unwrap();
        std::fs::write(home.path().join("Desktop/a b.png"), [1, 2]).unwrap();
        let attached = attach_in(
            r#"see @~/Desktop/todo.txt and @"~/Desktop/a b.png""#,
            cwd.path(),
            Some(home.path()),
        )
        .unwrap();
        assert!(
            attached
                .text
                .contains("<file path=\"~/Desktop/todo.txt\">\neggs\n"),
            "{}",
            attached.text
        );
        assert_eq!(attached.images[0].name, "~/Desktop/a b.png");
        assert_eq!(attached.images[0].data, vec![1, 2]);
        // Without a home, `~` is a directory like any other.
        let none = attach_in("see @~/Desktop/todo.txt", cwd.path(), None).unwrap();
        assert!(none.notes.is_empty());
    }
}
