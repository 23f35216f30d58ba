//! The wire protocol between the `agentd` daemon and its clients: wire types and the frame
//! codec. The default build does no I/O; the `local` feature adds what both ends of the local
//! socket share, the socket paths and async frame reading (module `local`).
//!
//! A client connects to the daemon's local socket, sends [`ClientFrame::Hello`], receives
//! [`ServerFrame::Welcome`], then sends requests that each get one reply with the same
//! [`RequestId`]. Events of subscribed sessions arrive in between.

#[macro_use]
mod names;

pub mod changes;
pub mod event;
pub mod extensions;
pub mod frame;
pub mod image;
#[cfg(feature = "local")]
pub mod local;
pub mod reply;
pub mod request;
pub mod run;
pub mod session;
pub mod status;
pub mod summary;
pub mod text;
pub mod usage;
pub mod work;

pub use changes::{ChangeKind, FileChange, RewindReport, RunDiff};
pub use event::{Event, SessionEvent};
pub use extensions::{CommandInfo, Extensions, HookInfo, SkillInfo};
pub use image::{ImageBytes, ImageRef, ImageUpload, MAX_MESSAGE_IMAGE_BYTES, MAX_MESSAGE_IMAGES};
pub use names::ParseNameError;
pub use reply::{ErrorCode, ErrorInfo, Reply, ServerFrame, Welcome};
pub use request::{ClientFrame, CreateSession, Hello, Request, RequestId};
pub use run::*;
pub use session::*;
pub use status::*;
pub use summary::{
    Activity, Group, PendingSummary, RunEnd, RunSummary, SessionSummary, summary_text,
};
pub use usage::{ModelUsage, UsageReport, UsageTotals};
pub use work::{PlanCount, PlanItem, PlanStatus, ShellEnd, ShellInfo};

/// The version of the wire protocol; bumped on every incompatible change.
pub const PROTOCOL_VERSION: u32 = 18;
