//! The bytes of the images a model call sends, base64-encoded once per call.

use std::collections::HashMap;

use protocol::ImageRef;

use crate::conversation::Message;

/// The images of one model call's history, by hash, as base64 text.
#[derive(Debug, Default)]
pub(crate) struct ImageData {
    by_hash: HashMap<String, String>,
}

impl ImageData {
    /// No images: every image of the history is sent as its label.
    pub(crate) fn none() -> ImageData {
        ImageData::default()
    }

    /// The base64 text of `image`, if it was loaded.
    pub(crate) fn base64(&self, image: &ImageRef) -> Option<&str> {
        self.by_hash.get(&image.hash).map(String::as_str)
    }

    /// `image` as a `data:` URL, if it was loaded.
    pub(crate) fn data_url(&self, image: &ImageRef) -> Option<String> {
        self.base64(image)
            .map(|data| format!("data:{};base64,{data}", image.media_type))
    }

    /// Adds the base64 text of `image`.
    pub(crate) fn insert(&mut self, image: &ImageRef, base64: String) {
        self.by_hash.insert(image.hash.clone(), base64);
    }
}

/// Every image `history` refers to, in order, each once.
pub(crate) fn images_of(history: &[Message]) -> Vec<&ImageRef> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for message in history {
        let images: &[ImageRef] = match message {
            Message::User { images, .. } => images,
            Message::ToolResults { results } => {
                for result in results {
                    for image in &result.images {
                        if seen.insert(&image.hash) {
                            out.push(image);
                        }
                    }
                }
                continue;
            }
            _ => continue,
        };
        for image in images {
            if seen.insert(&image.hash) {
                out.push(image);
            }
        }
    }
    out
}
