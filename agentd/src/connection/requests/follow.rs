//! Requests that follow a session's events: its history a page at a time, a subscription, and
//! a message sent with a subscription to what follows it.

use protocol::{Delivery, ErrorInfo, Reply, RunOptions, SessionId};

use super::super::{Connection, pages};
use crate::session::actor::{GetHistory, SendMessage, Subscribe, Unsubscribe};

impl Connection {
    pub(super) async fn history(
        &self,
        session: SessionId,
        from_seq: u64,
    ) -> Result<Reply, ErrorInfo> {
        let mut source = self.ask_session(&session, GetHistory { from_seq }).await?;
        source.info = self.named(source.info);
        pages::history_page(source).await
    }

    pub(super) async fn subscribe(
        &mut self,
        session: SessionId,
        from_seq: u64,
    ) -> Result<Reply, ErrorInfo> {
        let subscribe = Subscribe {
            conn: self.conn,
            from_seq,
        };
        let (info, subscription) = self.ask_session(&session, subscribe).await?;
        self.new_subscription = Some((info.id.clone(), from_seq, subscription));
        Ok(Reply::Subscribed(self.named(info)))
    }

    pub(super) async fn unsubscribe(&mut self, session: SessionId) -> Result<Reply, ErrorInfo> {
        let unsubscribe = Unsubscribe { conn: self.conn };
        let id = self.ask_session(&session, unsubscribe).await?;
        if let Some(task) = self.forwarders.remove(&id) {
            task.abort();
        }
        Ok(Reply::Done)
    }

    /// Subscribes to live events only, then sends the message: nothing that follows it is
    /// missed, and nothing before it is replayed.
    pub(super) async fn send_subscribed(
        &mut self,
        session: SessionId,
        text: String,
        images: Vec<protocol::ImageRef>,
        delivery: Delivery,
        options: RunOptions,
    ) -> Result<Reply, ErrorInfo> {
        let subscribe = Subscribe {
            conn: self.conn,
            from_seq: u64::MAX,
        };
        let (info, subscription) = self.ask_session(&session, subscribe).await?;
        let send = SendMessage {
            text,
            images,
            delivery,
            options,
        };
        let started = match self.ask_session(&info.id, send).await {
            Ok(started) => started,
            Err(err) => {
                let unsubscribe = Unsubscribe { conn: self.conn };
                let _ = self.ask_session(&info.id, unsubscribe).await;
                return Err(err);
            }
        };
        self.new_subscription = Some((info.id.clone(), u64::MAX, subscription));
        Ok(Reply::SentSubscribed {
            info: self.named(info),
            started,
        })
    }
}
