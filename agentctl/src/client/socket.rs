//! The daemon's local socket shared by a connection's reader and writer ([`SocketHalf`]).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use interprocess::local_socket::tokio::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// One side of a socket shared by its reader and its writer (`&Stream` reads and writes, so
/// the two need no lock between them).
pub struct SocketHalf(Arc<Stream>);

impl SocketHalf {
    /// The reading and the writing side of `stream`.
    pub fn pair(stream: Stream) -> (SocketHalf, SocketHalf) {
        let shared = Arc::new(stream);
        (SocketHalf(shared.clone()), SocketHalf(shared))
    }
}

impl AsyncRead for SocketHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut &*self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for SocketHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut &*self.0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut &*self.0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut &*self.0).poll_shutdown(cx)
    }
}
