//! Requests about a session's runs: send a message, cancel, answer a permission request,
//! compact, change the mode.

use protocol::{
    Decision, Delivery, ErrorInfo, Mode, PermissionRequestId, Reply, RunOptions, SessionId,
};

use super::super::Connection;
use crate::session::actor::{Answer, Cancel, CompactNow, SendMessage, SetMode, SetResume};

impl Connection {
    pub(super) async fn send_message(
        &self,
        session: SessionId,
        text: String,
        images: Vec<protocol::ImageRef>,
        delivery: Delivery,
        options: RunOptions,
    ) -> Result<Reply, ErrorInfo> {
        let send = SendMessage {
            text,
            images,
            delivery,
            options,
        };
        let started = self.ask_session(&session, send).await?;
        Ok(Reply::Sent { started })
    }

    pub(super) async fn cancel(&self, session: SessionId) -> Result<Reply, ErrorInfo> {
        self.ask_session(&session, Cancel).await?;
        Ok(Reply::Done)
    }

    pub(super) async fn answer(
        &self,
        session: SessionId,
        request: PermissionRequestId,
        decision: Decision,
    ) -> Result<Reply, ErrorInfo> {
        let answer = Answer {
            request,
            decision,
            by_client: self.client.clone(),
        };
        self.ask_session(&session, answer).await?;
        Ok(Reply::Done)
    }

    pub(super) async fn compact(&self, session: SessionId) -> Result<Reply, ErrorInfo> {
        self.ask_session(&session, CompactNow).await?;
        Ok(Reply::Done)
    }

    pub(super) async fn set_resume(
        &self,
        session: SessionId,
        resume: bool,
    ) -> Result<Reply, ErrorInfo> {
        self.ask_session(&session, SetResume(resume)).await?;
        Ok(Reply::Done)
    }

    pub(super) async fn set_mode(
        &self,
        session: SessionId,
        mode: Mode,
    ) -> Result<Reply, ErrorInfo> {
        self.ask_session(&session, SetMode(mode)).await?;
        Ok(Reply::Done)
    }
}
