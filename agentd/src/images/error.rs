//! Why an image cannot be attached or loaded.

use std::path::PathBuf;

use protocol::{MAX_MESSAGE_IMAGE_BYTES, MAX_MESSAGE_IMAGES};

/// Why an image cannot be attached, stored or read back; the message names the file and says
/// what to do (worded for the user: `read` words its own for the model).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ImageError {
    /// Its bytes are none of the four formats.
    #[error(
        "{name} is not a PNG, JPEG, GIF or WebP image (it looks like {looks_like}): attach an \
         image file"
    )]
    NotAnImage {
        /// The file's name.
        name: String,
        /// What its bytes look like ("text", "a PDF document", ...).
        looks_like: &'static str,
    },
    /// More pixels, or more memory to decode them, than an image may take.
    #[error(
        "{name} is {size}, more than an attached image may have ({limits}): scale it down \
         before attaching it"
    )]
    TooLarge {
        /// The file's name.
        name: String,
        /// Its size: "6000×9000 pixels", ...
        size: String,
        /// The limits it is over.
        limits: String,
    },
    /// A message with more images than it may carry.
    #[error(
        "a message carries at most {MAX_MESSAGE_IMAGES} images (this one has {count}): send the \
         rest in a follow-up"
    )]
    TooMany {
        /// The images of the message.
        count: usize,
    },
    /// A message whose images hold more bytes together than it may carry.
    #[error(
        "the images of a message hold at most {} MB together (these hold {:.1} MB): send some \
         in a follow-up, or smaller files",
        MAX_MESSAGE_IMAGE_BYTES >> 20,
        mib(*.total)
    )]
    TooManyBytes {
        /// Their bytes together.
        total: usize,
    },
    /// Its bytes do not decode.
    #[error(
        "{name} is a damaged or unsupported {kind} image ({detail}): attach an intact PNG, JPEG, \
         GIF or WebP file"
    )]
    Damaged {
        /// The file's name.
        name: String,
        /// The format its first bytes claim ("PNG", ...).
        kind: &'static str,
        /// The decoder's complaint.
        detail: String,
    },
    /// It decodes, but cannot be encoded small enough to store.
    #[error(
        "{name} could not be made smaller than {limit} bytes ({detail}): attach a smaller image"
    )]
    TooManyBytesEncoded {
        /// The file's name.
        name: String,
        /// The most bytes a stored image has.
        limit: usize,
        /// Why: the encoder's complaint, or how large it stayed.
        detail: String,
    },
    /// The file could not be written.
    #[error(
        "{name} could not be stored in {} ({source}): check that the disk has room and try again",
        .dir.display()
    )]
    Io {
        /// The file's name.
        name: String,
        /// The store's directory.
        dir: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// The work was cut short: the daemon is shutting down, or its task failed.
    #[error("{0}: try again")]
    Interrupted(String),
    /// Asked for something that is not a hash.
    #[error(
        "{hash:?} is not an image hash (64 lowercase hex digits): take the hash from the image's \
         ref in the session's history"
    )]
    NotAHash {
        /// What was asked for (its first characters).
        hash: String,
    },
    /// The stored file is not what the daemon wrote: a symlink, a FIFO, other bytes.
    #[error(
        "{} is {why}: the daemon did not store it so and does not read it; delete it (the image \
         shows as its label)",
        .path.display()
    )]
    Unsound {
        /// The file (or the store's directory).
        path: PathBuf,
        /// What it is.
        why: String,
    },
    /// Asked for a hash this store does not hold.
    #[error(
        "this session has no image {hash}: it was deleted with its session, or the hash is from \
         another session; list this session's images with `agentctl show ID --images DIR` (or \
         `--json`) and take the hash from there"
    )]
    NotFound {
        /// The hash asked for.
        hash: String,
    },
}

/// `bytes` in MiB.
fn mib(bytes: usize) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}
