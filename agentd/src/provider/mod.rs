//! Model providers: one request shape in, one reply shape out, streamed over HTTP with SSE.
//! Each provider maps the history to its wire format and its stream back to an
//! [`AssistantReply`]; the loop never sees a provider's wire format.

pub mod anthropic;
mod body;
mod choice;
mod endpoint;
mod images;
pub(crate) mod local;
pub(crate) mod models;
pub mod openai;
mod openai_messages;
pub(crate) mod responses;
mod responses_chain;
mod responses_reply;
pub(crate) mod retry;

pub(crate) use choice::{Choice, Names};
pub(crate) use responses_chain::Chain as ResponsesChain;
pub(crate) mod sse;
pub mod stream;

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::conversation::{AssistantReply, Message};
pub(crate) use crate::tool_spec::ToolSpec;

/// How long a reply stream may stay silent before it counts as broken, unless configured.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// One model call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ModelRequest<'a> {
    /// The model name.
    pub(crate) model: &'a str,
    /// The system prompt.
    pub(crate) system: &'a str,
    /// The history so far.
    pub(crate) messages: &'a [Message],
    /// The bytes of the history's images; an image not loaded is sent as its label.
    pub(crate) images: &'a crate::images::ImageData,
    /// The tools the model may call.
    pub(crate) tools: &'a [ToolSpec],
    /// The output token limit of the reply.
    pub(crate) max_tokens: u32,
    /// At most one tool call per reply (small models otherwise go on calling in a loop).
    pub(crate) one_call: bool,
}

/// A piece of a reply as it streams, for live display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamDelta {
    /// Text for the user.
    Text(String),
    /// Visible reasoning.
    Thinking(String),
}

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// No API key is configured.
    #[error(
        "{env} is not set. Export your API key (`export {env}=...`), or run against a local \
         OpenAI-compatible server (llama.cpp, Ollama, vLLM) with `--provider openai` and \
         OPENAI_BASE_URL."
    )]
    MissingKey {
        /// The environment variable that should hold the key.
        env: String,
    },
    /// The provider answered with an HTTP error.
    #[error("{provider} API error {status}{}: {message}", error_type.as_ref().map(|t| format!(" ({t})")).unwrap_or_default())]
    Http {
        /// The provider's name.
        provider: &'static str,
        /// The HTTP status.
        status: u16,
        /// The provider's error type, if it named one.
        error_type: Option<String>,
        /// The provider's message.
        message: String,
        /// How long the provider asked us to wait before retrying.
        retry_after: Option<Duration>,
    },
    /// The provider reported an error inside the stream.
    #[error("{provider} stream error ({error_type}): {message}")]
    Stream {
        /// The provider's name.
        provider: &'static str,
        /// The provider's error type.
        error_type: String,
        /// The provider's message.
        message: String,
    },
    /// The provider could not be reached.
    #[error("cannot reach {url}: {message}")]
    Connect {
        /// The URL tried.
        url: String,
        /// What failed.
        message: String,
    },
    /// The stream broke or ended before the reply was complete.
    #[error("the reply stream broke before the reply was complete: {0}")]
    Broken(String),
    /// The provider sent something that is not its documented format.
    #[error("the provider sent an invalid reply: {0}")]
    Invalid(String),
    /// The request's body could not be built (an image of the history could not be attached).
    #[error("the request to the model could not be built: {0}")]
    Body(String),
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
}

/// A configured model provider.
#[derive(Debug, Clone)]
pub(crate) enum Provider {
    /// Anthropic's Messages API.
    Anthropic(anthropic::Anthropic),
    /// OpenAI's Chat Completions API and compatible local servers.
    OpenAi(openai::OpenAi),
    /// OpenAI's Responses API.
    Responses(responses::Responses),
}

impl Provider {
    /// Whether the provider is a server other than the vendor's own (a local one, usually).
    pub(crate) fn is_local(&self) -> bool {
        match self {
            Provider::Anthropic(provider) => provider.is_local(),
            Provider::OpenAi(provider) => provider.is_local(),
            Provider::Responses(provider) => provider.server().is_local(),
        }
    }

