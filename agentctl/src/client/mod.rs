//! The client side of the daemon's socket: where it is ([`paths`]), whether it and the process
//! behind it can be trusted ([`trust`]), frames over it ([`frames`]; these two live in the
//! protocol crate, shared with the daemon, and are re-exported here), a connection
//! ([`connection`]) over the socket ([`socket`]) or any byte stream, reaching the daemon again
//! after it went away ([`reconnect`]), the sessions a front end follows ([`follower`]), the one event feed every front end follows ([`feed`])
//! and the board's feed of every session's summary ([`summaries`]).

pub mod connection;
pub mod feed;
pub mod follower;
pub mod reconnect;
pub mod socket;
pub mod summaries;
pub mod trust;

pub use protocol::local::{frames, paths};

pub use connection::{Client, ClientError, Incoming};
pub use feed::{Closed, Feed, FeedItem, Flow, View};
pub use follower::{Follower, PendingAsk, Refollowed};
pub use reconnect::{GaveUp, Lost, Reconnect, Unreachable};
pub use summaries::{Changes, Summaries};
