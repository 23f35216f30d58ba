//! The bridge's loop: the daemon's events turned into the editor's updates, with the bytes of
//! a replayed or foreign user message's images fetched from the daemon on the way.

use agent_client_protocol::v1::schema::{ContentChunk, SessionUpdate};
use agent_client_protocol::{Client as Editor, Error, v1};
use agentctl::client::{Feed, FeedItem};
use protocol::{Event, Reply, Request, SessionEvent, SessionId};
use std::sync::Arc;

use super::Bridge;

impl Bridge {
    /// Turns the daemon's events into the editor's updates until the daemon connection ends.
    pub async fn pump(
        self: Arc<Self>,
        cx: v1::ConnectionTo<Editor>,
        mut feed: Feed,
    ) -> Result<(), Error> {
        loop {
            match feed.next().await {
                FeedItem::Event { event, replay } => {
                    let images = self.image_blocks(&event, replay).await;
                    self.event(&cx, event, replay, images)
                }
                FeedItem::ReplayDone { session, .. } => self.end_replay_now(&cx, &session),
                // Prompts stay queued: the runs they joined go on in the next daemon, and end
                // there.
                FeedItem::Reconnecting { reason, .. } => {
                    let reason =
                        reason.unwrap_or_else(|| "the daemon closed the connection".into());
                    eprintln!("agentctl acp: {reason}; waiting for the daemon to come back");
                }
                FeedItem::Reconnected { sessions, gone } => {
                    eprintln!(
                        "agentctl acp: the daemon is back; following {} session(s) again",
                        sessions.len()
                    );
                    for session in gone {
                        self.gone(&session);
                    }
                }
                FeedItem::Closed(reason) => {
                    let reason =
                        reason.unwrap_or_else(|| "the daemon closed the connection".into());
                    let reason = format!(
                        "lost the daemon: {reason}; the sessions go on in it (session/load follows one again)"
                    );
                    eprintln!("agentctl acp: {reason}");
                    for (_, watched) in self.sessions().drain() {
                        for prompt in watched.prompts {
                            let _ = prompt
                                .responder
                                .respond_with_error(Error::internal_error().data(reason.clone()));
                        }
                    }
                    // Without the daemon nothing works: the agent ends, and the editor may
                    // start it again.
                    return Err(Error::internal_error().data(reason));
                }
            }
        }
    }

    /// `session` was deleted while the daemon was away: its prompts fail.
    fn gone(&self, session: &SessionId) {
        let Some(watched) = self.sessions().remove(session) else {
            return;
        };
        for prompt in watched.prompts {
            let _ = prompt.responder.respond_with_error(
                Error::invalid_params().data("the session was deleted while the daemon was away"),
            );
        }
    }

    /// The image blocks of a user message the editor is shown (in a replay, or sent by
    /// another client), their bytes fetched from the daemon; none for the editor's own prompt,
    /// which it has. An image the daemon cannot give is left out, said on stderr.
    async fn image_blocks(&self, event: &SessionEvent, replay: bool) -> Vec<SessionUpdate> {
        let Event::UserMessage { text, images, .. } = &event.event else {
            return Vec::new();
        };
        if images.is_empty() || (!replay && self.is_own_prompt(&event.session, text)) {
            return Vec::new();
        }
        let mut blocks = Vec::new();
        for image in images {
            let fetch = Request::GetImage {
                session: event.session.clone(),
                hash: image.hash.clone(),
            };
            match self.daemon().request(fetch).await {
                Ok(Reply::Image(bytes)) => blocks.push(SessionUpdate::UserMessageChunk(
                    ContentChunk::new(crate::acp::images::block(image, &bytes.data)),
                )),
                Ok(other) => eprintln!("agentctl acp: unexpected reply for an image: {other:?}"),
                Err(err) => eprintln!("agentctl acp: cannot fetch {}: {err}", image.label()),
            }
        }
        blocks
    }

    /// Whether `text` is a prompt of this editor waiting to enter `session`'s history.
    fn is_own_prompt(&self, session: &SessionId, text: &str) -> bool {
        self.sessions()
            .get(session)
            .is_some_and(|w| w.prompts.iter().any(|p| !p.delivered && p.text == text))
    }
}
