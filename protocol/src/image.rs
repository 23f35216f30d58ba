//! Images in the conversation: what a client sends along with a message, and how the history
//! names an image once the daemon has stored it (docs/architecture.md#images).

use serde::{Deserialize, Serialize};

/// The most images one message may carry.
pub const MAX_MESSAGE_IMAGES: usize = 10;

/// The most bytes the image files of one message may hold together, as sent (they travel in
/// one frame with the message).
pub const MAX_MESSAGE_IMAGE_BYTES: usize = 12 * 1024 * 1024;

/// An image as a client sends it with a message: the file's bytes, unchanged.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageUpload {
    /// What the user named it by (a path, an editor's uri), for the views.
    pub name: String,
    /// The file's bytes: a PNG, JPEG, GIF or WebP image.
    pub data: Vec<u8>,
}

impl std::fmt::Debug for ImageUpload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageUpload")
            .field("name", &self.name)
            .field("bytes", &self.data.len())
            .finish()
    }
}

/// A stored image with its bytes (`Reply::Image`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageBytes {
    /// The image.
    pub image: ImageRef,
    /// Its bytes as stored.
    pub data: Vec<u8>,
}

impl std::fmt::Debug for ImageBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageBytes")
            .field("image", &self.image)
            .field("bytes", &self.data.len())
            .finish()
    }
}

/// An image of a session's history, as the daemon stored it: once per session, by the hash
/// of its bytes, next to the session's log. Events carry this, never the bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ImageRef {
    /// The SHA-256 of the stored bytes, 64 lowercase hex digits.
    pub hash: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// Bytes stored.
    pub size: u64,
    /// Width in pixels, as stored (after any scaling).
    pub width: u32,
    /// Height in pixels, as stored.
    pub height: u32,
    /// Where it came from: the path or uri the user named, or the file `read` read.
    pub name: String,
}

impl ImageRef {
    /// How the views show it: `[image: shot.png 1280×720]`.
    pub fn label(&self) -> String {
        let name = self.name.rsplit(['/', '\\']).next().unwrap_or(&self.name);
        let name = if name.is_empty() { "image" } else { name };
        format!("[image: {name} {}×{}]", self.width, self.height)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_names_the_file_and_its_size_in_pixels() {
        let image = ImageRef {
            hash: "0".repeat(64),
            media_type: "image/png".into(),
            size: 10,
            width: 1280,
            height: 720,
            name: "docs/shot.png".into(),
        };
        assert_eq!(image.label(), "[image: shot.png 1280×720]");
    }
}
