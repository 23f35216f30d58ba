//! Choosing a run's provider from the configuration: the profile, its wire format, key and
//! base URL (the client's environment first, the daemon's second), the model, the context
//! window, the output limit and whether calls written as text are read.

use crate::config::{
    Config, DEFAULT_MAX_TOKENS, LOCAL_MAX_TOKENS, ProviderKind, ProviderProfile, TextToolCalls,
};
use crate::prices::Price;
use crate::provider::{Provider, ProviderError, anthropic, openai};

/// What a run talks to, chosen once when it starts: the provider and model (or why there is
/// none), its output limit, the context window the configuration gives, its price and whether
/// calls written as text are read.
pub struct Choice {
    /// The provider and model, or why there is none.
    pub provider: Result<(Provider, String), ProviderError>,
    /// The output token limit of one reply.
    pub max_tokens: u32,
    /// The context window in tokens, when the configuration gives it; else a local server is
    /// asked, or the model family's is taken.
    pub context_window: Option<u64>,
    /// The model's price, when it is known.
    pub price: Option<Price>,
    /// Whether tool calls a model writes as text are read as calls.
    pub text_tool_calls: bool,
}

impl Config {
    /// Chooses a run's provider: profile `profile` (or the default) with `model` (or the
    /// configured one), keys and base URLs from `env` first.
    pub fn choose(
        &self,
        http: &reqwest::Client,
        profile: Option<&str>,
        model: Option<&str>,
        env: &[(String, String)],
    ) -> Choice {
        let provider = self.provider(http, profile, model, env);
        let local = provider.as_ref().is_ok_and(|(p, _)| p.is_local());
        let price = provider
            .as_ref()
            .ok()
            .and_then(|(_, model)| crate::prices::price_of(&self.prices, model));
        Choice {
            provider,
            max_tokens: self.max_tokens(local),
            context_window: self.configured_context_window(profile),
            price,
            text_tool_calls: self.text_tool_calls(profile),
        }
    }

    /// Builds the provider `name` (or the default) with `model` (or the configured one), taking
    /// keys and base URLs from `env` first and the daemon's environment second.
    pub fn provider(
        &self,
        http: &reqwest::Client,
        name: Option<&str>,
        model: Option<&str>,
        env: &[(String, String)],
    ) -> Result<(Provider, String), ProviderError> {
        let name = name.unwrap_or(&self.provider);
        let profile = match self.providers.get(name) {
            Some(profile) => profile.clone(),
            None => ProviderProfile {
                kind: match name {
                    "openai" => ProviderKind::Openai,
                    "anthropic" => ProviderKind::Anthropic,
                    other => {
                        return Err(ProviderError::Invalid(format!(
                            "no provider `{other}`; use anthropic, openai or a profile from config.toml"
                        )));
                    }
                },
                base_url: None,
                api_key_env: None,
                model: None,
                context_window: None,
                text_tool_calls: TextToolCalls::Auto,
            },
        };
        let lookup = |key: &str| {
            env.iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .or_else(|| std::env::var(key).ok())
                .filter(|v| !v.trim().is_empty())
        };
        match profile.kind {
            ProviderKind::Anthropic => {
                let key_env = profile
                    .api_key_env
                    .as_deref()
                    .unwrap_or("ANTHROPIC_API_KEY");
                let key = lookup(key_env).ok_or_else(|| ProviderError::MissingKey {
                    env: key_env.to_string(),
                })?;
                let base = profile
                    .base_url
                    .or_else(|| lookup("ANTHROPIC_BASE_URL"))
                    .unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.to_string());
                let model = model
                    .map(str::to_string)
                    .or(profile.model)
                    .or_else(|| self.model.clone())
                    .unwrap_or_else(|| anthropic::DEFAULT_MODEL.to_string());
                let provider = anthropic::Anthropic::new(http.clone(), &base, key)
                    .with_idle_timeout(self.stream_idle_timeout());
                Ok((Provider::Anthropic(provider), model))
            }
            ProviderKind::Openai => {
                let key_env = profile.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
                let base = profile
                    .base_url
                    .or_else(|| lookup("OPENAI_BASE_URL"))
                    .unwrap_or_else(|| openai::DEFAULT_BASE_URL.to_string());
                let key = lookup(key_env);
                // Local servers need no key; the public API does.
                if key.is_none() && base.trim_end_matches('/') == openai::DEFAULT_BASE_URL {
                    return Err(ProviderError::MissingKey {
                        env: key_env.to_string(),
                    });
                }
                // A local server with no model named: the run asks it which it serves.
                let local = base.trim_end_matches('/') != openai::DEFAULT_BASE_URL;
                let model = model
                    .map(str::to_string)
                    .or(profile.model)
                    .or_else(|| self.model.clone())
                    .unwrap_or_else(|| {
                        if local {
                            String::new()
                        } else {
                            openai::DEFAULT_MODEL.to_string()
                        }
                    });
                let provider = openai::OpenAi::new(http.clone(), &base, key)
                    .with_idle_timeout(self.stream_idle_timeout());
                Ok((Provider::OpenAi(provider), model))
            }
        }
    }

    /// The context window of `model` from provider profile `provider`: configured, or the
    /// default of the model's family.
    pub fn context_window(&self, provider: Option<&str>, model: &str) -> u64 {
        self.configured_context_window(provider)
            .unwrap_or_else(|| crate::compact::default_context_window(model))
    }

    /// The context window the configuration gives for provider profile `provider`, if any.
    pub fn configured_context_window(&self, provider: Option<&str>) -> Option<u64> {
        provider
            .or(Some(self.provider.as_str()))
            .and_then(|p| self.providers.get(p))
            .and_then(|p| p.context_window)
            .or(self.context_window)
    }

    /// The output token limit of one reply: configured, else 8192, or 4096 for a local server
    /// (a small model in a loop would otherwise stream for minutes).
    pub fn max_tokens(&self, local: bool) -> u32 {
        self.max_tokens.unwrap_or(if local {
            LOCAL_MAX_TOKENS
        } else {
            DEFAULT_MAX_TOKENS
        })
    }

    /// Whether tool calls the model writes as text are read as calls, for provider `provider`.
    pub fn text_tool_calls(&self, provider: Option<&str>) -> bool {
        provider
            .or(Some(self.provider.as_str()))
            .and_then(|p| self.providers.get(p))
            .is_none_or(|p| p.text_tool_calls != TextToolCalls::Off)
    }
}
