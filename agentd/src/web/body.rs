//! A response body as the daemon reads it (docs/architecture.md#web-access): streamed, and
//! read no further than a cap, whatever the server says its length is; and what kind of text
//! it is, from its content type.

use super::client::describe;

/// What a body is, as far as turning it into text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// HTML: turned into markdown.
    Html,
    /// JSON, plain text, XML, source code: given as it is.
    Text,
}

/// The kind of a body whose `Content-Type` is `content_type`; `Err` with the type for content
/// that is not text (images, PDFs, archives, …). Without a type, it is told by looking.
pub(crate) fn kind(content_type: Option<&str>, body_start: &[u8]) -> Result<Kind, String> {
    let Some(content_type) = content_type else {
        return sniff(body_start);
    };
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Ok(Kind::Html),
        "" => sniff(body_start),
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/x-javascript"
        | "application/yaml"
        | "application/x-yaml"
        | "application/toml"
        | "application/x-sh" => Ok(Kind::Text),
        text if text.starts_with("text/") || text.ends_with("+json") || text.ends_with("+xml") => {
            Ok(Kind::Text)
        }
        other => Err(other.to_string()),
    }
}

/// The kind of an untyped body: HTML if it starts like HTML, text if it has no NUL byte.
fn sniff(start: &[u8]) -> Result<Kind, String> {
    let head = String::from_utf8_lossy(start.get(..512).unwrap_or(start)).to_ascii_lowercase();
    let head = head.trim_start();
    if head.starts_with("<!doctype html") || head.starts_with("<html") {
        Ok(Kind::Html)
    } else if start.contains(&0) {
        Err("binary data with no content type".to_string())
    } else {
        Ok(Kind::Text)
    }
}

/// At most `max` bytes of `response`'s body, and whether there was more.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), String> {
    let expected = response.content_length().unwrap_or(0);
    let mut body = Vec::with_capacity(usize::try_from(expected).unwrap_or(max).min(max));
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("the download broke off: {}", describe(&e)))?
    {
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(chunk.get(..room).unwrap_or_default());
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_types_are_read_and_others_refused() {
        assert_eq!(kind(Some("text/html; charset=utf-8"), b""), Ok(Kind::Html));
        assert_eq!(kind(Some("application/xhtml+xml"), b""), Ok(Kind::Html));
        for text in [
            "application/json",
            "text/plain",
            "text/markdown",
            "application/ld+json",
            "image/svg+xml",
            "application/xml",
        ] {
            assert_eq!(kind(Some(text), b""), Ok(Kind::Text), "{text}");
        }
        for other in [
            "image/png",
            "application/pdf",
            "application/octet-stream",
            "video/mp4",
        ] {
            assert_eq!(kind(Some(other), b""), Err(other.to_string()));
        }
    }

    #[test]
    fn an_untyped_body_is_told_by_looking() {
        assert_eq!(kind(None, b"  <!DOCTYPE html><p>x"), Ok(Kind::Html));
        assert_eq!(kind(None, b"hello"), Ok(Kind::Text));
        assert!(kind(None, b"PK\x03\x04\x00\x00").is_err());
    }
}
