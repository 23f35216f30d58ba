//! `web_search`'s services and their wire formats (docs/architecture.md#web-access): Brave
//! (`GET /res/v1/web/search`, key in `X-Subscription-Token`, results in `web.results[]`),
//! Tavily (`POST /search` with JSON, key as a bearer token, results in `results[]`) and SearXNG
//! (`GET /search?format=json`, results in `results[]`). Each answer becomes a numbered list of
//! title, URL and snippet.

use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::json;
use url::Url;

use super::config::{SearchConfig, SearchProvider};
use super::{WebCall, body, client};
use crate::tools::output::cap;

/// The most bytes of a search service's answer that are read.
const MAX_ANSWER_BYTES: usize = 2 << 20;
/// The most characters of a title or snippet shown.
const MAX_FIELD_CHARS: usize = 500;

/// A configured search service, ready to use (its key found).
#[derive(Clone)]
pub(crate) struct SearchEngine {
    /// The service.
    provider: SearchProvider,
    /// Its address.
    base: Url,
    /// The host of that address.
    host: String,
    /// Whether the user set the address (then it may be a private one).
    user_base: bool,
    /// The API key, for services that need one.
    key: Option<String>,
    /// Results per search.
    results: u32,
    /// The client for an address the user set (which may be private), made on first use.
    own_client: OnceLock<Result<reqwest::Client, String>>,
}

impl std::fmt::Debug for SearchEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("SearchEngine")
            .field("provider", &self.provider)
            .field("base", &self.base.as_str())
            .finish_non_exhaustive()
    }
}

/// One result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
struct Hit {
    /// The page's title.
    title: String,
    /// Its address.
    url: String,
    /// Brave's snippet.
    description: String,
    /// Tavily's and SearXNG's snippet.
    content: String,
}

/// Brave's answer: `web.results[]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BraveAnswer {
    /// The web results.
    web: Results,
}

/// `results[]`, as Tavily and SearXNG (and Brave's `web`) hold them.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Results {
    /// The results.
    results: Vec<Hit>,
}

impl SearchEngine {
    /// The service `config` describes, with the key `key` (read from the environment variable
    /// it names); refused when the service needs a key and there is none.
    pub(crate) fn new(config: &SearchConfig, key: Option<String>) -> Result<SearchEngine, String> {
        config.validate()?;
        if let Some(env) = config.key_env()
            && key.is_none()
        {
            return Err(format!(
                "web_search is configured with {} but {env} is not set: export it where the daemon or agentctl runs",
                config.provider.name()
            ));
        }
        let base = config
            .base()
            .ok_or_else(|| "[web_search] has no usable base_url".to_string())?;
        Ok(SearchEngine {
            provider: config.provider,
            host: base.host_str().unwrap_or_default().to_string(),
            base,
            user_base: config.user_base(),
            key,
            results: config.results(),
            own_client: OnceLock::new(),
        })
    }

    /// The service's name.
    pub(crate) fn name(&self) -> &'static str {
        self.provider.name()
    }

    /// The client for the service: one of its own when the user set the address (it may be a
    /// private one, and only this host may), else the daemon's for public addresses.
    fn client<'a>(&'a self, call: &'a WebCall) -> Result<&'a reqwest::Client, String> {
        if !self.user_base {
            return call.web.search_client();
        }
        let host = self.host.clone();
        self.own_client
            .get_or_init(|| client::build(Some(Arc::new(move |h: &str| h == host)), "web_search"))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The address of `path` under the base address.
    fn endpoint(&self, path: &str) -> Result<Url, String> {
        let text = format!("{}/{path}", self.base.as_str().trim_end_matches('/'));
        Url::parse(&text).map_err(|e| format!("bad search address {text}: {e}"))
    }

    /// The request of `query` in the service's wire format.
    fn request(
        &self,
        client: &reqwest::Client,
        query: &str,
    ) -> Result<reqwest::RequestBuilder, String> {
        let key = self.key.clone().unwrap_or_default();
        Ok(match self.provider {
            SearchProvider::Brave => {
                let mut url = self.endpoint("res/v1/web/search")?;
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("count", &self.results.to_string());
                client
                    .get(url)
                    .header("X-Subscription-Token", key)
                    .header(reqwest::header::ACCEPT, "application/json")
            }
            SearchProvider::Tavily => client
                .post(self.endpoint("search")?)
                .bearer_auth(key)
                .json(&json!({"query": query, "max_results": self.results})),
            SearchProvider::Searxng => {
                let mut url = self.endpoint("search")?;
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("format", "json");
                client
                    .get(url)
                    .header(reqwest::header::ACCEPT, "application/json")
            }
        })
    }

    /// The results in the service's answer `bytes`, at most as many as configured.
    fn parse(&self, bytes: &[u8]) -> Result<Vec<Hit>, String> {
        let hits = match self.provider {
            SearchProvider::Brave => {
                serde_json::from_slice::<BraveAnswer>(bytes).map(|a| a.web.results)
            }
            SearchProvider::Tavily | SearchProvider::Searxng => {
                serde_json::from_slice::<Results>(bytes).map(|a| a.results)
            }
        }
        .map_err(|e| format!("the {} answer is not what was expected: {e}", self.name()))?;
        Ok(hits.into_iter().take(self.results as usize).collect())
    }
}

