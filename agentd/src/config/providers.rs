//! Choosing a run's provider from the configuration: the profile, its wire format, key and
//! base URL (the client's environment first, the daemon's second), the model, the context
//! window, the output limit and whether calls written as text are read.

use super::{
    Config, DEFAULT_MAX_TOKENS, LOCAL_MAX_TOKENS, ProviderKind, ProviderProfile, TextToolCalls,
};
use crate::provider::responses::{Responses, ResponsesOptions};
use crate::provider::{Choice, Names, Provider, ProviderError, anthropic, openai};

impl Config {
    /// Chooses a run's provider: profile `profile` (or the default) with `model` (or the
    /// configured one), keys and base URLs from `env` first.
    pub(crate) fn choose(
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
            profile: self.profile_of(profile).and_then(|p| p.profile),
        }
    }

    /// Builds the provider `name` (or the default) with `model` (or the configured one), taking
    /// keys and base URLs from `env` first and the daemon's environment second.
    pub(crate) fn provider(
        &self,
        http: &reqwest::Client,
        name: Option<&str>,
        model: Option<&str>,
        env: &[(String, String)],
    ) -> Result<(Provider, String), ProviderError> {
        let profile = self.profile(name.unwrap_or(&self.provider))?;
        match profile.kind {
            ProviderKind::Anthropic => {
                let key_env = profile
                    .api_key_env
                    .as_deref()
                    .unwrap_or("ANTHROPIC_API_KEY");
                let key = lookup(env, key_env).ok_or_else(|| ProviderError::MissingKey {
                    env: key_env.to_string(),
                })?;
                let base = anthropic_base(&profile, env);
                let model = self.model_of(&profile, model, env).unwrap_or_default();
                let provider = anthropic::Anthropic::new(http.clone(), &base, key)
                    .with_idle_timeout(self.stream_idle_timeout());
                Ok((Provider::Anthropic(provider), model))
            }
            ProviderKind::Openai => {
                let (server, model) = self.openai_server(http, &profile, model, env)?;
                Ok((Provider::OpenAi(server), model))
            }
            ProviderKind::Responses => {
                let (server, model) = self.openai_server(http, &profile, model, env)?;
                // Naming an earlier reply needs the server to keep it.
                let chained = profile.previous_response_id.unwrap_or(false);
                let options = ResponsesOptions {
                    store: profile.store.unwrap_or(chained),
                    reasoning_effort: profile.reasoning_effort.clone(),
                    previous_response_id: chained,
                };
                Ok((Provider::Responses(Responses::new(server, options)), model))
            }
        }
    }

    /// An OpenAI server for `profile` (either of OpenAI's APIs) and the model a run asks it
    /// for: the key and base URL from `env` first, the daemon's environment second.
    fn openai_server(
        &self,
        http: &reqwest::Client,
        profile: &ProviderProfile,
        model: Option<&str>,
        env: &[(String, String)],
    ) -> Result<(openai::OpenAi, String), ProviderError> {
        let key_env = profile.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
        let base = openai_base(profile, env);
        let key = lookup(env, key_env);
        // Local servers need no key; the public API does.
        if key.is_none() && base.trim_end_matches('/') == openai::DEFAULT_BASE_URL {
            return Err(ProviderError::MissingKey {
                env: key_env.to_string(),
            });
        }
        // A local server with no model named: the run asks it which it serves.
        let model = self.model_of(profile, model, env).unwrap_or_default();
        let server = openai::OpenAi::new(http.clone(), &base, key)
            .with_idle_timeout(self.stream_idle_timeout());
        Ok((server, model))
    }

    /// The provider profile and model of a session whose own are `profile` and `model`: its
    /// own, or the configured ones. Needs no key, so a listing can say it.
    pub(crate) fn names(
        &self,
        profile: Option<&str>,
        model: Option<&str>,
        env: &[(String, String)],
    ) -> Names {
        let provider = profile.unwrap_or(&self.provider).to_string();
        let model = match self.profile(&provider) {
            Ok(profile) => self.model_of(&profile, model, env),
            Err(_) => model.map(str::to_string).or_else(|| self.model.clone()),
        };
        Names { provider, model }
    }

    /// Fills in `info`'s provider and model as its runs resolve them (the configured ones when
    /// the session has none of its own), for a client to show.
    pub(crate) fn name_session(&self, info: &mut protocol::SessionInfo) {
        let names = self.names(info.provider.as_deref(), info.model.as_deref(), &[]);
        info.provider = Some(names.provider);
        info.model = names.model;
    }

    /// Whether runs of profile `profile` (or the default) with `model` may send images: `Err`
    /// says why not and what to do.
    pub(crate) fn takes_images(&self, profile: Option<&str>, model: &str) -> Result<(), String> {
        let name = profile.unwrap_or(&self.provider);
        let setting = self.providers.get(name).and_then(|p| p.images);
        crate::images::capability::check(name, setting, model)
    }

    /// Checks the profiles' Responses settings: `previous_response_id` is for `kind =
    /// "responses"` only and needs `store`. `Err` says which profile and what to change.
    pub(super) fn check_profiles(&self) -> Result<(), String> {
        for (name, profile) in &self.providers {
            if profile.previous_response_id != Some(true) {
                continue;
            }
            if profile.kind != ProviderKind::Responses {
                return Err(format!(
                    "[providers.{name}]: previous_response_id is for kind = \"responses\" only; \
                     remove it or set kind = \"responses\""
                ));
            }
            if profile.store == Some(false) {
                return Err(format!(
                    "[providers.{name}]: previous_response_id = true needs the server to keep the \
                     replies, but store = false; remove store = false or previous_response_id"
                ));
            }
        }
        Ok(())
    }

    /// Profile `name`: from the configuration, or the kind of that name with no settings.
    fn profile(&self, name: &str) -> Result<ProviderProfile, ProviderError> {
        if let Some(profile) = self.providers.get(name) {
            return Ok(profile.clone());
        }
        let kind = match name {
            "openai" => ProviderKind::Openai,
            "anthropic" => ProviderKind::Anthropic,
            "responses" => ProviderKind::Responses,
            other => {
                return Err(ProviderError::Invalid(format!(
                    "no provider `{other}`; use anthropic, openai, responses or a profile from \
                     config.toml"
                )));
            }
        };
        Ok(ProviderProfile {
            kind,
            base_url: None,
            api_key_env: None,
            model: None,
            context_window: None,
            text_tool_calls: TextToolCalls::Auto,
            profile: None,
            reasoning_effort: None,
            store: None,
            previous_response_id: None,
            images: None,
        })
    }

    /// The model a run of `profile` uses: `model`, the profile's, the configured one, or the
    /// vendor's default; `None` for a local server, which is asked which it serves.
    fn model_of(
        &self,
        profile: &ProviderProfile,
        model: Option<&str>,
        env: &[(String, String)],
    ) -> Option<String> {
        model
            .map(str::to_string)
            .or_else(|| profile.model.clone())
            .or_else(|| self.model.clone())
            .or_else(|| match profile.kind {
                ProviderKind::Anthropic => Some(anthropic::DEFAULT_MODEL.to_string()),
                ProviderKind::Openai | ProviderKind::Responses => {
                    let base = openai_base(profile, env);
                    let local = base.trim_end_matches('/') != openai::DEFAULT_BASE_URL;
                    (!local).then(|| openai::DEFAULT_MODEL.to_string())
                }
            })
    }

    /// The context window the configuration gives for provider profile `provider`, if any.
    pub(crate) fn configured_context_window(&self, provider: Option<&str>) -> Option<u64> {
        provider
            .or(Some(self.provider.as_str()))
            .and_then(|p| self.providers.get(p))
            .and_then(|p| p.context_window)
            .or(self.context_window)
    }

    /// The output token limit of one reply: configured, else 8192, or 4096 for a local server
    /// (a small model in a loop would otherwise stream for minutes).
    pub(crate) fn max_tokens(&self, local: bool) -> u32 {
        self.max_tokens.unwrap_or(if local {
            LOCAL_MAX_TOKENS
        } else {
            DEFAULT_MAX_TOKENS
        })
    }

    /// Whether tool calls the model writes as text are read as calls, for provider `provider`.
    pub(crate) fn text_tool_calls(&self, provider: Option<&str>) -> bool {
        self.profile_of(provider)
            .is_none_or(|p| p.text_tool_calls != TextToolCalls::Off)
    }

    /// The configured profile of provider `provider` (or the default one), if there is one.
    fn profile_of(&self, provider: Option<&str>) -> Option<&ProviderProfile> {
        provider
            .or(Some(self.provider.as_str()))
            .and_then(|p| self.providers.get(p))
    }
}

