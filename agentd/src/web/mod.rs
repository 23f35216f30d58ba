//! The daemon's web access (docs/architecture.md#web-access): `fetch` and `web_search` run
//! here, in the daemon, not in the session's sandbox. The pieces: the address guard
//! ([`guard`]) inside the resolver ([`resolver`]) of the HTTP clients ([`client`]), the hosts
//! the rules reach ([`reach`]), one fetch with its redirects ([`fetcher`]), bodies read up to a
//! cap ([`body`]), HTML to markdown ([`markdown`]), the daemon's page cache ([`cache`],
//! [`page`]) and the search services ([`search`], configured in [`config`]).

pub(crate) mod body;
pub(crate) mod cache;
pub(crate) mod client;
pub(crate) mod config;
pub(crate) mod fetcher;
pub(crate) mod guard;
pub(crate) mod markdown;
pub(crate) mod page;
pub(crate) mod reach;
pub(crate) mod resolver;
pub(crate) mod search;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub(crate) use config::{SearchConfig, WebConfig};
pub(crate) use reach::{HostVerdict, NoRules, Reach};
pub(crate) use search::SearchEngine;

/// What the daemon's web calls share: the page cache and the clients that may reach public
/// addresses only. Made once per daemon; clones share it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Web {
    inner: Arc<Shared>,
}

/// The shared part of [`Web`].
#[derive(Debug, Default)]
struct Shared {
    /// Pages fetched in the last 15 minutes.
    cache: cache::PageCache,
    /// `fetch`'s client for hosts no rule names, made on first use.
    fetch_client: OnceLock<Result<reqwest::Client, String>>,
    /// `web_search`'s client for services at a public address, made on first use.
    search_client: OnceLock<Result<reqwest::Client, String>>,
}

impl Web {
    /// The page cache.
    pub(crate) fn cache(&self) -> &cache::PageCache {
        &self.inner.cache
    }

    /// `fetch`'s client for hosts whose addresses must be public.
    pub(crate) fn public_client(&self) -> Result<&reqwest::Client, String> {
        self.inner
            .fetch_client
            .get_or_init(|| client::build(None, "fetch"))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// `web_search`'s client for a service whose address must be public.
    pub(crate) fn search_client(&self) -> Result<&reqwest::Client, String> {
        self.inner
            .search_client
            .get_or_init(|| client::build(None, "web_search"))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// What one `fetch` or `web_search` call is given.
#[derive(Debug, Clone)]
pub(crate) struct WebCall {
    /// The daemon's cache and clients.
    pub(crate) web: Web,
    /// The rules the call carries, for the hosts it meets after its permission was decided.
    pub(crate) reach: Arc<dyn Reach>,
    /// The run's search service, when one is configured (and its key found).
    pub(crate) search: Option<Arc<SearchEngine>>,
    /// How long the whole call may take.
    pub(crate) timeout: Duration,
}

impl WebCall {
    /// A call with no rules (every other host asks, no private address), no search service
    /// and the default timeout (tests and benchmarks).
    pub(crate) fn standalone() -> WebCall {
        WebCall {
            web: Web::default(),
            reach: Arc::new(NoRules),
            search: None,
            timeout: WebConfig::default().timeout(),
        }
    }
}
