//! The HTTP side every provider shares: send the request, turn an error status into the
//! provider's own message, decode the server-sent events, and hand each event to the provider's
//! parser until the reply is complete. Cancelling drops the request at once.

use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::sse::{SseDecoder, SseEvent};
use super::{ProviderError, StreamDelta, cancellable, retry_after};
use crate::conversation::AssistantReply;

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
pub(crate) struct Wire<'a> {
    /// The provider's name, for messages.
    pub(crate) name: &'static str,
    /// The URL, for messages.
    pub(crate) url: &'a str,
    /// The provider's error type and message in an error body.
    pub(crate) parse_error: fn(&str) -> (Option<String>, Option<String>),
    /// How long the provider may stay silent (before its answer, or within the stream).
    pub(crate) idle_timeout: Duration,
}

/// The most bytes of one reply stream: far more than any real reply, far less than memory.
pub(crate) const MAX_REPLY_BYTES: usize = 64 * 1024 * 1024;
/// The most bytes of an error body read.
pub(crate) const MAX_ERROR_BYTES: usize = 64 * 1024;

/// Sends `post` and parses the streamed reply with `parser`.
pub(crate) async fn post<P: StreamParser>(
    wire: Wire<'_>,
    post: reqwest::RequestBuilder,
    mut parser: P,
    on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    cancel: &CancellationToken,
) -> Result<AssistantReply, ProviderError> {
    let idle = wire.idle_timeout;
    let silent = || {
        ProviderError::Broken(format!(
            "the provider sent nothing for {} s",
            idle.as_secs_f64()
        ))
    };
    let response = cancellable(cancel, tokio::time::timeout(idle, post.send()))
        .await?
        .map_err(|_| silent())?
        .map_err(|e| ProviderError::Connect {
            url: wire.url.to_string(),
            message: error_chain(&e),
        })?;
    let status = response.status();
    if !status.is_success() {
        let retry_after = retry_after(response.headers());
        let body = error_body(response, idle);
        let text = cancellable(cancel, body).await?;
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
    let mut received = 0usize;
    let mut silence = Silence::new(idle);
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ProviderError::Cancelled),
            next = bytes.next() => next,
            () = silence.expired() => return Err(silent()),
        };
        silence.heard();
        let chunk = match next {
            Some(Ok(chunk)) => chunk,
            Some(Err(err)) => return Err(ProviderError::Broken(error_chain(&err))),
            None => return parser.finish(false),
        };
        received += chunk.len();
        if received > MAX_REPLY_BYTES {
            return Err(ProviderError::Invalid(format!(
                "the reply stream passed {} MiB",
                MAX_REPLY_BYTES >> 20
            )));
        }
        decoder
            .feed(&chunk, &mut events)
            .map_err(|e| ProviderError::Invalid(e.to_string()))?;
        for event in events.drain(..) {
            if parser.apply(event, on_delta)? {
                return parser.finish(true);
            }
        }
    }
}

/// Parses a recorded stream (the bytes of a whole response body), as `post` would.
pub fn decode<P: StreamParser>(
    mut parser: P,
    body: &[u8],
    on_delta: &mut (dyn FnMut(StreamDelta) + Send),
) -> Result<AssistantReply, ProviderError> {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    decoder
        .feed(body, &mut events)
        .map_err(|e| ProviderError::Invalid(e.to_string()))?;
    for event in events {
        if parser.apply(event, on_delta)? {
            return parser.finish(true);
        }
    }
    parser.finish(false)
}

/// A watch on a stream's silence. Hearing from the stream only notes the time; the timer is
/// set again only when it fires, so a fast stream costs no timer work per chunk.
struct Silence {
    limit: Duration,
    last: tokio::time::Instant,
    timer: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl Silence {
    fn new(limit: Duration) -> Silence {
        let now = tokio::time::Instant::now();
        Silence {
            limit,
            last: now,
            timer: Box::pin(tokio::time::sleep_until(now + limit)),
        }
    }

    fn heard(&mut self) {
        self.last = tokio::time::Instant::now();
    }

    /// Completes once nothing was heard for the limit.
    async fn expired(&mut self) {
        loop {
            self.timer.as_mut().await;
            let due = self.last + self.limit;
            if tokio::time::Instant::now() >= due {
                return;
            }
            self.timer.as_mut().reset(due);
        }
    }
}

/// The first [`MAX_ERROR_BYTES`] of an error response's body, as text; what does not come
/// within `idle` is not waited for.
async fn error_body(response: reqwest::Response, idle: Duration) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while body.len() < MAX_ERROR_BYTES {
        match tokio::time::timeout(idle, stream.next()).await {
            Ok(Some(Ok(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BYTES);
    String::from_utf8_lossy(&body).into_owned()
}

/// The full message of an error and its sources.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
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
