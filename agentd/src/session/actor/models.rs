//! The session's model: changing it for the next runs, listing the models its provider serves,
//! and what each model's calls used.

use kameo::prelude::*;
use protocol::{ErrorCode, ErrorInfo, Event, UsageReport};

use super::SessionActor;

/// Use `model` for the session's next runs.
pub(crate) struct SetModel(pub(crate) String);

impl Message<SetModel> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: SetModel, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let model = msg.0;
        self.shown.set_model(model.clone());
        self.emit(Event::ModelChanged {
            model: model.clone(),
        });
        self.save_meta_with(|meta| meta.model = Some(model));
        Ok(())
    }
}

/// The models the session's provider serves.
pub(crate) struct ListModels {
    /// Keys and base URLs from the client's environment, before the daemon's.
    pub(crate) env: Vec<(String, String)>,
}

/// What the provider of a session serves.
pub(crate) struct ModelList {
    /// The provider profile asked.
    pub(crate) provider: String,
    /// The model the session uses now, when it is known before a run.
    pub(crate) current: Option<String>,
    /// The ids it lists.
    pub(crate) models: Vec<String>,
}

impl Message<ListModels> for SessionActor {
    type Reply = DelegatedReply<Result<ModelList, ErrorInfo>>;

    async fn handle(
        &mut self,
        msg: ListModels,
        ctx: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        let config = self.env.config();
        let (profile, model) = (self.shown.provider(), self.shown.model());
        let names = config.names(profile, model, &msg.env);
        let provider = config.provider(&self.env.http, profile, model, &msg.env);
        // The server may take seconds to answer: not in the actor.
        ctx.spawn(async move {
            let failed = |e: crate::provider::ProviderError| {
                ErrorInfo::new(
                    ErrorCode::ProviderFailed,
                    format!(
                        "cannot list the models of provider `{}`: {e}",
                        names.provider
                    ),
                )
            };
            let (provider, _) = provider.map_err(failed)?;
            let models = provider.list_models().await.map_err(failed)?;
            Ok(ModelList {
                provider: names.provider,
                current: names.model,
                models,
            })
        })
    }
}

/// The session's tokens and cost per model.
pub(crate) struct GetUsage;

impl Message<GetUsage> for SessionActor {
    type Reply = Result<UsageReport, ErrorInfo>;

    async fn handle(&mut self, _: GetUsage, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        Ok(self.shown.usage(&self.env.config().prices))
    }
}
