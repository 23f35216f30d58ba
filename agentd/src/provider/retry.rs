//! Retrying model calls that failed for a passing reason (docs/architecture.md#providers): rate
//! limits, overload, server errors, connections that failed or broke mid-reply. Exponential backoff
//! with jitter, `retry-after` honoured, a bounded number of attempts, and a cancel that ends a wait
//! at once. Every provider goes through here.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{ModelRequest, Provider, ProviderError, StreamDelta};
use crate::conversation::AssistantReply;

/// The longest wait honoured from a `retry-after` header.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// How to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt.
    pub(crate) max_retries: u32,
    /// The wait before the first retry; it doubles with each retry.
    pub(crate) base: Duration,
    /// The longest computed wait.
    pub(crate) max_wait: Duration,
}

impl RetryPolicy {
    /// The wait before retry `attempt` (from 1), with ±25% jitter so that many clients do not
    /// retry in step.
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let exp = self.base.saturating_mul(1u32 << (attempt - 1).min(16));
        let capped = exp.min(self.max_wait);
        capped.mul_f64(0.75 + 0.5 * jitter())
    }
}

/// A number in [0, 1), different on every call.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// A retry about to happen.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Retry {
    /// The retry's number, from 1.
    pub(crate) attempt: u32,
    /// The wait before it.
    pub(crate) wait: Duration,
    /// What failed.
    pub(crate) reason: String,
}

/// Streams a reply, retrying transient failures; `on_retry` hears of each retry before its
/// wait. A context overflow is not retried here (compaction handles it). The last error is
/// returned when the retries run out.
pub(crate) async fn stream(
    provider: &Provider,
    request: ModelRequest<'_>,
    on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    cancel: &CancellationToken,
    policy: RetryPolicy,
    on_retry: &mut (dyn FnMut(&Retry) + Send),
) -> Result<AssistantReply, ProviderError> {
    let mut attempt = 0;
    loop {
        let error = match provider.stream(request, on_delta, cancel).await {
            Ok(reply) => return Ok(reply),
            Err(error) => error,
        };
        if !error.is_transient() || error.is_context_overflow() || attempt >= policy.max_retries {
            return Err(error);
        }
        attempt += 1;
        let wait = error
            .retry_after()
            .map(|after| after.min(MAX_RETRY_AFTER))
            .unwrap_or_else(|| policy.backoff(attempt));
        on_retry(&Retry {
            attempt,
            wait,
            reason: error.to_string(),
        });
        tokio::select! {
            () = cancel.cancelled() => return Err(ProviderError::Cancelled),
            () = tokio::time::sleep(wait) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let policy = RetryPolicy {
            max_retries: 4,
            base: Duration::from_millis(1000),
            max_wait: Duration::from_millis(5000),
        };
        for (attempt, nominal) in [(1, 1000), (2, 2000), (3, 4000), (4, 5000), (9, 5000)] {
            let wait = policy.backoff(attempt).as_millis() as u64;
            assert!(
                wait >= nominal * 3 / 4 && wait <= nominal * 5 / 4,
                "attempt {attempt}: {wait}"
            );
        }
    }

    #[test]
    fn only_passing_failures_are_transient() {
        let http = |status, kind: Option<&str>| ProviderError::Http {
            provider: "x",
            status,
            error_type: kind.map(str::to_string),
            message: "m".into(),
            retry_after: None,
        };
        assert!(http(429, None).is_transient());
        assert!(http(529, Some("overloaded_error")).is_transient());
        assert!(http(500, None).is_transient());
        assert!(http(408, None).is_transient());
        assert!(!http(400, Some("invalid_request_error")).is_transient());
        assert!(!http(401, None).is_transient());
        assert!(ProviderError::Broken("cut".into()).is_transient());
        let overflow = ProviderError::Http {
            provider: "Anthropic",
            status: 400,
            error_type: Some("invalid_request_error".into()),
            message: "prompt is too long: 210000 tokens > 200000 maximum".into(),
            retry_after: None,
        };
        assert!(overflow.is_context_overflow());
    }
}
