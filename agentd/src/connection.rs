//! One client connection: the handshake, then requests in, replies and events out.
//!
//! Everything the connection sends goes through one bounded outgoing queue drained by a writer
//! task, so a client that stops reading only ever stalls itself. Each subscription has a
//! forwarder task that replays the held events and then passes live ones on.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use interprocess::local_socket::tokio::Stream;
use kameo::prelude::*;
use protocol::frame::{self, FrameError};
use protocol::{
    ClientFrame, ErrorCode, ErrorInfo, Hello, PROTOCOL_VERSION, Reply, Request, ServerFrame,
    SessionId, Welcome,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::ConnectionId;
use crate::daemon::Shared;
use crate::session::SessionActor;
use crate::session::actor::{
    Answer, Cancel, CompactNow, GetHistory, SendMessage, SetMode, Subscribe, Unsubscribe,
};
use crate::session::events::Subscription;
use crate::supervisor::{Create, Delete, List, Lookup, Status};

/// Frames that may wait for a slow client before its forwarders pause.
const OUTGOING_QUEUE: usize = 256;
/// How long a new connection may take to say `Hello`.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a refused connection's Hello is waited for before the refusal is sent.
const HELLO_BEFORE_REFUSAL: Duration = Duration::from_millis(200);
/// How long queued frames may take to drain when the connection ends.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Serves one client until it leaves, sends something malformed, or the daemon shuts down.
pub async fn serve(stream: Stream, conn: ConnectionId, shared: Arc<Shared>) {
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
    };
    connection.run(&stream).await;
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
pub async fn refuse(stream: Stream, limit: usize) {
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
        if let Err(err) = frame::write_frame(&mut &*stream, &frame).await {
            tracing::debug!("writing to client failed: {err}");
            return;
        }
    }
}

struct Connection {
    conn: ConnectionId,
    client: String,
    shared: Arc<Shared>,
    out: mpsc::Sender<ServerFrame>,
    forwarders: HashMap<SessionId, JoinHandle<()>>,
    new_subscription: Option<(SessionId, u64, Subscription)>,
}