    /// The ids of the models the provider serves, as its `GET /v1/models` lists them.
    pub(crate) async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        match self {
            Provider::Anthropic(provider) => provider.list_models().await,
            Provider::OpenAi(provider) => provider.list_models().await,
            Provider::Responses(provider) => provider.server().list_models().await,
        }
    }

    /// The model to use when none was named: the only one a local server serves.
    pub(crate) async fn only_model(&self) -> Result<String, ProviderError> {
        match self {
            Provider::OpenAi(provider) => provider.only_model().await,
            Provider::Responses(provider) => provider.server().only_model().await,
            Provider::Anthropic(_) => Err(ProviderError::Invalid(
                "no model was named; name one with --model".to_string(),
            )),
        }
    }

    /// The context window a local server runs `model` with, where it says.
    pub(crate) async fn server_context_window(&self, model: &str) -> Option<u64> {
        match self {
            Provider::OpenAi(provider) if provider.is_local() => {
                provider.server_context_window(model).await
            }
            Provider::Responses(provider) if provider.server().is_local() => {
                provider.server().server_context_window(model).await
            }
            _ => None,
        }
    }

    /// Lets a Responses client continue the replies of `chain`, which the session keeps from
    /// run to run (`previous_response_id`); other providers keep nothing.
    pub(crate) fn continue_chain(&mut self, chain: &std::sync::Arc<ResponsesChain>) {
        if let Provider::Responses(provider) = self {
            provider.continue_chain(chain.clone());
        }
    }

    /// Streams one reply, passing text and reasoning to `on_delta` as they arrive. A reply is
    /// returned only when it arrived whole; cancelling drops the HTTP request.
    pub(crate) async fn stream(
        &self,
        request: ModelRequest<'_>,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, ProviderError> {
        match self {
            Provider::Anthropic(provider) => provider.stream(request, on_delta, cancel).await,
            Provider::OpenAi(provider) => provider.stream(request, on_delta, cancel).await,
            Provider::Responses(provider) => provider.stream(request, on_delta, cancel).await,
        }
    }
}

impl ProviderError {
    /// Whether the provider refused the request because the prompt does not fit the model's
    /// context window (each provider words it its own way).
    pub(crate) fn is_context_overflow(&self) -> bool {
        let message = match self {
            ProviderError::Http { status: 413, .. } => return true,
            ProviderError::Http { message, .. } | ProviderError::Stream { message, .. } => {
                message.to_ascii_lowercase()
            }
            _ => return false,
        };
        let by_type = matches!(
            self,
            ProviderError::Http { error_type: Some(t), .. } if t == "context_length_exceeded" || t == "exceed_context_size_error"
        );
        by_type
            || [
                "prompt is too long",
                "context_length_exceeded",
                "maximum context length",
                "exceeds the available context size",
                "context window",
                "input is too long",
            ]
            .iter()
            .any(|needle| message.contains(needle))
    }

    /// Whether the provider refused the request because of an image in it (one it cannot
    /// decode, or of a size or kind it does not take).
    pub(crate) fn refuses_image(&self) -> bool {
        match self {
            // Too large: the images are most of a request that has any.
            ProviderError::Http { status: 413, .. } => true,
            ProviderError::Http {
                status: 400 | 415 | 422,
                message,
                ..
            } => message.to_ascii_lowercase().contains("image"),
            _ => false,
        }
    }

    /// Whether trying the same request again may succeed: rate limits, overload, server errors,
    /// timeouts, and connections that failed or broke.
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            ProviderError::Http {
                status, error_type, ..
            } => {
                matches!(status, 408 | 409 | 425 | 429)
                    || *status >= 500
                    || error_type.as_deref() == Some("overloaded_error")
            }
            ProviderError::Stream { error_type, .. } => {
                matches!(
                    error_type.as_str(),
                    "overloaded_error"
                        | "api_error"
                        | "rate_limit_error"
                        | "rate_limit_exceeded"
                        | "server_error"
                )
            }
            ProviderError::Connect { .. } | ProviderError::Broken(_) => true,
            ProviderError::MissingKey { .. }
            | ProviderError::Invalid(_)
            | ProviderError::Body(_)
            | ProviderError::Cancelled => false,
        }
    }

    /// How long the provider asked to wait, if it did.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// Reads `retry-after` (seconds, possibly fractional) from a response's headers.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)))
}

/// Awaits `future` unless `cancel` fires first.
pub(crate) async fn cancellable<T>(
    cancel: &CancellationToken,
    future: impl Future<Output = T>,
) -> Result<T, ProviderError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ProviderError::Cancelled),
        value = future => Ok(value),
    }
}
