//! Local OpenAI-compatible servers (llama.cpp's `llama-server`, Ollama, vLLM, LM Studio) with
//! no configuration: the model is the one `GET /v1/models` lists, and the context window is
//! what the server says it is (`/props` on llama.cpp, `/api/show` on Ollama).

use serde_json::{Value, json};

use super::ProviderError;
use super::models::ASK_TIMEOUT;

/// The one model the server at `base` (`…/v1`) serves; an error that lists them when there are
/// several, or says so when there is none.
pub(crate) async fn only_model(
    http: &reqwest::Client,
    base: &str,
    key: Option<&str>,
) -> Result<String, ProviderError> {
    let url = format!("{base}/models");
    let mut get = http.get(&url).timeout(ASK_TIMEOUT);
    if let Some(key) = key {
        get = get.bearer_auth(key);
    }
    let unreachable = |message: String| ProviderError::Connect {
        url: url.clone(),
        message,
    };
    let response = get.send().await.map_err(|e| unreachable(e.to_string()))?;
    if !response.status().is_success() {
        return Err(ProviderError::Invalid(format!(
            "{url} answered {} when asked which models it serves; name one with --model",
            response.status()
        )));
    }
    let body: Value = response
        .json()
        .await
        .map_err(|e| ProviderError::Invalid(format!("{url} sent no model list: {e}")))?;
    let models = super::models::ids(&body);
    match models.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(ProviderError::Invalid(format!(
            "the server at {base} serves no model; load one, or name one with --model"
        ))),
        many => Err(ProviderError::Invalid(format!(
            "the server at {base} serves {} models; choose one with --model: {}",
            many.len(),
            many.join(", ")
        ))),
    }
}

/// The context window the server at `base` runs `model` with, where it says.
pub(crate) async fn context_window(http: &reqwest::Client, base: &str, model: &str) -> Option<u64> {
    let root = base.trim_end_matches('/').trim_end_matches("/v1");
    // llama.cpp's `llama-server`.
    if let Ok(response) = http
        .get(format!("{root}/props"))
        .timeout(ASK_TIMEOUT)
        .send()
        .await
        && response.status().is_success()
        && let Ok(props) = response.json::<Value>().await
    {
        let n_ctx = props["default_generation_settings"]["n_ctx"]
            .as_u64()
            .or_else(|| props["n_ctx"].as_u64());
        if let Some(n_ctx) = n_ctx.filter(|n| *n > 0) {
            return Some(n_ctx);
        }
    }
    // Ollama.
    let response = http
        .post(format!("{root}/api/show"))
        .json(&json!({"model": model}))
        .timeout(ASK_TIMEOUT)
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let show: Value = response.json().await.ok()?;
    let from_parameters = show["parameters"].as_str().and_then(|p| {
        p.lines()
            .filter_map(|l| l.trim().strip_prefix("num_ctx"))
            .find_map(|v| v.trim().parse().ok())
    });
    from_parameters.or_else(|| {
        show["model_info"]
            .as_object()?
            .iter()
            .find(|(k, _)| k.ends_with(".context_length"))
            .and_then(|(_, v)| v.as_u64())
    })
}
