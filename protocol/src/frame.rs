//! The frame format: a 4-byte big-endian length, then a bincode 2 payload (serde, standard
//! configuration). Limits are checked before anything is allocated for the body.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The largest payload accepted, in bytes.
pub const MAX_FRAME_LEN: usize = 16 * 1024 * 1024;

/// Bytes of the length prefix.
pub const PREFIX_LEN: usize = 4;

/// Why a frame could not be read, decoded or encoded.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The length prefix announced more than [`MAX_FRAME_LEN`].
    #[error("frame of {len} bytes is over the limit of {MAX_FRAME_LEN} bytes")]
    TooLarge {
        /// The announced length.
        len: u64,
    },
    /// The peer closed the connection in the middle of a frame.
    #[error("connection closed in the middle of a frame ({got} of {expected} bytes received)")]
    Truncated {
        /// Bytes the frame needed (prefix included).
        expected: usize,
        /// Bytes that arrived.
        got: usize,
    },
    /// The payload is not a valid encoding of the expected type.
    #[error("malformed frame: {0}")]
    Decode(String),
    /// The payload decoded but left bytes over.
    #[error("malformed frame: {consumed} of {len} payload bytes were used")]
    TrailingBytes {
        /// Bytes the value used.
        consumed: usize,
        /// Bytes of the payload.
        len: usize,
    },
    /// A frame began but was not completed in time.
    #[error("the frame was not completed within {} ms of its first byte", .0.as_millis())]
    Stalled(std::time::Duration),
    /// The frame was dropped to keep the memory held for unfinished frames bounded.
    #[error("the frame was dropped: the daemon holds too many unfinished frames; send it again")]
    OverBudget,
    /// The value could not be encoded.
    #[error("cannot encode frame: {0}")]
    Encode(String),
    /// Reading or writing failed.
    #[error("connection error: {0}")]
    Io(#[from] std::io::Error),
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_FRAME_LEN>()
}

/// Encodes `value` as one whole frame, prefix included.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, FrameError> {
    let mut frame = vec![0; PREFIX_LEN];
    bincode::serde::encode_into_std_write(value, &mut frame, config())
        .map_err(|e| FrameError::Encode(e.to_string()))?;
    let len = frame.len() - PREFIX_LEN;
    if len > MAX_FRAME_LEN {
        return Err(FrameError::TooLarge { len: len as u64 });
    }
    frame[..PREFIX_LEN].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(frame)
}

/// Decodes one payload (the bytes after the prefix); every byte must be used.
pub fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, FrameError> {
    let (value, consumed) = bincode::serde::decode_from_slice(payload, config())
        .map_err(|e| FrameError::Decode(e.to_string()))?;
    if consumed != payload.len() {
        return Err(FrameError::TrailingBytes {
            consumed,
            len: payload.len(),
        });
    }
    Ok(value)
}

/// The payload length a frame's prefix announces, refused when over [`MAX_FRAME_LEN`].
pub fn payload_len(prefix: [u8; PREFIX_LEN]) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(prefix) as usize;
    if len > MAX_FRAME_LEN {
        return Err(FrameError::TooLarge { len: len as u64 });
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClientFrame, Hello, Request, RequestId};

    #[test]
    fn encoded_frame_decodes_to_the_same_value() {
        let frame = ClientFrame::Request {
            id: RequestId(7),
            request: Request::Status,
        };
        let bytes = encode(&frame).unwrap();
        let len = u32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
        assert_eq!(len, bytes.len() - 4);
        assert_eq!(decode::<ClientFrame>(&bytes[4..]).unwrap(), frame);
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut bytes = encode(&ClientFrame::Hello(Hello {
            protocol_version: 1,
            client: "t".into(),
        }))
        .unwrap();
        bytes.push(0);
        assert!(matches!(
            decode::<ClientFrame>(&bytes[4..]),
            Err(FrameError::TrailingBytes { .. })
        ));
    }
}
