//! Why an image cannot be attached or loaded.

/// Why an image cannot be attached or loaded; the message names the file and says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ImageError(pub(crate) String);
