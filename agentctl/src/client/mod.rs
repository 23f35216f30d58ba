//! The client side of the daemon's socket: where it is ([`paths`]), whether it and the process
//! behind it can be trusted ([`trust`]), frames over it ([`frames`]; these two live in the
//! protocol crate, shared with the daemon, and are re-exported here), a connection
//! ([`connection`]) over the socket ([`socket`]) or any byte stream, reaching the daemon again
//! after it went away ([`reconnect`]), the sessions a front end follows ([`follower`]), the one event feed every front end follows ([`feed`])
//! and the board's feed of every session's summary ([`summaries`]). What the far end sends is
//! not trusted: only frames asked for are held, and only so many ([`unread`]); its text is
//! shown, never obeyed ([`far_text`]); text where a handshake should be is told apart
//! ([`first_bytes`]).

pub mod connection;
pub mod far_text;
pub mod feed;
pub mod first_bytes;
pub mod follower;
pub mod incoming;
pub mod reconnect;
pub mod socket;
pub mod summaries;
pub mod tame;
pub mod trust;
pub mod unread;

pub use protocol::local::{frames, paths};

pub use connection::{Client, ClientError};
pub use far_text::{one_line, printable};
pub use feed::{Closed, Feed, FeedItem, Flow, View};
pub use follower::{Follower, PendingAsk, Refollowed};
pub use incoming::Incoming;
pub use reconnect::{GaveUp, Lost, Reconnect, Unreachable};
pub use summaries::{Changes, Summaries};
pub use unread::{Events, Overflow};
