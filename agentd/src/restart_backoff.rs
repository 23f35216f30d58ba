//! How long a server the daemon keeps (an MCP server, a language server) waits before it is
//! started again after failing: 1, 2, 4 ... seconds, at most a minute.

use std::time::Duration;

/// The longest wait between two tries to start a server.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The wait after `failed` failures in a row before the next try: none after none, then 1, 2,
/// 4 ... seconds, at most [`MAX_BACKOFF`].
pub(crate) fn backoff(failed: u32) -> Duration {
    match failed {
        0 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 1).min(6)).min(MAX_BACKOFF),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_a_minute() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(4));
        assert_eq!(backoff(30), MAX_BACKOFF);
    }
}
