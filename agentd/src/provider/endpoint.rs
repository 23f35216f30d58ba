//! What every wire format shares about the server it talks to: the HTTP client, the base URL
//! (the vendor's own or another, usually local, server), how long a reply may stay silent, and
//! posting a request whose reply streams back.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::stream::{self, StreamParser, Wire};
use super::{ProviderError, StreamDelta};
use crate::conversation::AssistantReply;

/// What the endpoint needs to know of a wire format.
pub(crate) struct Format {
    /// The format's name, for messages.
    pub(crate) name: &'static str,
    /// The error type and message in an error body.
    pub(crate) parse_error: fn(&str) -> (Option<String>, Option<String>),
}

/// A provider's server.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// The HTTP client (shared by every provider of the daemon).
    pub(crate) http: reqwest::Client,
    /// The base URL, without a trailing `/`.
    pub(crate) base_url: String,
    vendor_url: &'static str,
    idle_timeout: Duration,
}

impl Endpoint {
    /// The server at `base_url`; `vendor_url` is the vendor's own.
    pub(crate) fn new(http: reqwest::Client, base_url: &str, vendor_url: &'static str) -> Endpoint {
        Endpoint {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            vendor_url,
            idle_timeout: super::DEFAULT_IDLE_TIMEOUT,
        }
    }

    /// The same server, a reply stream silent for `idle` counting as broken.
    pub(crate) fn with_idle_timeout(self, idle: Duration) -> Endpoint {
        Endpoint {
            idle_timeout: idle,
            ..self
        }
    }

    /// Whether this is a server other than the vendor's own (a local one, usually).
    pub(crate) fn is_local(&self) -> bool {
        self.base_url != self.vendor_url.trim_end_matches('/')
    }

    /// Posts `post` (to `url`, built on this endpoint) and streams the reply through `parser`.
    pub(crate) async fn stream<P: StreamParser>(
        &self,
        format: &Format,
        url: &str,
        post: reqwest::RequestBuilder,
        parser: P,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, ProviderError> {
        let wire = Wire {
            name: format.name,
            url,
            parse_error: format.parse_error,
            idle_timeout: self.idle_timeout,
        };
        stream::post(wire, post, parser, on_delta, cancel).await
    }
}
