//! One client connection: the handshake, then requests in, replies and events out.
//!
//! Everything the connection sends goes through one bounded outgoing queue drained by a writer
//! task, so a client that stops reading only ever stalls itself. Each subscription has a
//! forwarder task ([`forward`]) that replays the session's events and then passes live ones on.
//! Replies that grow with data come in pages ([`pages`]).

mod forward;
mod pages;
pub(crate) mod peer;
mod requests;
mod shared;
pub(crate) mod table;

pub(crate) use shared::Shared;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use interprocess::local_socket::tokio::Stream;
use protocol::local::frames::{self as frame, FrameError};
use protocol::{
    ClientFrame, ErrorCode, ErrorInfo, Hello, PROTOCOL_VERSION, ServerFrame, SessionId,
    SessionSummary, Welcome,
};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::ConnectionId;
use crate::session::actor::Unsubscribe;
use crate::session::event_log::Subscription;
use crate::summaries::Watcher;
use crate::supervisor::IfLoaded;

/// Frames that may wait for a slow client before its forwarders pause.
const OUTGOING_QUEUE: usize = 256;
/// How long a new connection may take to say `Hello`.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a refused connection's Hello is waited for before the refusal is sent.
const HELLO_BEFORE_REFUSAL: Duration = Duration::from_millis(200);
/// How long queued frames may take to drain when the connection ends.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Serves one client until it leaves, sends something malformed, or the daemon shuts down.
pub(crate) async fn serve(
    stream: Stream,
    conn: ConnectionId,
    slot: table::Slot,
    shared: Arc<Shared>,
) {
    let (stream, peer) = match peer::inspect(stream) {
        Ok(inspected) => inspected,
        Err(err) => {
            tracing::warn!("dropped a connection whose peer could not be looked at: {err}");
            return;
        }
    };
    let stream = Arc::new(stream);
    let (out, out_rx) = mpsc::channel(OUTGOING_QUEUE);
    let mut writer = tokio::spawn(write_loop(stream.clone(), out_rx));
    let mut connection = Connection {
        conn,
        client: String::new(),
        shared,
        out,
        forwarders: HashMap::new(),
        new_subscription: None,
        summaries: None,
        new_summaries: None,
        slot,
    };
    connection.run(&stream, peer).await;
    connection.close().await;
    drop(connection);
    if tokio::time::timeout(DRAIN_TIMEOUT, &mut writer)
        .await
        .is_err()
    {
        writer.abort();
    }
    tracing::debug!(conn = conn.0, "connection closed");
}

/// Tells a client over the connection limit so, and closes its connection.
pub(crate) async fn refuse(stream: Stream, limit: usize) {
    let refusal = ServerFrame::Error(ErrorInfo::new(
        ErrorCode::Busy,
        format!(
            "the daemon serves at most {limit} clients at once (max_connections in config.toml); close some and try again"
        ),
    ));
    // The client's Hello is read first, so that it is not cut off mid-write and reads the
    // refusal.
    let _ = tokio::time::timeout(
        HELLO_BEFORE_REFUSAL,
        frame::read_frame::<ClientFrame, _>(&mut &stream),
    )
    .await;
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, frame::write_frame(&mut &stream, &refusal)).await;
}

async fn write_loop(stream: Arc<Stream>, mut frames: mpsc::Receiver<ServerFrame>) {
    while let Some(frame) = frames.recv().await {
        let bytes = match frame::encode(&frame) {
            Ok(bytes) => bytes,
            // Never silence: a reply that cannot be encoded becomes an error reply.
            Err(err) => match unencodable(frame, &err).map(|f| frame::encode(&f)) {
                Some(Ok(bytes)) => bytes,
                _ => {
                    tracing::error!("cannot encode a frame: {err}");
                    continue;
                }
            },
        };
        let mut writer = &*stream;
        let written = async {
            writer.write_all(&bytes).await?;
            writer.flush().await
        };
        if let Err(err) = written.await {
            tracing::debug!("writing to client failed: {err}");
            return;
        }
    }
}

