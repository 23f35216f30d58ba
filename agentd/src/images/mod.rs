//! Images in the conversation (docs/architecture.md#images): checked, scaled to what every
//! provider takes, stored once per session by content hash next to its log, and loaded again
//! only for the model call that sends them.

mod budget;
pub(crate) mod capability;
mod data;
mod error;
mod files;
mod fit;
mod format;
mod gif_blocks;
mod jpeg_markers;
mod metadata;
mod png_chunks;
mod slots;
mod store;
mod whole;

pub(crate) use budget::newest_within_budget;
pub(crate) use data::{ImageData, images_of};
pub(crate) use error::ImageError;
pub(crate) use format::Format;
pub(crate) use store::{ImageStore, is_hash};

/// Where a tool call stores the images it gives the model (`read` of an image), or why the
/// run's model may not be given any.
pub(crate) type ImageAccess = Result<ImageStore, String>;

#[cfg(test)]
mod tests;
