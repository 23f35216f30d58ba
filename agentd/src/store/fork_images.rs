//! A fork's images: the copy gets the source's stored images, so its history still shows them
//! to the model (docs/architecture.md#images).

use std::path::Path;

use crate::images::{Format, is_hash};

/// The directory of a session's stored images.
const IMAGES: &str = "images";

/// Gives the session in `to` every image stored for the session in `from`: a hard link (the
/// files are written once and never changed), or a copy where links cannot be made. With
/// `sync`, the new directory is synced so that the links survive a power loss.
pub(super) fn copy_images(from: &Path, to: &Path, sync: bool) -> Result<(), String> {
    let source = from.join(IMAGES);
    let entries = match std::fs::read_dir(&source) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(failed(&source, &err)),
    };
    let target = to.join(IMAGES);
    std::fs::create_dir_all(&target).map_err(|err| failed(&target, &err))?;
    for entry in entries {
        let entry = entry.map_err(|err| failed(&source, &err))?;
        let name = entry.file_name();
        // Stored images only: `<hash>.<ext>` regular files (no temporary file, no link).
        let stored = name.to_str().is_some_and(is_stored_name);
        let regular = entry.file_type().is_ok_and(|kind| kind.is_file());
        if !stored || !regular {
            continue;
        }
        let (from_file, to_file) = (entry.path(), target.join(&name));
        if std::fs::hard_link(&from_file, &to_file).is_err() && !to_file.exists() {
            std::fs::copy(&from_file, &to_file).map_err(|err| failed(&to_file, &err))?;
        }
    }
    if sync {
        super::sync_dir(&target).map_err(|err| err.to_string())?;
    }
    Ok(())
}

/// Whether `name` is a stored image's file name: its hash and its format's extension.
fn is_stored_name(name: &str) -> bool {
    name.split_once('.').is_some_and(|(hash, extension)| {
        is_hash(hash) && Format::from_extension(extension).is_some()
    })
}

/// The message for a failure at `path`.
fn failed(path: &Path, err: &std::io::Error) -> String {
    format!(
        "the fork's images could not be copied ({}: {err}): check the disk and try again",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_gets_the_stored_images_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(from.join(IMAGES)).unwrap();
        let stored = format!("{}.png", "ab".repeat(32));
        std::fs::write(from.join(IMAGES).join(&stored), b"png bytes").unwrap();
        std::fs::write(from.join(IMAGES).join(".tmpXYZ"), b"half").unwrap();
        let odd = format!("{}.jpeg", "ab".repeat(32));
        std::fs::write(from.join(IMAGES).join(odd), b"not stored so").unwrap();
        std::fs::create_dir_all(&to).unwrap();
        copy_images(&from, &to, true).unwrap();
        let names: Vec<_> = std::fs::read_dir(to.join(IMAGES))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec![stored.clone()]);
        assert_eq!(
            std::fs::read(to.join(IMAGES).join(&stored)).unwrap(),
            b"png bytes"
        );
        // Deleting the source keeps the copy's image.
        std::fs::remove_dir_all(&from).unwrap();
        assert!(to.join(IMAGES).join(&stored).is_file());
    }

    #[test]
    fn a_session_without_images_forks_without_an_images_directory() {
        let dir = tempfile::tempdir().unwrap();
        copy_images(dir.path(), &dir.path().join("b"), true).unwrap();
        assert!(!dir.path().join("b").join(IMAGES).exists());
    }
}
