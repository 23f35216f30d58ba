//! Image files a message carries (`-i PATH`, `@shot.png`, an editor's image block): read
//! bounded and checked against the caps of one message before anything is sent; the daemon
//! checks that they are images and scales them (docs/architecture.md#images).

use std::io::Read;
use std::path::Path;

use protocol::{ImageUpload, MAX_MESSAGE_IMAGE_BYTES, MAX_MESSAGE_IMAGES};

/// The extensions a `@word` must end with to be attached as an image rather than as text.
const EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];

/// Whether `name` ends with an image extension (any case).
pub fn has_image_extension(name: &str) -> bool {
    Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// The media types of the images the daemon stores, and the extension of a file of each.
const MEDIA_TYPES: [(&str, &str); 4] = [
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
];

/// The file extension for an image of `media_type` (`image/jpeg`: `jpg`); `img` for a type
/// the daemon does not store.
pub fn extension(media_type: &str) -> &'static str {
    MEDIA_TYPES
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(media_type.trim()))
        .map_or("img", |(_, extension)| extension)
}

/// The file at `path` as an upload named `name` (the path as the user gave it); a file over the
/// cap of one message is refused without reading it whole.
pub fn read(path: &Path, name: &str) -> Result<ImageUpload, String> {
    let cannot = |e: std::io::Error| format!("cannot read the image {name}: {e}; check the path");
    let not_a_file = || {
        format!("the image {name} is not a file: give the path of a PNG, JPEG, GIF or WebP file")
    };
    // Looked at before it is opened: opening a FIFO would wait for a writer.
    if !std::fs::metadata(path).map_err(cannot)?.is_file() {
        return Err(not_a_file());
    }
    let file = std::fs::File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(not_a_file());
    }
    let cap = MAX_MESSAGE_IMAGE_BYTES as u64;
    if meta.len() > cap {
        return Err(too_large(name, meta.len()));
    }
    let mut data = Vec::new();
    file.take(cap + 1).read_to_end(&mut data).map_err(cannot)?;
    if data.len() as u64 > cap {
        return Err(too_large(name, data.len() as u64));
    }
    if data.is_empty() {
        return Err(format!(
            "the image {name} is empty (0 bytes): save the picture again, or attach another file"
        ));
    }
    Ok(ImageUpload {
        name: name.to_string(),
        data,
    })
}

/// The refusal of one image larger than a message may carry.
fn too_large(name: &str, size: u64) -> String {
    format!(
        "the image {name} is {}; a message carries at most {} of images: scale it down or crop it",
        crate::format::bytes(size),
        crate::format::bytes(MAX_MESSAGE_IMAGE_BYTES as u64)
    )
}

/// Refuses images that one message cannot carry: too many, or too large together (the last
/// one that does not fit is named).
pub fn check(images: &[ImageUpload]) -> Result<(), String> {
    if images.len() > MAX_MESSAGE_IMAGES {
        return Err(format!(
            "{} images: a message carries at most {MAX_MESSAGE_IMAGES}; send the rest in another \
             message",
            images.len()
        ));
    }
    let mut total = 0usize;
    for image in images {
        total += image.data.len();
        if total > MAX_MESSAGE_IMAGE_BYTES {
            return Err(format!(
                "with {} the images of this message come to {}; a message carries at most {} of \
                 images: send fewer or smaller ones",
                image.name,
                crate::format::bytes(total as u64),
                crate::format::bytes(MAX_MESSAGE_IMAGE_BYTES as u64)
            ));
        }
    }
    Ok(())
}

/// The bytes the images of a message hold together.
pub fn total_bytes(images: &[ImageUpload]) -> usize {
    images.iter().map(|i| i.data.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_extensions_are_recognised_in_any_case() {
        assert!(has_image_extension("shot.PNG"));
        assert!(has_image_extension("a/b.jpeg"));
        assert!(has_image_extension("x.webp"));
        assert!(!has_image_extension("notes.txt"));
        assert!(!has_image_extension("png"));
    }

    #[test]
    fn media_types_have_their_usual_extension() {
        assert_eq!(extension("image/png"), "png");
        assert_eq!(extension("IMAGE/JPEG"), "jpg");
        assert_eq!(extension("image/webp"), "webp");
        assert_eq!(extension("image/svg+xml"), "img");
        assert_eq!(extension("text/plain"), "img");
    }

    #[test]
    fn too_many_or_too_large_images_are_refused_with_the_file_named() {
        let image = |name: &str, len: usize| ImageUpload {
            name: name.into(),
            data: vec![1; len],
        };
        let many: Vec<_> = (0..=MAX_MESSAGE_IMAGES)
            .map(|_| image("a.png", 1))
            .collect();
        assert!(check(&many).unwrap_err().contains("at most"));
        let large = vec![
            image("a.png", MAX_MESSAGE_IMAGE_BYTES / 2),
            image("b.png", MAX_MESSAGE_IMAGE_BYTES / 2 + 1),
        ];
        assert!(check(&large).unwrap_err().contains("b.png"));
        assert!(check(&large[..1]).is_ok());
        let dir = tempfile::tempdir().unwrap();
        assert!(
            read(&dir.path().join("missing.png"), "missing.png")
                .unwrap_err()
                .contains("missing.png")
        );
    }
}