/// What to send instead of a frame that could not be encoded.
fn unencodable(frame: ServerFrame, err: &FrameError) -> Option<ServerFrame> {
    let info = ErrorInfo::new(
        ErrorCode::Internal,
        format!("the daemon could not send its answer: {err}"),
    );
    match frame {
        ServerFrame::Reply { id, .. } => Some(ServerFrame::Reply {
            id,
            result: Err(info),
        }),
        ServerFrame::Event(event) => Some(ServerFrame::Event(protocol::SessionEvent {
            event: protocol::Event::Error {
                message: info.message,
            },
            ..event
        })),
        _ => None,
    }
}

struct Connection {
    conn: ConnectionId,
    client: String,
    shared: Arc<Shared>,
    out: mpsc::Sender<ServerFrame>,
    forwarders: HashMap<SessionId, JoinHandle<()>>,
    new_subscription: Option<(SessionId, u64, Subscription)>,
    /// Sends the board's summaries, after `SubscribeSummaries`.
    summaries: Option<JoinHandle<()>>,
    new_summaries: Option<(Vec<SessionSummary>, Arc<Watcher>)>,
    /// Its place among the open connections.
    slot: table::Slot,
}

impl Connection {
    async fn run(&mut self, stream: &Stream, peer: Result<(), ErrorInfo>) {
        let mut reader = stream;
        if let Err(refusal) = peer {
            self.send(ServerFrame::Error(refusal)).await;
            return;
        }
        let hello = tokio::select! {
            read = tokio::time::timeout(HANDSHAKE_TIMEOUT, self.read_frame(&mut reader, None)) => read,
            () = self.shared.shutdown.cancelled() => return,
            () = self.slot.closed.cancelled() => return,
        };
        match hello {
            Ok(Ok(Some(ClientFrame::Hello(hello)))) => {
                if let Err(refusal) = self.accept_hello(hello).await {
                    self.send(ServerFrame::Error(refusal)).await;
                    return;
                }
            }
            Ok(Ok(Some(ClientFrame::Request { .. }))) => {
                self.send(ServerFrame::Error(ErrorInfo::new(
                    ErrorCode::HandshakeRequired,
                    "the first frame must be Hello",
                )))
                .await;
                return;
            }
            Ok(Ok(None)) => return,
            Ok(Err(err)) => {
                self.frame_error(err).await;
                return;
            }
            Err(_) => {
                self.send(ServerFrame::Error(ErrorInfo::new(
                    ErrorCode::HandshakeRequired,
                    "no Hello within 10 seconds",
                )))
                .await;
                return;
            }
        }

        let frame_timeout = Some(self.shared.config.borrow().config.frame_timeout());
        loop {
            let read = tokio::select! {
                read = self.read_frame(&mut reader, frame_timeout) => read,
                () = self.shared.shutdown.cancelled() => {
                    self.send(ServerFrame::Error(ErrorInfo::new(ErrorCode::ShuttingDown, "the daemon is shutting down"))).await;
                    return;
                }
                () = self.slot.closed.cancelled() => {
                    self.send(ServerFrame::Error(ErrorInfo::new(
                        ErrorCode::Busy,
                        "the connection was closed to make room: it sent nothing since Hello while the daemon was at max_connections, or its unfinished frame was the oldest while too many bytes were held for unfinished frames; connect again",
                    ))).await;
                    return;
                }
            };
            match read {
                Ok(Some(ClientFrame::Request { id, request })) => {
                    self.slot.busy();
                    let result = self.handle(request).await;
                    if !self.send(ServerFrame::Reply { id, result }).await {
                        return;
                    }
                    self.after_reply();
                }
                Ok(Some(ClientFrame::Hello(_))) => {
                    self.send(ServerFrame::Error(ErrorInfo::new(
                        ErrorCode::HandshakeRequired,
                        "Hello was already sent on this connection",
                    )))
                    .await;
                    return;
                }
                Ok(None) => return,
                Err(err) => {
                    self.frame_error(err).await;
                    return;
                }
            }
        }
    }

