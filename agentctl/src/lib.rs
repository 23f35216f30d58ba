//! The client library of agentd: the connection to the daemon, its socket paths and trust
//! checks, and the event feed. The `agentctl` binary, the ACP adapter, the daemon (for the
//! paths and frames it shares with its clients) and the end-to-end tests use it.

pub mod client;
