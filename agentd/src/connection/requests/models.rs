//! Requests about a session's model: the models its provider serves, changing it, and what
//! each model's calls used; and the provider and model every listing sent to a client names.

use protocol::{ErrorCode, ErrorInfo, Reply, SessionId, SessionInfo};

use super::super::Connection;
use crate::session::actor::{GetUsage, ListModels, SetModel};
use crate::supervisor::MAX_NAME_CHARS;

impl Connection {
    pub(super) async fn list_models(
        &self,
        session: SessionId,
        env: Vec<(String, String)>,
    ) -> Result<Reply, ErrorInfo> {
        let list = self.ask_session(&session, ListModels { env }).await?;
        Ok(Reply::Models {
            provider: list.provider,
            current: list.current,
            models: list.models,
        })
    }

    pub(super) async fn set_model(
        &self,
        session: SessionId,
        model: String,
    ) -> Result<Reply, ErrorInfo> {
        let model = model.trim().to_string();
        let refused = |why: String| Err(ErrorInfo::new(ErrorCode::InvalidRequest, why));
        if model.is_empty() {
            return refused(
                "the model name is empty; `agentctl model` lists those the provider serves".into(),
            );
        }
        if model.chars().count() > MAX_NAME_CHARS || model.chars().any(char::is_control) {
            return refused(format!(
                "`{}` is not a model name: at most {MAX_NAME_CHARS} characters, on one line",
                model.escape_debug()
            ));
        }
        self.ask_session(&session, SetModel(model)).await?;
        Ok(Reply::Done)
    }

    pub(super) async fn usage(&self, session: SessionId) -> Result<Reply, ErrorInfo> {
        let report = self.ask_session(&session, GetUsage).await?;
        Ok(Reply::Usage(report))
    }

    /// `info` as a client is shown it: with the provider and model its runs use, the
    /// configured ones when it has none of its own.
    pub(super) fn named(&self, mut info: SessionInfo) -> SessionInfo {
        self.shared.config.borrow().config.name_session(&mut info);
        info
    }
}
