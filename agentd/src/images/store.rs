//! A session's stored images: `<session>/images/<hash>.<ext>`, each written once.

use std::path::{Path, PathBuf};

use protocol::{ImageRef, ImageUpload};

/// Why an image cannot be attached or loaded; the message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ImageError(pub(crate) String);

/// The images of one session.
#[derive(Debug, Clone)]
pub(crate) struct ImageStore {
    dir: PathBuf,
}

impl ImageStore {
    /// The store of the session whose directory is `session_dir`.
    pub(crate) fn new(session_dir: &Path) -> ImageStore {
        ImageStore {
            dir: session_dir.join("images"),
        }
    }

    /// Checks that `data` is a PNG, JPEG, GIF or WebP image, scales it down to what every
    /// provider takes, and stores it (once: the same bytes are stored once). Blocking: it
    /// decodes the image.
    pub(crate) fn put(&self, name: &str, data: &[u8]) -> Result<ImageRef, ImageError> {
        let _ = (name, data, &self.dir);
        Err(ImageError("images are not supported yet".into()))
    }

    /// Checks the caps of one message (count and bytes), then stores each of `uploads` as
    /// [`ImageStore::put`] does, off the async threads and a few at a time per daemon.
    pub(crate) async fn put_all(
        &self,
        uploads: Vec<ImageUpload>,
    ) -> Result<Vec<ImageRef>, ImageError> {
        let _ = uploads;
        Err(ImageError("images are not supported yet".into()))
    }

    /// The stored image with `hash` and its bytes (refused for anything but a hash this
    /// store holds).
    pub(crate) async fn get(&self, hash: &str) -> Result<(ImageRef, Vec<u8>), ImageError> {
        let _ = hash;
        Err(ImageError("images are not supported yet".into()))
    }

    /// The base64 text of each of `images` this store holds, read off the async threads, for
    /// one model call; an image no longer here is left out (the call sends its label).
    pub(crate) async fn load(&self, images: Vec<ImageRef>) -> crate::images::ImageData {
        let _ = images;
        crate::images::ImageData::none()
    }
}
