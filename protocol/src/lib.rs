//! The wire protocol between the `agentd` daemon and its clients: frames, the handshake,
//! requests, replies and session events, plus a small async client.
//!
//! A client connects to the daemon's local socket, sends [`ClientFrame::Hello`], receives
//! [`ServerFrame::Welcome`], then sends requests that each get one reply with the same
//! [`RequestId`]. Events of subscribed sessions arrive in between.

pub mod changes;
pub mod client;
pub mod event;
pub mod frame;
pub mod paths;
pub mod request;
pub mod trust;
pub mod types;

pub use changes::{ChangeKind, FileChange, RewindReport, RunDiff};
pub use event::{ErrorCode, ErrorInfo, Event, Reply, ServerFrame, SessionEvent, Welcome};
pub use request::{ClientFrame, CreateSession, Hello, Request};
pub use types::*;
