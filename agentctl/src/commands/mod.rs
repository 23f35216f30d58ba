//! One module per group of commands.

pub mod board;
pub mod changes;
pub mod chat;
pub mod daemon;
pub mod extensions;
pub mod mcp;
pub mod oneshot;
pub mod run;
mod run_keys;
pub mod service;
pub mod sessions;
pub mod show;
pub mod watch;

use agentctl::client::Client;
use protocol::{Reply, Request};

use crate::Failure;

/// Sends `request` and returns the reply, or a failure carrying the daemon's message.
pub async fn request(client: &Client, request: Request) -> Result<Reply, Failure> {
    client.request(request).await.map_err(Failure::new)
}

/// This shell's environment (the variables that are text), sent when a session is created so
/// that its commands run with this shell's PATH and virtualenv; the daemon drops secrets.
pub fn client_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

/// The failure for a reply of the wrong kind.
pub fn unexpected(reply: Reply) -> Failure {
    Failure::new(format!("unexpected reply from the daemon: {reply:?}"))
}
