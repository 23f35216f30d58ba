//! A request's JSON body as bytes, with its images' data written in (docs/architecture.md#images).
//! The body is built as a small [`Value`] whose image parts carry a placeholder string; the
//! bytes sent encode each image's base64 straight from its stored bytes in place of its
//! placeholder, so that a call holds one base64 copy of its images, not one per step.
//!
//! A placeholder is a whole JSON string value that starts with a NUL and carries a random number
//! drawn once per process: text from a user, a file or a model cannot produce one, and a string
//! that merely contains one (or one of another process) is sent as it is.

use std::sync::LazyLock;

use base64::Engine;
use serde_json::Value;

use super::ProviderError;
use crate::images::ImageData;

/// How an image's data is written in place of its placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Splice {
    /// Its base64 alone (Anthropic's `source.data`).
    Base64,
    /// A `data:<media type>;base64,<base64>` URL (both of OpenAI's APIs).
    DataUrl,
}

impl Splice {
    /// The placeholder's word for this way.
    fn word(self) -> &'static str {
        match self {
            Splice::Base64 => "base64",
            Splice::DataUrl => "url",
        }
    }
}

/// The random part of every placeholder of this process (122 random bits, as hex).
static NONCE: LazyLock<String> = LazyLock::new(|| uuid::Uuid::new_v4().simple().to_string());

/// The string an image part carries in place of the data of the image with `hash`, written as
/// `splice` says.
pub(crate) fn placeholder(splice: Splice, hash: &str) -> String {
    format!("\u{0}image:{}:{}:{hash}", *NONCE, splice.word())
}

/// `body` as JSON bytes, each placeholder string replaced by the data of its image in `images`.
/// A placeholder whose image is not in `images` fails the call rather than go out.
pub(crate) fn to_bytes(body: &Value, images: &ImageData) -> Result<Vec<u8>, ProviderError> {
    let json = serde_json::to_vec(body)
        .map_err(|err| ProviderError::Body(format!("the body is not JSON ({err})")))?;
    // How serde_json writes a placeholder's start (NUL as `\u0000`), opening quote included.
    let prefix = format!("\"\\u0000image:{}:", *NONCE);
    let mut splices = Vec::new();
    for (start, end) in strings(&json) {
        // A key (followed by `:` in serde_json's compact form) is never an image part.
        let is_key = json.get(end) == Some(&b':');
        let Some(token) = json.get(start..end).filter(|_| !is_key) else {
            continue;
        };
        let Some(rest) = token.strip_prefix(prefix.as_bytes()) else {
            continue;
        };
        if let Some(found) = Found::parse(start, end, rest, images).transpose() {
            splices.push(found?);
        }
    }
    if splices.is_empty() {
        return Ok(json);
    }
    let replaced: usize = splices.iter().map(|s| s.end - s.start).sum();
    let written: usize = splices.iter().map(Found::len).sum();
    let mut out = Vec::with_capacity(json.len() - replaced + written);
    let mut at = 0;
    for found in &splices {
        out.extend_from_slice(json.get(at..found.start).unwrap_or_default());
        found.write(&mut out)?;
        at = found.end;
    }
    out.extend_from_slice(json.get(at..).unwrap_or_default());
    Ok(out)
}

/// A placeholder found in the serialized body, and the image it stands for.
struct Found<'a> {
    /// Where its string starts (the opening quote).
    start: usize,
    /// Where its string ends (past the closing quote).
    end: usize,
    /// How the data is written.
    splice: Splice,
    /// The image's media type.
    media_type: &'static str,
    /// The image's bytes.
    bytes: &'a [u8],
}

impl<'a> Found<'a> {
    /// The placeholder string at `start..end`, `rest` its part after the nonce (the way, the
    /// hash and the closing quote); `None` when the string is not one (it is sent as it is).
    fn parse(
        start: usize,
        end: usize,
        rest: &[u8],
        images: &'a ImageData,
    ) -> Result<Option<Found<'a>>, ProviderError> {
        let Some(rest) = rest.strip_suffix(b"\"") else {
            return Ok(None);
        };
        let Some((splice, hash)) = [Splice::Base64, Splice::DataUrl]
            .into_iter()
            .find_map(|splice| {
                let hash = rest
                    .strip_prefix(splice.word().as_bytes())?
                    .strip_prefix(b":")?;
                Some((splice, hash))
            })
            .filter(|(_, hash)| !hash.is_empty() && hash.iter().all(u8::is_ascii_alphanumeric))
        else {
            return Ok(None);
        };
        let hash = std::str::from_utf8(hash).unwrap_or_default();
        let (media_type, bytes) = images.get(hash).ok_or_else(|| {
            ProviderError::Body(
                "an image of the history could not be attached: try again".to_string(),
            )
        })?;
        Ok(Some(Found {
            start,
            end,
            splice,
            media_type,
            bytes,
        }))
    }

    /// The URL's start before the base64, if any.
    fn url_start(&self) -> [&'static str; 3] {
        match self.splice {
            Splice::Base64 => ["", "", ""],
            Splice::DataUrl => ["data:", self.media_type, ";base64,"],
        }
    }

    /// The bytes written in its place, quotes included.
    fn len(&self) -> usize {
        let base64 = base64::encoded_len(self.bytes.len(), true).unwrap_or(usize::MAX / 4);
        2 + self.url_start().iter().map(|s| s.len()).sum::<usize>() + base64
    }

    /// Writes the JSON string of the data to `out`.
    fn write(&self, out: &mut Vec<u8>) -> Result<(), ProviderError> {
        out.push(b'"');
        for piece in self.url_start() {
            out.extend_from_slice(piece.as_bytes());
        }
        let at = out.len();
        let base64 = base64::encoded_len(self.bytes.len(), true)
            .ok_or_else(|| ProviderError::Body("an image is too large to send".to_string()))?;
        out.resize(at + base64, 0);
        let tail = out.get_mut(at..).unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .encode_slice(self.bytes, tail)
            .map_err(|err| ProviderError::Body(format!("an image could not be encoded ({err})")))?;
        out.push(b'"');
        Ok(())
    }
}

