//! `agentctl bridge`: the far end of `--host`. Run by ssh on the daemon's machine, it connects
//! to the local daemon as any command does (starting it when none runs, trusting only the
//! user's own socket) and copies bytes both ways between its stdin/stdout and the socket,
//! untouched: the client at the other end of ssh shakes hands and checks versions itself. It
//! reads no config and reaches only the socket of the user who runs it.

use std::io::ErrorKind;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use agentctl::client::paths::Paths;
use agentctl::client::socket::SocketHalf;

use crate::Failure;
use crate::connect;

/// How much one copy step moves at most.
const CHUNK: usize = 64 * 1024;

/// Copies between stdin/stdout and the daemon's socket until either side closes.
pub async fn bridge(paths: &Paths) -> Result<u8, Failure> {
    let stream = connect::open_local(paths).await?;
    let (from_daemon, to_daemon) = SocketHalf::pair(stream);
    let copied = tokio::select! {
        copied = pass(tokio::io::stdin(), to_daemon) => copied,
        copied = pass(from_daemon, tokio::io::stdout()) => copied,
    };
    match copied {
        Ok(()) => Ok(0),
        // The client or the daemon went away mid-write: that is how a bridge ends too.
        Err(err)
            if matches!(
                err.kind(),
                ErrorKind::BrokenPipe | ErrorKind::ConnectionReset
            ) =>
        {
            Ok(0)
        }
        Err(err) => Err(Failure::new(format!(
            "the bridge to the daemon broke: {err}"
        ))),
    }
}

/// Copies `from` to `to` until `from` ends, each chunk flushed as it comes (a frame must not
/// wait in a buffer for the next one).
async fn pass(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        to.write_all(buf.get(..n).unwrap_or_default()).await?;
        to.flush().await?;
    }
}