/// Searches for `query` with `call`'s configured service; the results as the model reads them,
/// capped at `limit` bytes.
pub(crate) async fn search(call: &WebCall, query: &str, limit: usize) -> Result<String, String> {
    let engine = call.search.as_ref().ok_or_else(|| {
        "web_search is not configured: the user can add a [web_search] section to config.toml"
            .to_string()
    })?;
    let work = async {
        let client = engine.client(call)?;
        let response = engine
            .request(client, query)?
            .send()
            .await
            .map_err(|e| format!("cannot reach {}: {}", engine.name(), client::describe(&e)))?;
        let status = response.status();
        let (bytes, _) = body::read_capped(response, MAX_ANSWER_BYTES).await?;
        if !status.is_success() {
            let said: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
            return Err(format!("{} answered {status}: {said}", engine.name()));
        }
        engine.parse(&bytes)
    };
    let hits = tokio::time::timeout(call.timeout, work)
        .await
        .map_err(|_| {
            format!(
                "{} did not answer within {} s ([web] timeout_secs in config.toml)",
                engine.name(),
                call.timeout.as_secs()
            )
        })??;
    Ok(cap(&render(query, &hits), limit))
}

/// The results as a numbered list.
fn render(query: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("No results for \"{query}\".");
    }
    let clip = |text: &str| -> String {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        match text.char_indices().nth(MAX_FIELD_CHARS) {
            Some((at, _)) => format!("{}…", text.get(..at).unwrap_or_default()),
            None => text,
        }
    };
    let mut out = String::new();
    for (i, hit) in hits.iter().enumerate() {
        let snippet = if hit.description.is_empty() {
            &hit.content
        } else {
            &hit.description
        };
        out.push_str(&format!(
            "{}. {}\n   {}\n",
            i + 1,
            clip(&hit.title),
            clip(&hit.url)
        ));
        let snippet = clip(snippet);
        if !snippet.is_empty() {
            out.push_str(&format!("   {snippet}\n"));
        }
        out.push('\n');
    }
    out.push_str("Use fetch on a URL to read the page.");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(provider: &str) -> SearchEngine {
        let text = format!(
            "provider = \"{provider}\"\nbase_url = \"http://127.0.0.1:9/\"\nmax_results = 2"
        );
        let config: SearchConfig = toml::from_str(&text).unwrap();
        let key = (provider != "searxng").then(|| "k".to_string());
        SearchEngine::new(&config, key).unwrap()
    }

    #[test]
    fn each_answer_format_gives_title_url_and_snippet() {
        let brave = br#"{"web":{"results":[{"title":"Rust","url":"https://rust-lang.org","description":"A <strong>language</strong>"},{"title":"B","url":"u2","description":"d2"},{"title":"C","url":"u3"}]}}"#;
        let hits = engine("brave").parse(brave).unwrap();
        assert_eq!(hits.len(), 2, "max_results");
        assert_eq!(hits[0].url, "https://rust-lang.org");
        let tavily = br#"{"query":"q","results":[{"title":"T","url":"https://t","content":"snip","score":0.9}]}"#;
        let shown = render("q", &engine("tavily").parse(tavily).unwrap());
        assert!(
            shown.starts_with("1. T\n   https://t\n   snip\n"),
            "{shown}"
        );
        let searx = br#"{"results":[{"title":"S","url":"https://s","content":"c","engine":"x"}],"answers":[]}"#;
        assert_eq!(engine("searxng").parse(searx).unwrap()[0].content, "c");
        assert!(engine("brave").parse(b"<html>").is_err());
    }

    #[test]
    fn a_missing_key_says_which_variable_to_set() {
        let config: SearchConfig = toml::from_str("provider = \"brave\"").unwrap();
        let err = SearchEngine::new(&config, None).unwrap_err();
        assert!(err.contains("BRAVE_API_KEY"), "{err}");
        assert!(!format!("{:?}", engine("brave")).contains("\"k\""));
    }

    #[test]
    fn long_fields_are_clipped_and_no_results_said() {
        let hit = Hit {
            title: "t".repeat(2000),
            url: "u".to_string(),
            ..Hit::default()
        };
        let shown = render("q", &[hit]);
        assert!(shown.len() < 1000, "{}", shown.len());
        assert_eq!(render("q", &[]), "No results for \"q\".");
    }
}
