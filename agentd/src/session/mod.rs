//! Sessions: the actor that owns one session, and its event log.

pub mod actor;
pub mod events;

pub use actor::{SessionActor, SessionArgs};
