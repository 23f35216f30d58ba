//! The server's output, bounded before the JSON-RPC layer reads it: a language server runs the
//! project's code, and whatever it (or a build script, a proc macro, a process that opened its
//! stdout) writes reaches the daemon. Each message is checked as it comes: its headers in at most
//! [`MAX_HEADER_BYTES`], a `Content-Length` of at most [`MAX_MESSAGE_BYTES`]. Anything else ends
//! the connection, as if the server had exited, and it is started again with backoff.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// The most bytes of one message's headers (servers send one `Content-Length` line and perhaps a
/// `Content-Type`).
pub(crate) const MAX_HEADER_BYTES: u64 = 4096;
/// The largest message taken from a server.
pub(crate) const MAX_MESSAGE_BYTES: u64 = 16 << 20;

/// Copies well-formed, bounded messages from `from` (the server's stdout) to `to` (the
/// JSON-RPC layer) until `from` ends (`Ok`) or sends what is not one (`Err`, saying what).
pub(crate) async fn relay(
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
) -> Result<(), String> {
    let mut from = BufReader::new(from);
    loop {
        let Some(length) = headers(&mut from).await? else {
            return Ok(());
        };
        to.write_all(format!("Content-Length: {length}\r\n\r\n").as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let copied = tokio::io::copy(&mut (&mut from).take(length), &mut to)
            .await
            .map_err(|e| e.to_string())?;
        if copied < length {
            return Err(format!(
                "the server's output ended inside a message ({copied} of {length} bytes)"
            ));
        }
        to.flush().await.map_err(|e| e.to_string())?;
    }
}

/// Reads one message's headers; its `Content-Length`, or `None` at the end of the output.
async fn headers(from: &mut (impl tokio::io::AsyncBufRead + Unpin)) -> Result<Option<u64>, String> {
    let mut length = None;
    let mut read = 0u64;
    loop {
        let mut line = Vec::new();
        let limit = MAX_HEADER_BYTES.saturating_sub(read).max(1);
        let n = (&mut *from)
            .take(limit)
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| e.to_string())?;
        if n == 0 && read == 0 {
            return Ok(None);
        }
        read += n as u64;
        if !line.ends_with(b"\n") {
            return Err(if n == 0 {
                "the server's output ended inside a message's headers".to_string()
            } else {
                format!("the server sent more than {MAX_HEADER_BYTES} bytes of headers")
            });
        }
        let line = String::from_utf8_lossy(&line);
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            return match length {
                Some(length) => Ok(Some(length)),
                None => Err("the server sent a message without Content-Length".to_string()),
            };
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!(
                "the server sent a header that is not one: {:.80}",
                line
            ));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value: u64 = value
                .trim()
                .parse()
                .map_err(|_| format!("the server sent Content-Length `{:.40}`", value.trim()))?;
            if value > MAX_MESSAGE_BYTES {
                return Err(format!(
                    "the server sent a message of {value} bytes; at most {MAX_MESSAGE_BYTES} are taken"
                ));
            }
            length = Some(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn relayed(input: &[u8]) -> (Result<(), String>, Vec<u8>) {
        let mut out = Vec::new();
        let result = relay(input, &mut out).await;
        (result, out)
    }

    #[tokio::test]
    async fn well_formed_messages_pass_whole() {
        let input = b"Content-Length: 2\r\nContent-Type: x\r\n\r\n{}Content-Length: 4\r\n\r\nnull";
        let (result, out) = relayed(input).await;
        assert_eq!(result, Ok(()));
        assert_eq!(
            out,
            b"Content-Length: 2\r\n\r\n{}Content-Length: 4\r\n\r\nnull".to_vec()
        );
    }

    #[tokio::test]
    async fn a_huge_length_an_endless_header_and_garbage_end_the_connection() {
        for input in [
            b"Content-Length: 100000000000000\r\n\r\n".to_vec(),
            b"Content-Length: 18446744073709551616\r\n\r\n".to_vec(),
            [b"X-Junk: ".to_vec(), vec![b'a'; 1 << 20]].concat(),
            b"hello world\r\n\r\n".to_vec(),
            b"Content-Type: x\r\n\r\n{}".to_vec(),
            b"Content-Length: 10\r\n\r\n{}".to_vec(),
        ] {
            let (result, out) = relayed(&input).await;
            assert!(
                result.is_err(),
                "{:?}",
                String::from_utf8_lossy(&input[..40.min(input.len())])
            );
            assert!(out.len() <= 64, "{}", out.len());
        }
    }
}
