//! A session's stored images: `<session>/images/<hash>.<ext>`, each written once, by the
//! SHA-256 of its stored bytes, and read back only as the regular file holding those bytes
//! (docs/architecture.md#images).

use std::io::Write;
use std::path::{Path, PathBuf};

use protocol::{ImageRef, ImageUpload, MAX_MESSAGE_IMAGE_BYTES, MAX_MESSAGE_IMAGES};
use sha2::{Digest, Sha256};

use super::data::ImageData;
use super::error::ImageError;
use super::files::{self, Unread};
use super::fit::{FIT_BYTES, fit, stored_size};
use super::format::Format;
use super::slots;

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
    /// provider takes, and stores it (once: the same bytes are stored once; anything else
    /// under its name, a link or other bytes, is replaced). Blocking: it decodes the image.
    pub(crate) fn put(&self, name: &str, data: &[u8]) -> Result<ImageRef, ImageError> {
        let shown = shown_name(name);
        let fitted = fit(&shown, data)?;
        let bytes = fitted.reencoded.as_deref().unwrap_or(data);
        let hash = hex(&Sha256::digest(bytes));
        self.write_once(&file_name(&hash, fitted.format), bytes)
            .map_err(|source| ImageError::Io {
                name: shown.clone(),
                dir: self.dir.clone(),
                source,
            })?;
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

    /// [`ImageStore::put`] on a blocking thread, once as many of the daemon's decode slots are
    /// free as the image claims megapixels ([`slots::weight`]).
    pub(crate) async fn put_async(
        &self,
        name: String,
        data: Vec<u8>,
    ) -> Result<ImageRef, ImageError> {
        let _slots = slots::acquire(slots::weight(&data)).await?;
        let store = self.clone();
        tokio::task::spawn_blocking(move || store.put(&name, &data))
            .await
            .map_err(|err| ImageError::Interrupted(format!("storing the image failed ({err})")))?
    }

    /// The stored image with `hash` and its bytes (refused for anything but a hash this
    /// store holds as a regular file with those bytes). Its size is read from its header, with
    /// a few megabytes at most, holding one of the daemon's decode slots.
    pub(crate) async fn get(&self, hash: &str) -> Result<(ImageRef, Vec<u8>), ImageError> {
        if !is_hash(hash) {
            return Err(ImageError::NotAHash {
                hash: hash.chars().take(80).collect(),
            });
        }
        let _slot = slots::acquire(1).await?;
        let store = self.clone();
        let hash = hash.to_owned();
        tokio::task::spawn_blocking(move || store.get_blocking(&hash))
            .await
            .map_err(|err| ImageError::Interrupted(format!("reading the image failed ({err})")))?
    }

    /// [`ImageStore::get`] on the calling thread, `hash` already checked.
    fn get_blocking(&self, hash: &str) -> Result<(ImageRef, Vec<u8>), ImageError> {
        let unsound = |name: &str, why: String| ImageError::Unsound {
            path: if name.is_empty() {
                self.dir.clone()
            } else {
                self.dir.join(name)
            },
            why,
        };
        let refused = |name: &str, unread| match unread {
            Unread::Missing => ImageError::NotFound {
                hash: hash.to_owned(),
            },
            Unread::Unsound(why) => unsound(name, why),
        };
        let dir = files::open_dir(&self.dir).map_err(|unread| refused("", unread))?;
        let mut found = None;
        for format in Format::ALL {
            let name = file_name(hash, format);
            match files::read_in(&dir, &name, MAX_STORED_BYTES) {
                Ok(bytes) => {
                    found = Some((format, name, bytes));
                    break;
                }
                Err(Unread::Missing) => {}
                Err(unread) => return Err(refused(&name, unread)),
            }
        }
        let (format, name, bytes) = found.ok_or_else(|| refused("", Unread::Missing))?;
        if hex(&Sha256::digest(&bytes)) != hash {
            return Err(unsound(
                &name,
                "a file whose bytes do not match its name".into(),
            ));
        }
        let (width, height) = stored_size(format, &bytes).unwrap_or((0, 0));
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
    /// model call (encoded only into the request's body), never decoded; an image no longer
    /// here, or whose file is not the regular file holding its bytes, is left out (the call
    /// sends its label).
    pub(crate) async fn load(&self, images: Vec<ImageRef>) -> ImageData {
        if images.is_empty() {
            return ImageData::none();
        }
        let store = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut data = ImageData::none();
            let Ok(dir) = files::open_dir(&store.dir) else {
                return data;
            };
            for image in &images {
                let format = Format::from_media_type(&image.media_type);
                let Some(format) = format.filter(|_| is_hash(&image.hash)) else {
                    continue;
                };
                let name = file_name(&image.hash, format);
                match files::read_in(&dir, &name, MAX_STORED_BYTES) {
                    Ok(bytes) if hex(&Sha256::digest(&bytes)) == image.hash => {
                        data.insert(image, format.media_type(), bytes);
                    }
                    Err(Unread::Missing) => {}
                    Ok(_) | Err(Unread::Unsound(_)) => tracing::warn!(
                        "{} is not the image the daemon stored: its label is sent instead",
                        store.dir.join(&name).display()
                    ),
                }
            }
            data
        })
        .await
        .unwrap_or_default()
    }

    /// Stores `bytes` as `name` unless the directory holds them so already: anything else
    /// there (a symlink, a file with other bytes) is replaced. The directory itself must not be
    /// a symlink.
    fn write_once(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        if files::check_dir(&self.dir)?
            && files::open_dir(&self.dir).is_ok_and(|dir| files::holds(&dir, name, bytes))
        {
            return Ok(());
        }
        self.write(&self.dir.join(name), bytes)
    }

    /// Writes `bytes` to `path` whole or not at all (a temporary file renamed over whatever is
    /// there, a symlink itself and not what it points to), readable by the owner only, and
    /// durably.
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

/// The file name of the image with `hash` in `format`.
fn file_name(hash: &str, format: Format) -> String {
    format!("{hash}.{}", format.extension())
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
