//! A session's model: the models its provider serves, choosing the one of its next runs, and
//! `agentctl model [--session ID] [NAME]`. Chat's `/model` uses the same helpers.

use agentctl::client::Client;
use agentctl::client::paths::Paths;
use protocol::{Reply, Request, SessionId};
use serde_json::json;

use super::run::provider_env;
use super::{request, unexpected};
use crate::{Failure, connect};

/// What a session's provider serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Models {
    /// The provider profile asked.
    pub provider: String,
    /// The model the session uses now, when it is known before a run (a local server that was
    /// not told one chooses it at each run).
    pub current: Option<String>,
    /// The model ids, as the provider lists them.
    pub models: Vec<String>,
}

/// The models `session`'s provider serves, asked with this shell's provider keys and base URLs
/// (before the daemon's own).
pub async fn list_models(client: &Client, session: &SessionId) -> Result<Models, Failure> {
    let ask = Request::ListModels {
        session: session.clone(),
        env: provider_env(),
    };
    match request(client, ask).await? {
        Reply::Models {
            provider,
            current,
            models,
        } => Ok(Models {
            provider,
            current,
            models,
        }),
        other => Err(unexpected(other)),
    }
}

/// Makes `model` the model of `session`'s next runs (a run going keeps its own).
pub async fn set_model(client: &Client, session: &SessionId, model: &str) -> Result<(), Failure> {
    let set = Request::SetModel {
        session: session.clone(),
        model: model.to_string(),
    };
    match request(client, set).await? {
        Reply::Done => Ok(()),
        other => Err(unexpected(other)),
    }
}

/// `agentctl model`: with `name`, sets the model of the session `session` names (the latest of
/// this directory when absent); without, prints its model and those its provider serves.
pub async fn model(
    paths: &Paths,
    session: Option<String>,
    name: Option<String>,
    json: bool,
) -> Result<u8, Failure> {
    let client = connect::connect(paths, "model").await?;
    let id = super::here::session_named(&client, session.as_deref().unwrap_or("-")).await?;
    if let Some(name) = name {
        set_model(&client, &id, &name).await?;
        if json {
            outln!("{}", json!({"session": id.as_str(), "model": name.trim()}));
        } else {
            outln!("session {id} uses {} from its next run on", name.trim());
        }
        return Ok(0);
    }
    let listed = list_models(&client, &id).await?;
    if json {
        let value = json!({
            "session": id.as_str(),
            "provider": listed.provider,
            "current": listed.current,
            "models": listed.models,
        });
        outln!("{value}");
        return Ok(0);
    }
    let current = listed.current.as_deref().unwrap_or_default();
    for model in &listed.models {
        let marker = if model == current { "*" } else { " " };
        outln!("{marker} {}", crate::style::one_line(model));
    }
    if listed.models.is_empty() {
        outln!("provider `{}` lists no models", listed.provider);
    }
    Ok(0)
}
