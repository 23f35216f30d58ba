//! Frames over an async stream: a frame's payload read as its bytes arrive (never allocated by
//! what the prefix announces), within a time once begun and within a memory budget; a value
//! written as one frame. The format itself is [`crate::frame`], whose codec is re-exported
//! here.

use crate::frame;
pub use crate::frame::{FrameError, MAX_FRAME_LEN, PREFIX_LEN, decode, encode, payload_len};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Reads one frame's payload. `Ok(None)` means the peer closed cleanly between frames.
///
/// The body buffer grows as bytes arrive, so a large announced length costs nothing until the
/// bytes are really sent.
pub async fn read_payload<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> Result<Option<Vec<u8>>, FrameError> {
    read_payload_within(reader, None).await
}

/// Reads one frame's payload like [`read_payload`]; the wait for a frame to begin is not
/// bounded, but once its first byte arrived the whole frame must follow `within` that time.
pub async fn read_payload_within<R: AsyncRead + Unpin>(
    reader: &mut R,
    within: Option<std::time::Duration>,
) -> Result<Option<Vec<u8>>, FrameError> {
    read_payload_budgeted(reader, within, |_| true).await
}

/// Reads one frame's payload like [`read_payload_within`], asking `grow` before the buffer
/// takes each more byte of memory (the argument is how many): when it says no, the frame is
/// dropped with [`FrameError::OverBudget`]. The buffer grows with the bytes that arrive, never
/// by what the prefix announces.
pub async fn read_payload_budgeted<R: AsyncRead + Unpin>(
    reader: &mut R,
    within: Option<std::time::Duration>,
    grow: impl FnMut(usize) -> bool,
) -> Result<Option<Vec<u8>>, FrameError> {
    let mut prefix = [0u8; PREFIX_LEN];
    let first = reader.read(&mut prefix).await?;
    if first == 0 {
        return Ok(None);
    }
    let rest = read_rest(reader, prefix, first, grow);
    match within {
        Some(limit) => tokio::time::timeout(limit, rest)
            .await
            .map_err(|_| FrameError::Stalled(limit))?,
        None => rest.await,
    }
}

/// The rest of a frame whose first `got` prefix bytes are in `prefix`.
async fn read_rest<R: AsyncRead + Unpin>(
    reader: &mut R,
    mut prefix: [u8; PREFIX_LEN],
    mut got: usize,
    mut grow: impl FnMut(usize) -> bool,
) -> Result<Option<Vec<u8>>, FrameError> {
    while got < PREFIX_LEN {
        let n = reader.read(&mut prefix[got..]).await?;
        if n == 0 {
            return Err(FrameError::Truncated {
                expected: PREFIX_LEN,
                got,
            });
        }
        got += n;
    }
    let len = frame::payload_len(prefix)?;
    const CHUNK: usize = 64 * 1024;
    let mut payload: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; CHUNK.min(len)];
    while payload.len() < len {
        let want = (len - payload.len()).min(CHUNK);
        let n = reader.read(&mut chunk[..want]).await?;
        if n == 0 {
            return Err(FrameError::Truncated {
                expected: PREFIX_LEN + len,
                got: PREFIX_LEN + payload.len(),
            });
        }
        let needed = payload.len() + n;
        if needed > payload.capacity() {
            // Doubling keeps the copies few; never past the frame's own length.
            let capacity = (payload.capacity() * 2).max(needed).min(len);
            if !grow(capacity - payload.capacity()) {
                return Err(FrameError::OverBudget);
            }
            payload.reserve_exact(capacity - payload.len());
        }
        payload.extend_from_slice(&chunk[..n]);
    }
    Ok(Some(payload))
}

/// Reads and decodes one frame. `Ok(None)` means the peer closed cleanly between frames.
pub async fn read_frame<T: DeserializeOwned, R: AsyncRead + Unpin>(
    reader: &mut R,
) -> Result<Option<T>, FrameError> {
    read_frame_within(reader, None).await
}

/// Reads and decodes one frame that, once begun, must complete `within` that time.
pub async fn read_frame_within<T: DeserializeOwned, R: AsyncRead + Unpin>(
    reader: &mut R,
    within: Option<std::time::Duration>,
) -> Result<Option<T>, FrameError> {
    match read_payload_within(reader, within).await? {
        Some(payload) => frame::decode(&payload).map(Some),
        None => Ok(None),
    }
}

/// Encodes `value` and writes it as one frame, then flushes.
pub async fn write_frame<T: Serialize, W: AsyncWrite + Unpin>(
    writer: &mut W,
    value: &T,
) -> Result<(), FrameError> {
    let bytes = frame::encode(value)?;
    writer.write_all(&bytes).await?;
    writer.flush().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn oversized_prefix_is_refused_before_the_body() {
        let bytes = u32::MAX.to_be_bytes();
        let err = read_payload(&mut &bytes[..]).await.unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { len } if len == u32::MAX as u64));
    }

    #[tokio::test]
    async fn truncated_body_is_reported() {
        let mut bytes = 10u32.to_be_bytes().to_vec();
        bytes.extend_from_slice(b"abc");
        let err = read_payload(&mut &bytes[..]).await.unwrap_err();
        assert!(matches!(
            err,
            FrameError::Truncated {
                expected: 14,
                got: 7
            }
        ));
    }

    #[tokio::test]
    async fn a_frame_that_stalls_after_its_first_byte_is_dropped() {
        let (mut client, mut server) = tokio::io::duplex(64);
        client.write_all(&[0, 0, 1]).await.unwrap();
        let limit = std::time::Duration::from_millis(50);
        let err = read_payload_within(&mut server, Some(limit))
            .await
            .unwrap_err();
        assert!(matches!(err, FrameError::Stalled(l) if l == limit));
    }

    #[tokio::test]
    async fn clean_close_between_frames_is_not_an_error() {
        assert!(read_payload(&mut &b""[..]).await.unwrap().is_none());
    }
}