/// `key` from the client's environment `env`, else the daemon's; empty counts as unset.
pub(super) fn lookup(env: &[(String, String)], key: &str) -> Option<String> {
    env.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var(key).ok())
        .filter(|v| !v.trim().is_empty())
}

/// The Messages API's base URL for `profile`.
fn anthropic_base(profile: &ProviderProfile, env: &[(String, String)]) -> String {
    profile
        .base_url
        .clone()
        .or_else(|| lookup(env, "ANTHROPIC_BASE_URL"))
        .unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.to_string())
}

/// The base URL of OpenAI's APIs (Chat Completions and Responses) for `profile`.
fn openai_base(profile: &ProviderProfile, env: &[(String, String)]) -> String {
    profile
        .base_url
        .clone()
        .or_else(|| lookup(env, "OPENAI_BASE_URL"))
        .unwrap_or_else(|| openai::DEFAULT_BASE_URL.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> Result<Config, super::super::ConfigError> {
        Config::parse(text, Path::new("/c/config.toml"))
    }

    #[test]
    fn previous_response_id_implies_store_and_refuses_store_false() {
        let on = "[providers.r]\nkind = \"responses\"\nprevious_response_id = true\n";
        let config = parse(on).unwrap();
        let http = reqwest::Client::new();
        let env = [("OPENAI_API_KEY".to_string(), "k".to_string())];
        let Ok((Provider::Responses(provider), _)) = config.provider(&http, Some("r"), None, &env)
        else {
            panic!("a Responses provider");
        };
        assert!(provider.options().store && provider.options().previous_response_id);
        let error = parse(&format!("{on}store = false\n"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("previous_response_id") && error.contains("store = false"),
            "{error}"
        );
        let chat = "[providers.c]\nkind = \"openai\"\nprevious_response_id = true\n";
        let error = parse(chat).unwrap_err().to_string();
        assert!(error.contains("kind = \"responses\""), "{error}");
        assert!(
            parse(
                "[providers.r]\nkind = \"responses\"\nprevious_response_id = false\nstore = false\n"
            )
            .is_ok()
        );
    }
}
