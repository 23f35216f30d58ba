//! One module per group of commands.

pub mod board;
pub mod bridge;
pub mod changes;
pub mod chat;
pub mod daemon;
pub mod daemon_remote;
pub mod extensions;
pub mod here;
pub mod lsp;
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
pub mod show_images;
pub mod usage;
pub mod watch;

use agentctl::client::Client;
use protocol::{ImageUpload, Reply, Request};

use crate::Failure;

/// Sends `request` and returns the reply, or a failure carrying the daemon's message.
pub async fn request(client: &Client, request: Request) -> Result<Reply, Failure> {
    client.request(request).await.map_err(Failure::new)
}

/// This shell's environment (the variables that are text), sent when a session is created so
/// that its commands run with this shell's PATH and virtualenv; the daemon drops secrets. To
/// another machine's daemon (`--host`) nothing goes, or only the provider keys and base URLs
/// with `--forward-keys`: its own environment applies.
pub fn client_env() -> Vec<(String, String)> {
    let Some(sent) = crate::connect::environment_to_send() else {
        return Vec::new();
    };
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| sent(name))
        .collect()
}

/// The failure for a reply of the wrong kind.
pub fn unexpected(reply: Reply) -> Failure {
    let chars = agentctl::client::far_text::MESSAGE_CHARS;
    let reply = agentctl::client::printable(&format!("{reply:?}"), chars);
    Failure::new(format!("unexpected reply from the daemon: {reply}"))
}

/// Room a message's frame needs besides its text (the request around it, the client's
/// environment).
const FRAME_ROOM: usize = 256 * 1024;

/// Refuses a message too large to send to the daemon at all (its text and the bytes of its
/// images together), before anything is sent, with both sizes (the daemon refuses one larger
/// than the model's window itself).
pub fn check_message_size(text: &str, image_bytes: usize) -> Result<(), Failure> {
    let limit = protocol::frame::MAX_FRAME_LEN - FRAME_ROOM;
    let size = text.len() + image_bytes;
    if size <= limit {
        return Ok(());
    }
    Err(Failure::new(format!(
        "the message is {}; one message can be at most {}: put the text in a file and ask the \
         agent to read what it needs",
        crate::format::bytes(size as u64),
        crate::format::bytes(limit as u64)
    )))
}

/// A usage failure (exit code 2).
pub fn usage(message: impl std::fmt::Display) -> Failure {
    Failure::usage(message)
}

/// The image files `paths` (`-i`, as given, relative to the current directory), read; a
/// missing or unreadable one is a usage failure that names it.
pub fn read_images(paths: &[String]) -> Result<Vec<ImageUpload>, Failure> {
    paths
        .iter()
        .map(|path| crate::images::read(std::path::Path::new(path), path).map_err(usage))
        .collect()
}

/// `text` with the files its `@path` words name (relative to the current directory) attached,
/// each said on stderr, and its images: `images` (from `-i`) then those it mentions. Refused
/// when the whole is too large to send, or the images are more than a message carries.
pub fn with_mentions(
    text: String,
    mut images: Vec<ImageUpload>,
) -> Result<(String, Vec<ImageUpload>), Failure> {
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::new(format!("cannot read the current directory: {e}")))?;
    let attached = crate::mentions::attach(&text, &cwd).map_err(usage)?;
    // Over --host the files are read here and sent as their content: say so.
    let from = match crate::connect::remote_host() {
        Some(_) => " (read on this machine)",
        None => "",
    };
    for file in attached.notes {
        eprintln!("agentctl: attached {file}{from}");
    }
    // A file given with -i and mentioned with @ too goes once.
    for image in attached.images {
        if !images.iter().any(|i| i.data == image.data) {
            images.push(image);
        }
    }
    crate::images::check(&images).map_err(usage)?;
    check_message_size(&attached.text, crate::images::total_bytes(&images))?;
    Ok((attached.text, images))
}
