//! What the adapter writes to the editor, once the editor is gone: an editor that closes its end
//! while a notification is on its way (a plan, the commands it may offer) ends the session as
//! much as closing its input does, not as an error (docs/architecture.md#editors-acp).

use std::io::ErrorKind;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

/// A writer to the editor that takes a closed pipe as the editor leaving: what is written after
/// that is dropped, and the connection ends when the editor's input does.
pub struct EditorOut<W> {
    /// The editor's end.
    inner: W,
    /// The editor closed it.
    gone: bool,
}

impl<W> EditorOut<W> {
    /// Writes to `inner`.
    pub fn new(inner: W) -> EditorOut<W> {
        EditorOut { inner, gone: false }
    }
}

/// `result`, with a closed pipe taken as done (`done`) and remembered in `gone`.
fn closed_is_done<T>(
    result: Poll<std::io::Result<T>>,
    gone: &mut bool,
    done: T,
) -> Poll<std::io::Result<T>> {
    match result {
        Poll::Ready(Err(err)) if err.kind() == ErrorKind::BrokenPipe => {
            *gone = true;
            Poll::Ready(Ok(done))
        }
        other => other,
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for EditorOut<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if this.gone {
            return Poll::Ready(Ok(buf.len()));
        }
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        closed_is_done(result, &mut this.gone, buf.len())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.gone {
            return Poll::Ready(Ok(()));
        }
        let result = Pin::new(&mut this.inner).poll_flush(cx);
        closed_is_done(result, &mut this.gone, ())
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.gone {
            return Poll::Ready(Ok(()));
        }
        let result = Pin::new(&mut this.inner).poll_shutdown(cx);
        closed_is_done(result, &mut this.gone, ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_closed_editor_takes_what_is_written_without_an_error() {
        let (near, far) = tokio::io::duplex(64);
        drop(far);
        let mut out = EditorOut::new(near);
        out.write_all(b"{\"jsonrpc\":\"2.0\"}\n").await.unwrap();
        out.flush().await.unwrap();
        assert!(out.gone);
    }
}