impl Connection {
    async fn run(&mut self, stream: &Stream) {
        let mut reader = stream;
        if let Err(refusal) = check_peer(stream) {
            self.send(ServerFrame::Error(refusal)).await;
            return;
        }
        let hello = tokio::select! {
            read = tokio::time::timeout(HANDSHAKE_TIMEOUT, frame::read_frame::<ClientFrame, _>(&mut reader)) => read,
            () = self.shared.shutdown.cancelled() => return,
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
                read = frame::read_frame_within::<ClientFrame, _>(&mut reader, frame_timeout) => read,
                () = self.shared.shutdown.cancelled() => {
                    self.send(ServerFrame::Error(ErrorInfo::new(ErrorCode::ShuttingDown, "the daemon is shutting down"))).await;
                    return;
                }
            };
            match read {
                Ok(Some(ClientFrame::Request { id, request })) => {
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

    /// Reports a frame that could not be read, where the client can still hear it.
    async fn frame_error(&mut self, err: FrameError) {
        tracing::debug!(conn = self.conn.0, "bad frame: {err}");
        let code = match err {
            FrameError::TooLarge { .. } => ErrorCode::FrameTooLarge,
            // A truncated frame may come from a client that only closed its sending side and
            // still reads, so it is told too.
            FrameError::Decode(_)
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
            let task = tokio::spawn(forward(
                session.clone(),
                from_seq,
                subscription,
                self.out.clone(),
            ));
            self.forwarders.insert(session, task);
        }
    }

    async fn handle(&mut self, request: Request) -> Result<Reply, ErrorInfo> {
        let supervisor = &self.shared.supervisor;
        match request {
            Request::CreateSession(create) => Ok(Reply::SessionCreated(
                ask(supervisor, Create(create)).await?,
            )),
            Request::ListSessions => Ok(Reply::Sessions(ask(supervisor, List).await?)),
            Request::Status => Ok(Reply::Status(
                ask(
                    supervisor,
                    Status {
                        socket: self.shared.socket.clone(),
                    },
                )
                .await?,
            )),
            Request::Shutdown => {
                tracing::info!(client = %self.client, "shutdown requested");
                self.shared.shutdown.cancel();
                Ok(Reply::Done)
            }
            Request::DeleteSession { session, force } => {
                ask(supervisor, Delete { id: session, force }).await?;
                Ok(Reply::Done)
            }
            Request::GetHistory { session } => {
                let (info, events) = ask(&self.session(&session).await?, GetHistory).await?;
                Ok(Reply::History {
                    session: info,
                    events,
                })
            }
            Request::Subscribe { session, from_seq } => {
                let actor = self.session(&session).await?;
                let (info, subscription) = ask(
                    &actor,
                    Subscribe {
                        conn: self.conn,
                        from_seq,
                    },
                )
                .await?;
                self.new_subscription = Some((info.id.clone(), from_seq, subscription));
                Ok(Reply::Subscribed(info))
            }
            Request::Unsubscribe { session } => {
                let actor = self.session(&session).await?;
                let id = ask(&actor, Unsubscribe { conn: self.conn }).await?;
                if let Some(task) = self.forwarders.remove(&id) {
                    task.abort();
                }
                Ok(Reply::Done)
            }
            Request::SetMode { session, mode } => {
                ask(&self.session(&session).await?, SetMode(mode)).await?;
                Ok(Reply::Done)
            }
            Request::Send {
                session,
                text,
                delivery,
                options,
            } => {
                let started = ask(
                    &self.session(&session).await?,
                    SendMessage {
                        text,
                        delivery,
                        options,
                    },
                )
                .await?;
                Ok(Reply::Sent { started })
            }
            Request::Cancel { session } => {
                ask(&self.session(&session).await?, Cancel).await?;
                Ok(Reply::Done)
            }
            Request::Answer {
                session,
                request,
                decision,
            } => {
                let answer = Answer {
                    request,
                    decision,
                    by_client: self.client.clone(),
                };
                ask(&self.session(&session).await?, answer).await?;
                Ok(Reply::Done)
            }
            Request::Compact { session } => {
                let actor = self.session(&session).await?;
                match actor.ask(CompactNow).await {
                    Ok(()) => Ok(Reply::Done),
                    Err(SendError::HandlerError(err)) => Err(err),
                    Err(err) => Err(ErrorInfo::new(
                        ErrorCode::Internal,
                        format!("the session is not available: {err}"),
                    )),
                }
            }
        }
    }

    async fn session(&self, id: &SessionId) -> Result<ActorRef<SessionActor>, ErrorInfo> {
        ask(&self.shared.supervisor, Lookup(id.clone())).await
    }

    async fn close(&mut self) {
        for (session, task) in self.forwarders.drain() {
            task.abort();
            if let Ok(actor) = ask(&self.shared.supervisor, Lookup(session)).await {
                let _ = actor.tell(Unsubscribe { conn: self.conn }).await;
            }
        }
        self.shared.clients.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Asks an actor and turns a failed delivery into an `Internal` error.
pub async fn ask<A, M, T>(actor: &ActorRef<A>, msg: M) -> Result<T, ErrorInfo>
where
    A: Actor + Message<M, Reply = Result<T, ErrorInfo>>,
    M: Send + 'static,
    T: Send + 'static,
{
    match actor.ask(msg).await {
        Ok(value) => Ok(value),
        Err(SendError::HandlerError(err)) => Err(err),
        Err(err) => Err(ErrorInfo::new(
            ErrorCode::Internal,
            format!("the {} is not available: {err}", short_name::<A>()),
        )),
    }
}

fn short_name<A>() -> &'static str {
    let full = std::any::type_name::<A>();
    full.rsplit("::").next().unwrap_or(full)
}

/// Replays a subscription's held events, then passes live ones on; tells the client when the
/// session dropped it for lagging.
async fn forward(
    session: SessionId,
    from_seq: u64,
    mut subscription: Subscription,
    out: mpsc::Sender<ServerFrame>,
) {
    let mut last_seq = from_seq;
    for event in std::mem::take(&mut subscription.replay) {
        last_seq = event.seq;
        if out.send(ServerFrame::Event(event)).await.is_err() {
            return;
        }
    }
    let mut deleted = false;
    while let Some(event) = subscription.live.recv().await {
        last_seq = event.seq;
        deleted = matches!(event.event, protocol::Event::SessionDeleted);
        if out.send(ServerFrame::Event(event)).await.is_err() {
            return;
        }
    }
    // The session stopped sending without being deleted: the client lagged, or the session's
    // actor failed and was restarted. Either way the client resumes by subscribing again.
    if !deleted {
        let _ = out.send(ServerFrame::Lagged { session, last_seq }).await;
    }
}

/// Refuses peers of another user (SPEC §3).
#[cfg(unix)]
fn check_peer(stream: &Stream) -> Result<(), ErrorInfo> {
    use interprocess::local_socket::traits::StreamCommon;
    let creds = stream
        .peer_creds()
        .map_err(|e| ErrorInfo::new(ErrorCode::Internal, format!("cannot check the peer: {e}")))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    match creds.euid() {
        Some(uid) if uid == me => Ok(()),
        other => {
            tracing::warn!(peer_uid = ?other, "refused a peer of another user");
            Err(ErrorInfo::new(
                ErrorCode::InvalidRequest,
                "this daemon serves only its own user",
            ))
        }
    }
}

#[cfg(not(unix))]
fn check_peer(_stream: &Stream) -> Result<(), ErrorInfo> {
    Ok(())
}
