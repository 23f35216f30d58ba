//! The client side of the daemon's socket: where it is ([`paths`]), whether it and the process
//! behind it can be trusted ([`trust`]), frames over it ([`frames`]), a connection
//! ([`connection`]), the one event feed every front end follows ([`feed`]) and the board's
//! feed of every session's summary ([`summaries`]).

pub mod connection;
pub mod feed;
pub mod frames;
pub mod paths;
pub mod summaries;
pub mod trust;

pub use connection::{Client, ClientError, Incoming};
pub use feed::{Feed, FeedItem, Flow, Follower, PendingAsk, View};
pub use summaries::{Changes, Summaries};
