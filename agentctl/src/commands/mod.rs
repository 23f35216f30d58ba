//! One module per group of commands.

pub mod board;
pub mod changes;
pub mod chat;
pub mod daemon;
pub mod extensions;
pub mod here;
pub mod mcp;
pub mod models;
pub mod oneshot;
mod pick;
pub mod resume;
pub mod run;
mod run_follow;
mod run_keys;
pub mod service;
pub mod sessions;
pub mod shells;
pub mod show;
pub mod usage;
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

/// Room a message's frame needs besides its text (the request around it, the client's
/// environment).
const FRAME_ROOM: usize = 256 * 1024;

/// Refuses a message too large to send to the daemon at all, before anything is sent, with
/// both sizes (the daemon refuses one larger than the model's window itself).
pub fn check_message_size(text: &str) -> Result<(), Failure> {
    let limit = protocol::frame::MAX_FRAME_LEN - FRAME_ROOM;
    if text.len() <= limit {
        return Ok(());
    }
    Err(Failure::new(format!(
        "the message is {}; one message can be at most {}: put the text in a file and ask the \
         agent to read what it needs",
        crate::format::bytes(text.len() as u64),
        crate::format::bytes(limit as u64)
    )))
}

/// `text` with the files its `@path` words name (relative to the current directory) attached,
/// each said on stderr; refused when the whole is too large to send.
pub fn with_mentions(text: String) -> Result<String, Failure> {
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::new(format!("cannot read the current directory: {e}")))?;
    let (text, attached) = crate::mentions::attach(&text, &cwd).map_err(Failure::new)?;
    for file in attached {
        eprintln!("agentctl: attached {file}");
    }
    check_message_size(&text)?;
    Ok(text)
}
