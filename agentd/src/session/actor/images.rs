//! Where a message's images go before the message itself: the session's image store, once
//! the model its runs use is known to take them.

use kameo::prelude::*;
use protocol::{ErrorCode, ErrorInfo, RunOptions};

use super::SessionActor;
use crate::images::ImageStore;

/// The image store of the session, for a message with images sent with `options`: refused
/// when the model that receives the message does not take images (the running run's, when one
/// is going: the message steers or follows it).
pub(crate) struct ImagesFor {
    /// The options of the message's run.
    pub(crate) options: RunOptions,
}

impl Message<ImagesFor> for SessionActor {
    type Reply = Result<ImageStore, ErrorInfo>;

    async fn handle(
        &mut self,
        msg: ImagesFor,
        _ctx: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        let options = if self.runs.is_running() {
            self.runs.last_options().clone()
        } else {
            msg.options
        };
        let (profile, model) = self.run_names(&options);
        let config = self.env.config();
        let names = config.names(profile, model, &options.env);
        let model = names.model.unwrap_or_default();
        config
            .takes_images(Some(&names.provider), &model)
            .map_err(|refusal| ErrorInfo::new(ErrorCode::InvalidRequest, refusal))?;
        Ok(self.image_store())
    }
}

/// The image store of the session, for reading what it holds.
pub(crate) struct StoredImages;

impl Message<StoredImages> for SessionActor {
    type Reply = Result<ImageStore, ErrorInfo>;

    async fn handle(
        &mut self,
        _msg: StoredImages,
        _ctx: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        Ok(self.image_store())
    }
}

impl SessionActor {
    /// The session's image store.
    pub(super) fn image_store(&self) -> ImageStore {
        ImageStore::new(self.durable.dir())
    }
}
