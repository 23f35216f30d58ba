//! What the daemon has sent a server and what the server has taken: the JSON-RPC layer queues
//! without bound, so a server that stops reading its input (hung, or busy for minutes) while
//! the agent goes on editing would hold every text sent to it in the daemon's memory. Past
//! [`MAX_BACKLOG`] unread bytes the server is taken for stuck and stopped; it is started again
//! on the next need.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

/// The most bytes sent to a server and not yet taken by it.
pub(crate) const MAX_BACKLOG: u64 = 32 << 20;

/// Bytes queued for a server and bytes it took.
#[derive(Default)]
pub(crate) struct Outbox {
    queued: AtomicU64,
    taken: AtomicU64,
}

impl Outbox {
    /// Counts `message` (to be serialized) as queued; `false`, counting nothing, when the
    /// server's backlog would pass [`MAX_BACKLOG`].
    pub(crate) fn admit(&self, message: &impl serde::Serialize) -> bool {
        let mut counter = Counter(0);
        let _ = serde_json::to_writer(&mut counter, message);
        let backlog = self
            .queued
            .load(Ordering::SeqCst)
            .saturating_sub(self.taken.load(Ordering::SeqCst));
        if backlog.saturating_add(counter.0) > MAX_BACKLOG {
            return false;
        }
        self.queued.fetch_add(counter.0, Ordering::SeqCst);
        true
    }
}

/// A sink that only counts what is written to it.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The server's input, counting what it takes into an [`Outbox`].
pub(crate) struct Counted<W> {
    inner: W,
    outbox: Arc<Outbox>,
}

impl<W> Counted<W> {
    /// `inner`, counted into `outbox`.
    pub(crate) fn new(inner: W, outbox: Arc<Outbox>) -> Counted<W> {
        Counted { inner, outbox }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Counted<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, bytes);
        if let Poll::Ready(Ok(n)) = written {
            self.outbox.taken.fetch_add(n as u64, Ordering::SeqCst);
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_backlog_past_the_bound_is_refused_until_the_server_takes_it() {
        let outbox = Arc::new(Outbox::default());
        let text = "x".repeat(10 << 20);
        assert!(outbox.admit(&text));
        assert!(outbox.admit(&text));
        assert!(outbox.admit(&text));
        assert!(!outbox.admit(&text), "40 MiB unread");
        let mut input = Counted::new(Vec::new(), outbox.clone());
        input.write_all(text.as_bytes()).await.unwrap();
        assert!(outbox.admit(&text));
    }
}
