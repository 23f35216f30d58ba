//! The client library of agentd: the connection to the daemon, its socket paths and trust
//! checks, and the event feed. The `agentctl` binary, the ACP adapter and the end-to-end tests
//! use it; the daemon does not (the paths and frames both ends share are in the protocol
//! crate's `local` feature).

pub mod client;
