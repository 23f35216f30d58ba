//! The images of a message, stored before the message is sent, and a stored image read back.

use protocol::{
    ErrorCode, ErrorInfo, ImageBytes, ImageRef, ImageUpload, Reply, RunOptions, SessionId,
};

use super::super::Connection;
use crate::session::actor::{ImagesFor, StoredImages};

impl Connection {
    /// Stores `uploads` in the session's image store, once the model the message's run would
    /// use is known to take images; the refs the message carries.
    pub(super) async fn store_images(
        &self,
        session: &SessionId,
        uploads: Vec<ImageUpload>,
        options: &RunOptions,
    ) -> Result<Vec<ImageRef>, ErrorInfo> {
        if uploads.is_empty() {
            return Ok(Vec::new());
        }
        let images_for = ImagesFor {
            options: options.clone(),
        };
        let store = self.ask_session(session, images_for).await?;
        store
            .put_all(uploads)
            .await
            .map_err(|err| ErrorInfo::new(ErrorCode::InvalidRequest, err.to_string()))
    }

    /// A stored image of the session with its bytes.
    pub(super) async fn get_image(
        &self,
        session: SessionId,
        hash: String,
    ) -> Result<Reply, ErrorInfo> {
        let store = self.ask_session(&session, StoredImages).await?;
        let (image, data) = store
            .get(&hash)
            .await
            .map_err(|err| ErrorInfo::new(ErrorCode::InvalidRequest, err.to_string()))?;
        Ok(Reply::Image(ImageBytes { image, data }))
    }
}
