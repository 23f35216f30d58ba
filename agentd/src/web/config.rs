//! `[web]` and `[web_search]` in config.toml (docs/architecture.md#web-access).
//!
//! ```toml
//! [web]
//! timeout_secs = 30              # a whole fetch or search, redirects included
//!
//! [web_search]                   # without it, `web_search` is not offered
//! provider = "brave"             # "brave", "tavily" or "searxng"
//! api_key_env = "BRAVE_API_KEY"  # the default for brave; TAVILY_API_KEY for tavily
//! base_url = "https://api.search.brave.com"  # required for searxng
//! max_results = 5
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The most results a search may ask for.
pub(crate) const MAX_RESULTS: u32 = 20;
/// Results of a search when `max_results` is not set.
pub(crate) const DEFAULT_RESULTS: u32 = 5;

/// `[web]`: how the daemon's web calls behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct WebConfig {
    /// Seconds a whole `fetch` (redirects and download included) or search may take.
    pub(crate) timeout_secs: u64,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig { timeout_secs: 30 }
    }
}

impl WebConfig {
    /// How long a web call may take.
    pub(crate) fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.max(1))
    }
}

/// A search service `web_search` can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SearchProvider {
    /// Brave Search's web search API.
    Brave,
    /// Tavily's search API.
    Tavily,
    /// A SearXNG instance (its JSON output must be enabled).
    Searxng,
}

impl SearchProvider {
    /// The name as written in the config.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SearchProvider::Brave => "brave",
            SearchProvider::Tavily => "tavily",
            SearchProvider::Searxng => "searxng",
        }
    }

    /// The service's address when `base_url` is not set.
    fn default_base(self) -> Option<&'static str> {
        match self {
            SearchProvider::Brave => Some("https://api.search.brave.com"),
            SearchProvider::Tavily => Some("https://api.tavily.com"),
            SearchProvider::Searxng => None,
        }
    }

    /// The environment variable with the key when `api_key_env` is not set.
    fn default_key_env(self) -> Option<&'static str> {
        match self {
            SearchProvider::Brave => Some("BRAVE_API_KEY"),
            SearchProvider::Tavily => Some("TAVILY_API_KEY"),
            SearchProvider::Searxng => None,
        }
    }
}

/// `[web_search]`: the search service `web_search` uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchConfig {
    /// The service.
    pub(crate) provider: SearchProvider,
    /// The environment variable (of the client, else the daemon) holding the API key.
    pub(crate) api_key_env: Option<String>,
    /// The service's address (required for SearXNG). A private address is allowed here: the
    /// user wrote it.
    pub(crate) base_url: Option<String>,
    /// Results per search, 1 to [`MAX_RESULTS`].
    pub(crate) max_results: Option<u32>,
}

impl SearchConfig {
    /// Checks what the types cannot: an address where one is needed, and a sane count.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let provider = self.provider.name();
        match &self.base_url {
            None if self.provider.default_base().is_none() => {
                return Err(format!(
                    "[web_search] provider = \"{provider}\" needs base_url, the address of your instance (e.g. base_url = \"http://127.0.0.1:8888\")"
                ));
            }
            Some(base) => {
                let parsed = url::Url::parse(base)
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
                if parsed.is_none() {
                    return Err(format!(
                        "[web_search] base_url = \"{base}\" is not an http or https address"
                    ));
                }
            }
            None => {}
        }
        if self.api_key_env.is_some() && self.provider.default_key_env().is_none() {
            return Err(format!(
                "[web_search] provider = \"{provider}\" takes no api_key_env; remove it"
            ));
        }
        if let Some(n) = self.max_results
            && !(1..=MAX_RESULTS).contains(&n)
        {
            return Err(format!(
                "[web_search] max_results = {n} is out of range; use 1 to {MAX_RESULTS}"
            ));
        }
        Ok(())
    }

    /// The service's address; `None` only for a config [`SearchConfig::validate`] refuses.
    pub(crate) fn base(&self) -> Option<url::Url> {
        let text = self.base_url.as_deref().or(self.provider.default_base())?;
        url::Url::parse(text).ok()
    }

    /// The host searches go to, which the permission rules judge (`web_search:HOST`).
    pub(crate) fn host(&self) -> Option<String> {
        self.base()?.host_str().map(str::to_string)
    }

    /// Whether the user set the address (then it may be a private one).
    pub(crate) fn user_base(&self) -> bool {
        self.base_url.is_some()
    }

    /// The environment variable with the key, if the service needs one.
    pub(crate) fn key_env(&self) -> Option<&str> {
        self.api_key_env
            .as_deref()
            .or(self.provider.default_key_env())
    }

    /// Results per search.
    pub(crate) fn results(&self) -> u32 {
        self.max_results
            .unwrap_or(DEFAULT_RESULTS)
            .clamp(1, MAX_RESULTS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<SearchConfig, String> {
        let config: SearchConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        config.validate().map(|()| config)
    }

    #[test]
    fn each_provider_has_its_address_and_key_variable() {
        let brave = parsed("provider = \"brave\"").unwrap();
        assert_eq!(brave.host().as_deref(), Some("api.search.brave.com"));
        assert_eq!(brave.key_env(), Some("BRAVE_API_KEY"));
        assert!(!brave.user_base());
        let tavily = parsed("provider = \"tavily\"\napi_key_env = \"MY_KEY\"").unwrap();
        assert_eq!(tavily.key_env(), Some("MY_KEY"));
        let searx = parsed("provider = \"searxng\"\nbase_url = \"http://10.0.0.5:8888/\"").unwrap();
        assert_eq!(searx.host().as_deref(), Some("10.0.0.5"));
        assert_eq!(searx.key_env(), None);
        assert!(searx.user_base());
        assert_eq!(searx.results(), DEFAULT_RESULTS);
    }

    #[test]
    fn a_bad_provider_or_setting_is_a_clear_error() {
        let unknown = parsed("provider = \"bing\"").unwrap_err();
        assert!(
            unknown.contains("bing") && unknown.contains("searxng"),
            "{unknown}"
        );
        let no_base = parsed("provider = \"searxng\"").unwrap_err();
        assert!(no_base.contains("needs base_url"), "{no_base}");
        let bad_base = parsed("provider = \"brave\"\nbase_url = \"ftp://x\"").unwrap_err();
        assert!(bad_base.contains("not an http"), "{bad_base}");
        let many = parsed("provider = \"brave\"\nmax_results = 500").unwrap_err();
        assert!(many.contains("1 to 20"), "{many}");
        let typo = parsed("provider = \"brave\"\nmax_result = 5").unwrap_err();
        assert!(typo.contains("max_result"), "{typo}");
    }
}
