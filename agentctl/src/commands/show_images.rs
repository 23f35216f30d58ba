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
    session: SessionId,
) -> Result<(SessionId, Vec<ImageRef>), Failure> {
    let (info, events) = client.history(&session).await.map_err(Failure::new)?;
    let mut images: Vec<ImageRef> = Vec::new();
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
    Ok((info.id, images))
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
    let path = dir.join(format!(
        "{}.{}",
        image.hash,
        crate::images::extension(&image.media_type)
    ));
    // A link (even one that leads nowhere) is never written through, and a file of another
    // size differs without being read.
    let existing = match std::fs::symlink_metadata(&path) {
        Ok(meta) if !meta.is_file() => {
            return Err(Failure::new(format!(
                "{} exists and is not a plain file; not overwritten: export to an empty directory",
                path.display()
            )));
        }
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
    create_new(&path, data)
        .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// Writes `data` to `path`, which must not exist (no link is followed), readable by this user
/// only, as the daemon keeps its images.
fn create_new(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(data)
}
