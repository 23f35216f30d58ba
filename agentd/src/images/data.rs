//! The bytes of the images a model call sends, read once per call and base64-encoded only into
//! the request's body (docs/architecture.md#images).

use std::collections::HashMap;

use protocol::ImageRef;

use crate::conversation::Message;

/// One loaded image: its media type and its stored bytes.
#[derive(Debug)]
struct Loaded {
    /// The media type of its format (`image/png`, ...).
    media_type: &'static str,
    /// The stored file's bytes.
    bytes: Vec<u8>,
}

/// The images of one model call's history, by hash, as their stored bytes. A request sends
/// each image once: the first part that names it carries it, later ones its label.
#[derive(Debug, Default)]
pub(crate) struct ImageData {
    /// The loaded images by hash.
    by_hash: HashMap<String, Loaded>,
    /// The images the request being built carries already.
    sent: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl ImageData {
    /// No images: every image of the history is sent as its label.
    pub(crate) fn none() -> ImageData {
        ImageData::default()
    }

    /// Whether the bytes of `image` were loaded.
    pub(crate) fn has(&self, image: &ImageRef) -> bool {
        self.by_hash.contains_key(&image.hash)
    }

    /// A request's body is about to be built: no image is in it yet.
    pub(crate) fn new_request(&self) {
        self.sent_lock().clear();
    }

    /// Whether `image` goes in the request being built as itself: loaded, and not in it
    /// already (a later part gets its label).
    pub(crate) fn take(&self, image: &ImageRef) -> bool {
        self.has(image) && self.sent_lock().insert(image.hash.clone())
    }

    /// The images of the request being built.
    fn sent_lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.sent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The media type and bytes of the image with `hash`, if it was loaded.
    pub(crate) fn get(&self, hash: &str) -> Option<(&'static str, &[u8])> {
        self.by_hash
            .get(hash)
            .map(|loaded| (loaded.media_type, loaded.bytes.as_slice()))
    }

    /// Adds the stored `bytes` of `image`, whose format's media type is `media_type`.
    pub(crate) fn insert(&mut self, image: &ImageRef, media_type: &'static str, bytes: Vec<u8>) {
        self.by_hash
            .insert(image.hash.clone(), Loaded { media_type, bytes });
    }
}

/// Every image `history` refers to, in order, each once.
pub(crate) fn images_of(history: &[Message]) -> Vec<&ImageRef> {
    let mut seen = std::collections::HashSet::new();
    history
        .iter()
        .flat_map(Message::images)
        .filter(|image| seen.insert(&image.hash))
        .collect()
}
