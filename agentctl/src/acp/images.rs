//! An editor's image blocks (base64 in the prompt) as the images of a message, and a stored
//! image as an image block again when a session's history is replayed to the editor
//! (docs/architecture.md#images).

use agent_client_protocol::v1::schema::{ContentBlock, ImageContent};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use protocol::{ImageRef, ImageUpload, MAX_MESSAGE_IMAGE_BYTES, MAX_MESSAGE_IMAGES};

/// The images of a prompt's image blocks, decoded; refused (with what to do) when they are
/// more or larger than one message carries, or not base64 images. The length of the base64
/// text is checked before anything is decoded.
pub fn uploads(blocks: &[ContentBlock]) -> Result<Vec<ImageUpload>, String> {
    let images: Vec<&ImageContent> = blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Image(image) => Some(image),
            _ => None,
        })
        .collect();
    if images.len() > MAX_MESSAGE_IMAGES {
        return Err(format!(
            "the prompt has {} images; a message carries at most {MAX_MESSAGE_IMAGES}: send the \
             rest in another prompt",
            images.len()
        ));
    }
    // Base64 is 4 characters for every 3 bytes: a longer text cannot fit once decoded.
    let encoded: usize = images.iter().map(|image| image.data.len()).sum();
    if encoded > MAX_MESSAGE_IMAGE_BYTES.div_ceil(3) * 4 + 4 * images.len() {
        return Err(too_large(encoded / 4 * 3));
    }
    let mut uploads = Vec::with_capacity(images.len());
    let mut total = 0;
    for (n, image) in images.into_iter().enumerate() {
        let name = image.uri.clone().unwrap_or_else(|| {
            format!(
                "pasted-{}.{}",
                n + 1,
                crate::images::extension(&image.mime_type)
            )
        });
        if !image.mime_type.starts_with("image/") {
            return Err(format!(
                "{name} is `{}`, not an image: attach PNG, JPEG, GIF or WebP images",
                image.mime_type
            ));
        }
        let data = STANDARD.decode(image.data.trim()).map_err(|e| {
            format!(
                "the image {name} is not valid base64 ({e}): attach the image again; if \
                 this editor keeps sending it so, report it to the editor's makers"
            )
        })?;
        total += data.len();
        if total > MAX_MESSAGE_IMAGE_BYTES {
            return Err(too_large(total));
        }
        uploads.push(ImageUpload { name, data });
    }
    Ok(uploads)
}

/// The refusal of images too large together.
fn too_large(size: usize) -> String {
    format!(
        "the prompt's images come to {}; a message carries at most {} of images: send fewer or \
         smaller ones",
        crate::format::bytes(size as u64),
        crate::format::bytes(MAX_MESSAGE_IMAGE_BYTES as u64)
    )
}

/// An image of the history as an image block: its stored bytes in base64, its type, and the
/// uri the editor sent it with (a path named on a command line is no uri, and is left out).
pub fn block(image: &ImageRef, data: &[u8]) -> ContentBlock {
    let uri = image.name.contains("://").then(|| image.name.clone());
    ContentBlock::Image(ImageContent::new(STANDARD.encode(data), image.media_type.clone()).uri(uri))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image_block(data: &str, mime: &str) -> ContentBlock {
        ContentBlock::Image(ImageContent::new(data, mime))
    }

    #[test]
    fn image_blocks_are_decoded_and_named() {
        let blocks = vec![
            ContentBlock::from("look"),
            image_block(&STANDARD.encode([1u8, 2, 3]), "image/png"),
        ];
        let uploads = uploads(&blocks).unwrap();
        assert_eq!(uploads.len(), 1);
        assert_eq!(uploads[0].data, vec![1, 2, 3]);
        assert_eq!(uploads[0].name, "pasted-1.png");
    }

    #[test]
    fn too_many_too_large_or_broken_images_are_refused() {
        let one = image_block(&STANDARD.encode([1u8]), "image/png");
        let many = vec![one.clone(); MAX_MESSAGE_IMAGES + 1];
        assert!(uploads(&many).unwrap_err().contains("at most"));
        let big = "A".repeat(MAX_MESSAGE_IMAGE_BYTES / 3 * 4 + 400);
        assert!(
            uploads(&[image_block(&big, "image/png")])
                .unwrap_err()
                .contains("at most")
        );
        assert!(
            uploads(&[image_block("not base64!", "image/png")])
                .unwrap_err()
                .contains("base64")
        );
        assert!(
            uploads(&[image_block("AAAA", "text/plain")])
                .unwrap_err()
                .contains("not an image")
        );
    }
}
