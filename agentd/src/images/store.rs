//! A session's stored images: `<session>/images/<hash>.<ext>`, each written once, by the
//! SHA-256 of its stored bytes (docs/architecture.md#images).

use std::io::Write;
use std::path::{Path, PathBuf};

use protocol::{ImageRef, ImageUpload, MAX_MESSAGE_IMAGE_BYTES, MAX_MESSAGE_IMAGES};
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use super::data::ImageData;
use super::error::ImageError;
use super::fit::{FIT_BYTES, fit};
use super::format::Format;

/// Images decoded at once in the whole daemon: decoding takes a core and up to hundreds of
/// megabytes each.
static DECODES: Semaphore = Semaphore::const_new(2);

/// The longest name an image keeps (its end: the file name), in characters.
const MAX_NAME_CHARS: usize = 200;

/// The most bytes a stored file is read with: what [`fit`] stores, with room to spare.
const MAX_STORED_BYTES: usize = 2 * FIT_BYTES;

/// The images of one session.
#[derive(Debug, Clone)]
pub(crate) struct ImageStore {
    /// `<session>/images`.
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
        let shown = shown_name(name);
        let fitted = fit(&shown, data)?;
        let bytes = fitted.reencoded.as_deref().unwrap_or(data);
        let hash = hex(&Sha256::digest(bytes));
        let path = self.path(&hash, fitted.format);
        if !path.exists() {
            self.write(&path, bytes).map_err(|source| ImageError::Io {
                name: shown.clone(),
                dir: self.dir.clone(),
                source,
            })?;
        }
        Ok(ImageRef {
            hash,
            media_type: fitted.format.media_type().to_owned(),
            size: bytes.len() as u64,
            width: fitted.width,
            height: fitted.height,
            name: shown,
        })
    }

    /// Checks the caps of one message (count and bytes), then stores each of `uploads` as
    /// [`ImageStore::put`] does, off the async threads and a few at a time per daemon.
    pub(crate) async fn put_all(
        &self,
        uploads: Vec<ImageUpload>,
    ) -> Result<Vec<ImageRef>, ImageError> {
        if uploads.len() > MAX_MESSAGE_IMAGES {
            return Err(ImageError::TooMany {
                count: uploads.len(),
            });
        }
        let total: usize = uploads.iter().map(|u| u.data.len()).sum();
        if total > MAX_MESSAGE_IMAGE_BYTES {
            return Err(ImageError::TooManyBytes { total });
        }
        let mut refs = Vec::with_capacity(uploads.len());
        for upload in uploads {
            refs.push(self.put_async(upload.name, upload.data).await?);
        }
        Ok(refs)
    }

    /// [`ImageStore::put`] on a blocking thread, once one of the daemon's decode slots is free.
    pub(crate) async fn put_async(
        &self,
        name: String,
        data: Vec<u8>,
    ) -> Result<ImageRef, ImageError> {
        let _slot = DECODES
            .acquire()
            .await
            .map_err(|_| ImageError::Interrupted("the daemon is shutting down".into()))?;
        let store = self.clone();
        tokio::task::spawn_blocking(move || store.put(&name, &data))
            .await
            .map_err(|err| ImageError::Interrupted(format!("storing the image failed ({err})")))?
    }

    /// The stored image with `hash` and its bytes (refused for anything but a hash this
    /// store holds).
    pub(crate) async fn get(&self, hash: &str) -> Result<(ImageRef, Vec<u8>), ImageError> {
        if !is_hash(hash) {
            return Err(ImageError::NotAHash {
                hash: hash.chars().take(80).collect(),
            });
        }
        let store = self.clone();
        let hash = hash.to_owned();
        tokio::task::spawn_blocking(move || store.get_blocking(&hash))
            .await
            .map_err(|err| ImageError::Interrupted(format!("reading the image failed ({err})")))?
    }

    /// [`ImageStore::get`] on the calling thread, `hash` already checked.
    fn get_blocking(&self, hash: &str) -> Result<(ImageRef, Vec<u8>), ImageError> {
        let missing = || ImageError::NotFound {
            hash: hash.to_owned(),
        };
        let (format, path) = Format::ALL
            .into_iter()
            .map(|format| (format, self.path(hash, format)))
            .find(|(_, path)| path.is_file())
            .ok_or_else(missing)?;
        let bytes = read_stored(&path).ok_or_else(missing)?;
        let (width, height) =
            image::ImageReader::with_format(std::io::Cursor::new(&bytes), format.image_format())
                .into_dimensions()
                .unwrap_or((0, 0));
        let image = ImageRef {
            hash: hash.to_owned(),
            media_type: format.media_type().to_owned(),
            size: bytes.len() as u64,
            width,
            height,
            name: format!("{hash}.{}", format.extension()),
        };
        Ok((image, bytes))
    }

    /// The bytes of each of `images` this store holds, read off the async threads, for one
    /// model call (encoded only into the request's body); an image no longer here is left out
    /// (the call sends its label).
    pub(crate) async fn load(&self, images: Vec<ImageRef>) -> ImageData {
        if images.is_empty() {
            return ImageData::none();
        }
        let store = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut data = ImageData::none();
            for image in &images {
                let format = Format::from_media_type(&image.media_type);
                let Some(format) = format.filter(|_| is_hash(&image.hash)) else {
                    continue;
                };
                if let Some(bytes) = read_stored(&store.path(&image.hash, format)) {
                    data.insert(image, format.media_type(), bytes);
                }
            }
            data
        })
        .await
        .unwrap_or_default()
    }

    /// Where the image with `hash` in `format` is stored.
    fn path(&self, hash: &str, format: Format) -> PathBuf {
        self.dir.join(format!("{hash}.{}", format.extension()))
    }

    /// Writes `bytes` to `path` whole or not at all (a temporary file renamed), readable by
    /// the owner only, and durably.
    fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        // A temporary file is created with mode 0600.
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
        file.write_all(bytes)?;
        file.as_file().sync_all()?;
        file.persist(path).map_err(|err| err.error)?;
        // The message that names it is logged durably next: so is the file's name.
        std::fs::File::open(&self.dir)?.sync_all()
    }
}

/// The bytes of a stored file: a regular file, bounded; `None` when missing or unreadable.
fn read_stored(path: &Path) -> Option<Vec<u8>> {
    match crate::regular_file::read_at_most(path, MAX_STORED_BYTES) {
        Ok((bytes, false)) => Some(bytes),
        _ => None,
    }
}

/// Whether `hash` is 64 lowercase hex digits (so it names no other path): the one check of a
/// stored image's name.
pub(crate) fn is_hash(hash: &str) -> bool {
    hash.len() == 64
        && hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `bytes` as lowercase hex.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The name an image keeps: `name` with control characters replaced, cut to its last
/// [`MAX_NAME_CHARS`] characters (the file name is at the end); "image" when empty.
fn shown_name(name: &str) -> String {
    let clean: Vec<char> = name
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if clean.is_empty() {
        return "image".to_owned();
    }
    let skip = clean.len().saturating_sub(MAX_NAME_CHARS);
    let kept: String = clean.into_iter().skip(skip).collect();
    if skip > 0 { format!("…{kept}") } else { kept }
}
