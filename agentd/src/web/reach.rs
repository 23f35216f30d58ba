//! What the permission rules say about the hosts a web call meets after its permission was
//! decided (docs/architecture.md#web-access): a redirect to another host, a cached page that
//! passed through others. The permission module answers (it knows the mode, the grants and the
//! rules); the web calls only ask, so they never name it.

/// Whether a web call may go on to a host it was not asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostVerdict {
    /// The mode, a grant or a rule lets it run without asking.
    Allowed,
    /// A person would be asked: the call stops and tells the model the address, so that a
    /// call of its own asks.
    Ask,
    /// A deny rule refuses it; the reason names the rule.
    Denied(String),
}

/// The rules one web call carries, as they stood when its permission was decided.
pub(crate) trait Reach: Send + Sync + std::fmt::Debug {
    /// Whether a call to `host` would run without asking, ask, or be refused.
    fn verdict(&self, host: &str) -> HostVerdict;

    /// Whether an allow rule names `host` itself (not a catch-all such as `fetch:*`): only
    /// then may its addresses be loopback, private or link-local ones.
    fn names(&self, host: &str) -> bool;
}

/// The rules of a call nothing was decided for (tests, benchmarks): every other host asks,
/// and no host may use a private address.
#[derive(Debug, Default)]
pub(crate) struct NoRules;

impl Reach for NoRules {
    fn verdict(&self, _host: &str) -> HostVerdict {
        HostVerdict::Ask
    }

    fn names(&self, _host: &str) -> bool {
        false
    }
}
