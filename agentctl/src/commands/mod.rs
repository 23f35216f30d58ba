//! One module per group of commands.

pub mod chat;
pub mod daemon;
pub mod oneshot;
pub mod run;
pub mod sessions;
pub mod show;

use protocol::client::Client;
use protocol::{Reply, Request};

use crate::Failure;

/// Sends `request` and returns the reply, or a failure carrying the daemon's message.
pub async fn request(client: &Client, request: Request) -> Result<Reply, Failure> {
    client.request(request).await.map_err(Failure::new)
}

/// The failure for a reply of the wrong kind.
pub fn unexpected(reply: Reply) -> Failure {
    Failure::new(format!("unexpected reply from the daemon: {reply:?}"))
}
