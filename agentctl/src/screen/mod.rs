//! How the terminal views draw: finished lines go to the terminal's history once, in order;
//! the unfinished line, what is under way and (in chat) the status and input lines live in a
//! bottom region redrawn whole at each change and on resize. `chat`, `attach` and `run` on a
//! terminal all draw through one [`Live`].

mod live;
mod region;
pub mod wrap;

pub use live::{Live, SharedLive};
