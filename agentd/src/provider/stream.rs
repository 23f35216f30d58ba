//! The HTTP side every provider shares: send the request, turn an error status into the
//! provider's own message, decode the server-sent events, and hand each event to the provider's
//! parser until the reply is complete. Cancelling drops the request at once.

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::sse::{SseDecoder, SseEvent};
use super::{ProviderError, StreamDelta, cancellable, retry_after};
use crate::history::AssistantReply;

/// Turns one provider's stream events into a reply.
pub trait StreamParser {
    /// Applies one event; `Ok(true)` when the stream says the reply is complete.
    fn apply(
        &mut self,
        event: SseEvent,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<bool, ProviderError>;

    /// The reply, once the stream said it is complete (`complete`) or simply ended.
    fn finish(self, complete: bool) -> Result<AssistantReply, ProviderError>;
}

/// What the shared code needs to know of a provider.
pub struct Wire<'a> {
    /// The provider's name, for messages.
    pub name: &'static str,
    /// The URL, for messages.
    pub url: &'a str,
    /// The provider's error type and message in an error body.
    pub parse_error: fn(&str) -> (Option<String>, Option<String>),
}

/// Sends `post` and parses the streamed reply with `parser`.
pub async fn post<P: StreamParser>(
    wire: Wire<'_>,
    post: reqwest::RequestBuilder,
    mut parser: P,
    on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    cancel: &CancellationToken,
) -> Result<AssistantReply, ProviderError> {
    let response = cancellable(cancel, post.send())
        .await?
        .map_err(|e| ProviderError::Connect {
            url: wire.url.to_string(),
            message: error_chain(&e),
        })?;
    let status = response.status();
    if !status.is_success() {
        let retry_after = retry_after(response.headers());
        let text = cancellable(cancel, response.text())
            .await?
            .unwrap_or_default();
        let (error_type, message) = (wire.parse_error)(&text);
        return Err(ProviderError::Http {
            provider: wire.name,
            status: status.as_u16(),
            error_type,
            message: message.unwrap_or_else(|| {
                if text.trim().is_empty() {
                    status
                        .canonical_reason()
                        .unwrap_or("no message")
                        .to_string()
                } else {
                    text.trim().chars().take(500).collect()
                }
            }),
            retry_after,
        });
    }
    let mut bytes = response.bytes_stream();
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    loop {
        let chunk = match cancellable(cancel, bytes.next()).await? {
            Some(Ok(chunk)) => chunk,
            Some(Err(err)) => return Err(ProviderError::Broken(error_chain(&err))),
            None => return parser.finish(false),
        };
        decoder.feed(&chunk, &mut events);
        for event in events.drain(..) {
            if parser.apply(event, on_delta)? {
                return parser.finish(true);
            }
        }
    }
}

/// Parses a recorded stream (the bytes of a whole response body), as [`post`] would.
pub fn decode<P: StreamParser>(
    mut parser: P,
    body: &[u8],
    on_delta: &mut (dyn FnMut(StreamDelta) + Send),
) -> Result<AssistantReply, ProviderError> {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    decoder.feed(body, &mut events);
    for event in events {
        if parser.apply(event, on_delta)? {
            return parser.finish(true);
        }
    }
    parser.finish(false)
}

/// The full message of an error and its sources.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = inner.source();
    }
    message
}
