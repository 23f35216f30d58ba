//! The run's search service from the configuration: `[web_search]` with its key found in the
//! client's environment first, the daemon's second (docs/architecture.md#web-access).

use super::Config;
use super::providers::lookup;
use crate::web::SearchEngine;

impl Config {
    /// The search service a run whose client sent `env` uses: `None` when none is configured,
    /// `Err` saying what is missing when it cannot be used.
    pub(crate) fn search_engine(
        &self,
        env: &[(String, String)],
    ) -> Option<Result<SearchEngine, String>> {
        let config = self.web_search.as_ref()?;
        let key = config.key_env().and_then(|name| lookup(env, name));
        Some(SearchEngine::new(config, key))
    }
}
