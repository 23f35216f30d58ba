//! `agentctl show ID --images DIR`: a session's images exported, each to a file named by its
//! hash (docs/architecture.md#images).

use std::path::{Path, PathBuf};

use agentctl::client::Client;
use agentctl::client::paths::Paths;
use protocol::{Event, ImageRef, Reply, Request, SessionId};

use super::{request, unexpected};
use crate::{Failure, connect};

/// Writes every image of the session's history to `dir` as `HASH.EXT` and prints one line per
/// file; a file of that name with other bytes is not overwritten.
pub async fn export(paths: &Paths, id: String, dir: &Path) -> Result<u8, Failure> {
    let client = connect::connect(paths, "show").await?;
    let (session, images) = images_of(&client, SessionId(id)).await?;
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::new(format!("cannot make {}: {e}", dir.display())))?;
    for image in &images {
        let fetch = Request::GetImage {
            session: session.clone(),
            hash: image.hash.clone(),
        };
        let data = match request(&client, fetch).await? {
            Reply::Image(bytes) => bytes.data,
            other => return Err(unexpected(other)),
        };
        let path = write_new(dir, image, &data)?;
        outln!(
            "{}  {}",
            path.display(),
            crate::style::one_line(&image.label())
        );
    }
    if images.is_empty() {
        eprintln!("agentctl: session {session} has no images");
    }
    Ok(0)
}

/// The session's full id and the images of its history, each once, in the order they came.
async fn images_of(
    client: &Client,
    mut session: SessionId,
) -> Result<(SessionId, Vec<ImageRef>), Failure> {
    let mut images: Vec<ImageRef> = Vec::new();
    let mut from_seq = 0;
    loop {
        let page = Request::GetHistory {
            session: session.clone(),
            from_seq,
        };
        let (info, events, next_seq) = match request(client, page).await? {
            Reply::History {
                session,
                events,
                next_seq,
            } => (session, events, next_seq),
            other => return Err(unexpected(other)),
        };
        session = info.id;
        for event in events {
            let found = match event.event {
                Event::UserMessage { images, .. } | Event::ToolResult { images, .. } => images,
                _ => continue,
            };
            for image in found {
                if !images.iter().any(|i| i.hash == image.hash) {
                    images.push(image);
                }
            }
        }
        match next_seq {
            Some(next) if next > from_seq => from_seq = next,
            _ => return Ok((session, images)),
        }
    }
}

/// Writes `data` to `dir/HASH.EXT`; the same bytes there already are left as they are, other
/// bytes are an error.
fn write_new(dir: &Path, image: &ImageRef, data: &[u8]) -> Result<PathBuf, Failure> {
    // The hash comes from the daemon: only hex digits make a file name.
    if image.hash.is_empty() || !image.hash.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(Failure::new(format!(
            "the daemon named an image `{}`, which is no hash",
            crate::style::one_line(&image.hash)
        )));
    }
    let path = dir.join(format!("{}.{}", image.hash, extension(&image.media_type)));
    // A file of another size differs without being read.
    let existing = match std::fs::metadata(&path) {
        Ok(meta) if meta.len() != data.len() as u64 => Ok(Vec::new()),
        _ => std::fs::read(&path),
    };
    match existing {
        Ok(existing) if existing == data => return Ok(path),
        Ok(_) => {
            return Err(Failure::new(format!(
                "{} exists with other bytes; not overwritten: export to an empty directory",
                path.display()
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(Failure::new(format!("cannot read {}: {e}", path.display())));
        }
    }
    std::fs::write(&path, data)
        .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// The file extension of a media type.
fn extension(media_type: &str) -> &'static str {
    match media_type {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "bin",
    }
}