/// The spans of the strings (keys and values) of the serialized JSON `json`, quotes included.
fn strings(json: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut open = None;
    let mut escaped = false;
    for (i, &byte) in json.iter().enumerate() {
        match open {
            None if byte == b'"' => open = Some(i),
            None => {}
            Some(_) if escaped => escaped = false,
            Some(_) if byte == b'\\' => escaped = true,
            Some(start) if byte == b'"' => {
                spans.push((start, i + 1));
                open = None;
            }
            Some(_) => {}
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::ImageRef;
    use serde_json::json;

    /// An image with `hash` whose bytes are `ABC` (`QUJD` in base64).
    fn loaded(hash: &str) -> (ImageRef, ImageData) {
        let image = ImageRef {
            hash: hash.into(),
            media_type: "image/png".into(),
            size: 3,
            width: 1,
            height: 1,
            name: "a.png".into(),
        };
        let mut data = ImageData::none();
        data.insert(&image, "image/png", b"ABC".to_vec());
        (image, data)
    }

    /// `body` spliced and read back.
    fn spliced(body: &Value, data: &ImageData) -> Value {
        serde_json::from_slice(&to_bytes(body, data).unwrap()).unwrap()
    }

    #[test]
    fn a_placeholder_becomes_the_base64_or_the_data_url() {
        let (_, data) = loaded("h1");
        let body = json!({
            "a": placeholder(Splice::Base64, "h1"),
            "b": [{"url": placeholder(Splice::DataUrl, "h1")}, "after"],
        });
        let bytes = to_bytes(&body, &data).unwrap();
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            r#"{"a":"QUJD","b":[{"url":"data:image/png;base64,QUJD"},"after"]}"#
        );
        assert_eq!(
            bytes.capacity(),
            bytes.len(),
            "the size is reserved exactly"
        );
    }

    #[test]
    fn a_body_without_placeholders_is_serialized_as_is() {
        let body = json!({"text": "plain", "n": [1, 2]});
        let bytes = to_bytes(&body, &ImageData::none()).unwrap();
        assert_eq!(bytes, serde_json::to_vec(&body).unwrap());
    }

    #[test]
    fn text_that_looks_like_a_placeholder_is_sent_as_it_is() {
        let (_, data) = loaded("h1");
        let real = placeholder(Splice::Base64, "h1");
        let forged = "\u{0}image:00000000000000000000000000000000:base64:h1";
        let texts = [
            forged.to_string(),
            format!("see {real}"),
            format!("{real} and more"),
            format!("\"{real}"),
            format!("\\{real}"),
            "\\u0000image:".to_string(),
        ];
        let body = json!({"texts": texts, real.clone(): "a key", "image": real});
        let got = spliced(&body, &data);
        assert_eq!(got["texts"], json!(texts));
        assert_eq!(got[real.as_str()], "a key", "keys are left alone");
        assert_eq!(got["image"], "QUJD");
    }

    #[test]
    fn a_placeholder_of_an_image_not_loaded_fails_the_call() {
        let (_, data) = loaded("h1");
        let body = json!([placeholder(Splice::DataUrl, "h2")]);
        let err = to_bytes(&body, &data).unwrap_err();
        assert!(err.to_string().contains("could not be attached"), "{err}");
    }

    #[test]
    fn strings_are_found_past_escapes() {
        let json = br#"{"a\"b":"c\\","d":["\\\"e"]}"#;
        let found: Vec<&[u8]> = strings(json).iter().map(|&(s, e)| &json[s..e]).collect();
        assert_eq!(
            found,
            [&br#""a\"b""#[..], br#""c\\""#, br#""d""#, br#""\\\"e""#]
        );
    }
}