    async fn accept_hello(&mut self, hello: Hello) -> Result<(), ErrorInfo> {
        if hello.protocol_version != PROTOCOL_VERSION {
            return Err(ErrorInfo::new(
                ErrorCode::VersionMismatch,
                format!(
                    "protocol version mismatch: the client speaks version {}, this daemon (agentd {}) speaks version {}; \
                     restart the daemon with `agentctl daemon restart --force` or use a matching agentctl",
                    hello.protocol_version,
                    env!("CARGO_PKG_VERSION"),
                    PROTOCOL_VERSION
                ),
            ));
        }
        self.client = format!("{} #{}", hello.client, self.conn.0);
        tracing::debug!(conn = self.conn.0, client = %hello.client, "client connected");
        self.send(ServerFrame::Welcome(Welcome {
            protocol_version: PROTOCOL_VERSION,
            daemon_version: env!("CARGO_PKG_VERSION").to_string(),
            pid: std::process::id(),
        }))
        .await;
        Ok(())
    }

    /// Reads one frame, its memory counted against the daemon's budget for unfinished frames.
    async fn read_frame(
        &self,
        reader: &mut &Stream,
        within: Option<Duration>,
    ) -> Result<Option<ClientFrame>, FrameError> {
        let read =
            frame::read_payload_budgeted(reader, within, |bytes| self.slot.grow(bytes)).await;
        self.slot.frame_done();
        match read? {
            Some(payload) => frame::decode(&payload).map(Some),
            None => Ok(None),
        }
    }

    /// Reports a frame that could not be read, where the client can still hear it.
    async fn frame_error(&mut self, err: FrameError) {
        tracing::debug!(conn = self.conn.0, "bad frame: {err}");
        let code = match err {
            FrameError::TooLarge { .. } => ErrorCode::FrameTooLarge,
            // A truncated frame may come from a client that only closed its sending side and
            // still reads, so it is told too.
            FrameError::Decode(_)
            | FrameError::OverBudget
            | FrameError::TrailingBytes { .. }
            | FrameError::Truncated { .. }
            | FrameError::Stalled(_) => ErrorCode::MalformedFrame,
            // The connection itself failed: nobody to tell.
            FrameError::Io(_) | FrameError::Encode(_) => return,
        };
        self.send(ServerFrame::Error(ErrorInfo::new(code, err.to_string())))
            .await;
    }

    /// Queues a frame for the client; false when the client is gone.
    async fn send(&self, frame: ServerFrame) -> bool {
        self.out.send(frame).await.is_ok()
    }

    /// Work that must follow a reply on the wire: a new subscription's events come after the
    /// `Subscribed` reply.
    fn after_reply(&mut self) {
        if let Some((session, from_seq, subscription)) = self.new_subscription.take() {
            if let Some(old) = self.forwarders.remove(&session) {
                old.abort();
            }
            let task = tokio::spawn(forward::forward(
                session.clone(),
                from_seq,
                subscription,
                self.out.clone(),
            ));
            self.forwarders.insert(session, task);
        }
        if let Some((summaries, watcher)) = self.new_summaries.take() {
            if let Some(old) = self.summaries.take() {
                old.abort();
            }
            let config = self.shared.config.clone();
            let name = move |info: &mut protocol::SessionInfo| {
                config.borrow().config.name_session(info);
            };
            let task = crate::summaries::forward(summaries, watcher, self.out.clone(), name);
            self.summaries = Some(tokio::spawn(task));
        }
    }

    async fn close(&mut self) {
        if let Some(task) = self.summaries.take() {
            task.abort();
        }
        for (session, task) in self.forwarders.drain() {
            task.abort();
            // A session that is not loaded holds no subscription of ours: it is not loaded
            // again just to be told so.
            if let Ok(Some(actor)) = self.shared.supervisor.ask(IfLoaded(session)).await {
                let _ = actor.tell(Unsubscribe { conn: self.conn }).await;
            }
        }
    }
}
