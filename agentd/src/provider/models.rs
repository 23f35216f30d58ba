//! Which models a provider serves: `GET /v1/models` on Anthropic's and OpenAI's APIs, with the
//! key and headers the provider's replies are asked with. Anthropic's list comes a page at a
//! time (`has_more`, `last_id`); OpenAI's, and local servers', whole.

use std::time::Duration;

use serde_json::Value;

use super::ProviderError;

/// How long a server may take to list its models.
pub(crate) const ASK_TIMEOUT: Duration = Duration::from_secs(10);
/// Pages of Anthropic's list read at most (a thousand models each).
const MOST_PAGES: usize = 10;
/// The most of one page that is read: a server cannot make the daemon hold more.
const MOST_PAGE_BYTES: usize = 4 * 1024 * 1024;
/// The most models kept, and the longest id (longer ones are no model's).
const MOST_MODELS: usize = 10_000;
const LONGEST_ID: usize = 200;

/// The ids of the models listed at `url` (`…/v1/models`), asked with `headers`; `paged`
/// (Anthropic's list) asks for a thousand at a time and follows the pages.
pub(crate) async fn list(
    http: &reqwest::Client,
    url: &str,
    headers: reqwest::header::HeaderMap,
    paged: bool,
) -> Result<Vec<String>, ProviderError> {
    let mut models = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..MOST_PAGES {
        let mut address = reqwest::Url::parse(url).map_err(|e| {
            ProviderError::Invalid(format!(
                "{url} is not a valid address ({e}); fix the provider's base URL"
            ))
        })?;
        if paged {
            address.query_pairs_mut().append_pair("limit", "1000");
        }
        if let Some(after) = &after {
            address.query_pairs_mut().append_pair("after_id", after);
        }
        let get = http
            .get(address)
            .headers(headers.clone())
            .timeout(ASK_TIMEOUT);
        let page = page(get, url).await?;
        models.extend(ids(&page));
        if models.len() >= MOST_MODELS {
            models.truncate(MOST_MODELS);
            break;
        }
        match (page["has_more"].as_bool(), page["last_id"].as_str()) {
            (Some(true), Some(last)) if paged && after.as_deref() != Some(last) => {
                after = Some(last.to_string())
            }
            _ => break,
        }
    }
    Ok(models)
}

/// One page of the list, or why the server gave none.
async fn page(get: reqwest::RequestBuilder, url: &str) -> Result<Value, ProviderError> {
    let response = get.send().await.map_err(|e| ProviderError::Connect {
        url: url.to_string(),
        message: format!("{e}; check the provider's base URL and that its server is up"),
    })?;
    let status = response.status();
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        let said = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| {
                v["error"]["message"]
                    .as_str()
                    .or_else(|| v["error"].as_str())
                    .or_else(|| v["message"].as_str())
                    .map(str::to_string)
            })
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        return Err(ProviderError::Invalid(format!(
            "{url} answered {status} when asked which models it serves{said}; check the \
             provider's key and base URL, or name a model yourself"
        )));
    }
    let body = capped_body(response, url).await?;
    serde_json::from_slice(&body).map_err(|e| {
        ProviderError::Invalid(format!(
            "{url} sent no model list ({e}); name a model yourself"
        ))
    })
}

/// The body of `response`, refused past [`MOST_PAGE_BYTES`].
async fn capped_body(mut response: reqwest::Response, url: &str) -> Result<Vec<u8>, ProviderError> {
    let mut body = Vec::new();
    loop {
        let chunk = response.chunk().await.map_err(|e| ProviderError::Connect {
            url: url.to_string(),
            message: format!("{e}; the model list was cut off"),
        })?;
        let Some(chunk) = chunk else {
            return Ok(body);
        };
        if body.len() + chunk.len() > MOST_PAGE_BYTES {
            return Err(ProviderError::Invalid(format!(
                "{url} sent a model list over {} MiB; name a model yourself",
                MOST_PAGE_BYTES / (1024 * 1024)
            )));
        }
        body.extend_from_slice(&chunk);
    }
}

/// The model ids of one page: `data[].id` on both APIs (`models[].name` on Ollama's own).
pub(crate) fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .or_else(|| page["models"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|m| m["id"].as_str().or_else(|| m["name"].as_str()))
        .filter(|id| id.len() <= LONGEST_ID)
        .take(MOST_MODELS)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::ids;

    #[test]
    fn ids_are_read_from_either_api_list() {
        let anthropic = json!({
            "data": [{"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5"}],
            "has_more": false, "first_id": "claude-sonnet-4-5", "last_id": "claude-sonnet-4-5"
        });
        let openai = json!({"object": "list", "data": [{"id": "gpt-4.1", "object": "model"}]});
        assert_eq!(ids(&anthropic), ["claude-sonnet-4-5"]);
        assert_eq!(ids(&openai), ["gpt-4.1"]);
    }
}
