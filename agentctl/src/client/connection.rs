//! The connection to the daemon: connects, shakes hands, sends requests and routes what comes
//! back, replies to their callers and events to one receiver. It runs over the daemon's local
//! socket ([`Client::connect`], trust checked) or over any byte stream that leads to one
//! ([`Client::over`]: an `ssh` to `agentctl bridge` on another machine, say).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use interprocess::local_socket::tokio::Stream;
use interprocess::local_socket::traits::tokio::Stream as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use protocol::frame::FrameError;
use protocol::{
    ClientFrame, ErrorCode, ErrorInfo, Hello, PROTOCOL_VERSION, Reply, Request, RequestId,
    ServerFrame, SessionEvent, SessionId, SessionInfo, Welcome,
};

use super::far_text;
use super::first_bytes::FirstBytes;
use super::frames as frame;
pub use super::incoming::Incoming;
use super::paths::socket_name;
use super::socket::SocketHalf;
use super::tame;
use super::trust::{self, Untrusted};
use super::unread::{Events, UNREAD_LIMIT, Unread};

/// Why talking to the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No daemon accepted the connection.
    #[error("cannot connect to agentd at {}: {source}", socket.display())]
    Connect {
        /// The socket tried.
        socket: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The daemon refused the request or the handshake.
    #[error("{}", far_text::printable(&.0.message, far_text::MESSAGE_CHARS))]
    Daemon(ErrorInfo),
    /// The connection ended before the reply came.
    #[error("the daemon closed the connection{}", .0.as_ref().map(|e| format!(": {}", far_text::printable(e, far_text::MESSAGE_CHARS))).unwrap_or_default())]
    Closed(Option<String>),
    /// What answered is not a daemon: its first bytes are text, not a frame (a remote shell's
    /// startup files printed something before `agentctl bridge` ran, say).
    #[error("{peer} answered with text instead of agentd's handshake: `{text}`")]
    NotAFrame {
        /// The other end, as the caller named it.
        peer: String,
        /// The text, printable, on one line, at most
        /// [`SHOWN_CHARS`](super::first_bytes::SHOWN_CHARS) characters.
        text: String,
    },
    /// A frame could not be written or read.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The daemon answered with something this client does not expect.
    #[error("unexpected answer from the daemon: {}", far_text::printable(.0, far_text::MESSAGE_CHARS))]
    Unexpected(String),
    /// The socket or the process behind it is not the user's own daemon; nothing was sent.
    #[error(transparent)]
    Untrusted(#[from] Untrusted),
}

impl ClientError {
    /// The daemon's refusal `info`, its message made printable and capped (see
    /// [`far_text::printable`]): whoever shows it need not trust it.
    pub fn daemon(info: ErrorInfo) -> ClientError {
        ClientError::Daemon(ErrorInfo {
            message: far_text::printable(&info.message, far_text::MESSAGE_CHARS),
            ..info
        })
    }

    /// The daemon's error code, when the daemon refused the request.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Daemon(info) => Some(info.code),
            _ => None,
        }
    }

    /// Whether the connection itself is gone (rather than the daemon refusing the request): a
    /// new connection may succeed.
    pub fn connection_lost(&self) -> bool {
        matches!(
            self,
            ClientError::Closed(_) | ClientError::Frame(_) | ClientError::Connect { .. }
        )
    }
}

type Pending = Arc<Mutex<HashMap<RequestId, oneshot::Sender<Result<Reply, ErrorInfo>>>>>;

/// How long the daemon may take to answer the handshake.
const HANDSHAKE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The half of a connection frames are read from, owned by the read loop.
type Reader = Box<dyn AsyncRead + Send + Unpin>;

/// The half of a connection frames are written to; one writer at a time.
type Writer = tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>;

/// A connection to the daemon after a successful handshake.
pub struct Client {
    writer: Writer,
    pending: Pending,
    closed: Arc<Mutex<Option<Option<String>>>>,
    stopping: Arc<AtomicBool>,
    next_id: AtomicU64,
    /// What the reader holds for the front end, and what was asked for.
    unread: Arc<Unread>,
    incoming: Option<Events>,
    welcome: Welcome,
    reader: JoinHandle<()>,
}

impl Client {
    /// Connects to the daemon at `socket` and shakes hands, naming this client `client_name`.
    /// Nothing is sent unless the socket's directory and the process behind the socket belong
    /// to this user.
    pub async fn connect(socket: &Path, client_name: &str) -> Result<Client, ClientError> {
        let (reader, writer) = SocketHalf::pair(open_trusted(socket).await?);
        let peer = socket.display().to_string();
        Client::handshake(Box::new(reader), Box::new(writer), client_name, &peer).await
    }

    /// Shakes hands with the daemon at the other end of `reader` and `writer` (a byte stream
    /// that leads to its socket: an `ssh` running `agentctl bridge`, say), naming this client
    /// `client_name`. Whoever made the stream answers for whom it reaches: no local trust check
    /// applies. `peer` names the other end in error messages.
    pub async fn over(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
        client_name: &str,
        peer: &str,
    ) -> Result<Client, ClientError> {
        Client::handshake(Box::new(reader), Box::new(writer), client_name, peer).await
    }

    /// Sends Hello, waits for the Welcome and starts the read loop. Text where the Welcome
    /// should be is [`ClientError::NotAFrame`]; the daemon's version is kept printable.
    async fn handshake(
        reader: Reader,
        mut writer: Box<dyn AsyncWrite + Send + Unpin>,
        client_name: &str,
        peer: &str,
    ) -> Result<Client, ClientError> {
        let hello = ClientFrame::Hello(Hello {
            protocol_version: PROTOCOL_VERSION,
            client: client_name.to_string(),
        });
        let mut reader = FirstBytes::new(reader);
        if let Err(err) = frame::write_frame(&mut writer, &hello).await {
            // A far end that printed something and went away: what it printed says why.
            return Err(not_a_frame(&mut reader, peer).await.unwrap_or(err.into()));
        }
        // A peer that never answers the handshake is not a daemon: the client does not wait on.
        let answer = tokio::time::timeout(
            HANDSHAKE_WAIT,
            frame::read_frame::<ServerFrame, _>(&mut reader),
        )
        .await;
        let answer = match answer {
            Ok(Ok(answer)) => answer,
            failed => {
                if let Some(err) = not_a_frame(&mut reader, peer).await {
                    return Err(err);
                }
                match failed {
                    Ok(Err(err)) => return Err(err.into()),
                    _ => {
                        return Err(ClientError::Unexpected(format!(
                            "no answer to the handshake at {peer} within {} s; stop whatever \
                             listens there (`agentctl daemon stop`) and try again",
                            HANDSHAKE_WAIT.as_secs()
                        )));
                    }
                }
            }
        };
        let mut welcome = match answer {
            Some(ServerFrame::Welcome(welcome)) => welcome,
            Some(ServerFrame::Error(info)) => return Err(ClientError::daemon(info)),
            Some(other) => return Err(ClientError::Unexpected(format!("{other:?}"))),
            None => return Err(ClientError::Closed(None)),
        };
        welcome.daemon_version = far_text::one_line(&welcome.daemon_version, far_text::NAME_CHARS);
        let reader: Reader = Box::new(reader.into_inner());

        let pending: Pending = Arc::default();
        let closed = Arc::new(Mutex::new(None));
        let stopping = Arc::new(AtomicBool::new(false));
        let (unread, events) = Unread::new(UNREAD_LIMIT);
        let unread = Arc::new(unread);
        let reader = tokio::spawn(read_loop(
            reader,
            pending.clone(),
            Ended {
                closed: closed.clone(),
                stopping: stopping.clone(),
            },
            unread.clone(),
        ));
        Ok(Client {
            writer: tokio::sync::Mutex::new(writer),
            pending,
            closed,
            stopping,
            next_id: AtomicU64::new(1),
            unread,
            incoming: Some(events),
            welcome,
            reader,
        })
    }

    /// What the daemon said in its handshake.
    pub fn welcome(&self) -> &Welcome {
        &self.welcome
    }

    /// Whether the daemon ended this connection because it stops on purpose (a stop, a restart,
    /// a service manager's stop), rather than dying: someone is then in charge of it.
    pub fn daemon_stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// Takes the receiver of events and other frames that are not replies; `None` after the
    /// first call (of this or [`Client::take_incoming`]). Only what this connection asked for
    /// arrives, and a front end that leaves more than [`UNREAD_LIMIT`] bytes of it unread ends
    /// the connection (see [`super::unread`]).
    pub fn take_events(&mut self) -> Option<Events> {
        self.incoming.take()
    }

    /// [`Client::take_events`] without the limit on what is left unread, for a reader that
    /// keeps up with a daemon it trusts (tests, benchmarks); `None` after the first call.
    pub fn take_incoming(&mut self) -> Option<mpsc::UnboundedReceiver<Incoming>> {
        let events = self.incoming.take()?;
        Some(self.unread.unbounded(events))
    }

    /// Sends `request` and waits for its reply.
    pub async fn request(&self, request: Request) -> Result<Reply, ClientError> {
        let id = RequestId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(reason) = self
                .closed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
            {
                return Err(ClientError::Closed(reason));
            }
            pending.insert(id, tx);
        }
        self.unread.asking(&request);
        let written = {
            let mut writer = self.writer.lock().await;
            frame::write_frame(&mut *writer, &ClientFrame::Request { id, request }).await
        };
        if let Err(err) = written {
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            return Err(err.into());
        }
        match rx.await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(info)) => Err(ClientError::daemon(info)),
            Err(_) => Err(ClientError::Closed(
                self.closed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone()
                    .flatten(),
            )),
        }
    }
}

/// [`ClientError::NotAFrame`] when what `reader` read (or reads within a moment) is text.
async fn not_a_frame(reader: &mut FirstBytes<Reader>, peer: &str) -> Option<ClientError> {
    let text = reader.printed_text().await?;
    Some(ClientError::NotAFrame {
        peer: peer.to_string(),
        text,
    })
}

/// Every session, read page by page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The sessions, newest first.
    pub sessions: Vec<SessionInfo>,
    /// Sessions whose files could not be read (directory and reason).
    pub unreadable: Vec<String>,
}

impl Client {
    /// Every session, newest first, asked for a page at a time.
    pub async fn list_sessions(&self) -> Result<Listing, ClientError> {
        let mut listing = Listing::default();
        let mut after = None;
        loop {
            match self.request(Request::ListSessions { after }).await? {
                Reply::Sessions {
                    sessions,
                    next,
                    unreadable,
                } => {
                    listing.sessions.extend(sessions);
                    listing.unreadable.extend(unreadable);
                    match next {
                        Some(cursor) => after = Some(cursor),
                        None => return Ok(listing),
                    }
                }
                other => return Err(ClientError::Unexpected(format!("{other:?}"))),
            }
        }
    }

    /// A session's listing and its whole history, asked for a page at a time.
    pub async fn history(
        &self,
        session: &SessionId,
    ) -> Result<(SessionInfo, Vec<SessionEvent>), ClientError> {
        let mut all = Vec::new();
        let mut from_seq = 0;
        loop {
            let request = Request::GetHistory {
                session: session.clone(),
                from_seq,
            };
            match self.request(request).await? {
                Reply::History {
                    session,
                    events,
                    next_seq,
                } => {
                    all.extend(events);
                    match next_seq {
                        Some(next) if next > from_seq => from_seq = next,
                        _ => return Ok((session, all)),
                    }
                }
                other => return Err(ClientError::Unexpected(format!("{other:?}"))),
            }
        }
    }
}

/// Opens a connection to the daemon's socket without a byte sent on it, once the socket's
/// directory and the process behind the socket are found to belong to this user.
pub async fn open_trusted(socket: &Path) -> Result<Stream, ClientError> {
    let connect_error = |source| ClientError::Connect {
        socket: socket.to_path_buf(),
        source,
    };
    trust::check_socket_dir(socket)?;
    let name = socket_name(socket).map_err(connect_error)?;
    let stream = Stream::connect(name).await.map_err(connect_error)?;
    trust::check_peer(socket, &stream)?;
    Ok(stream)
}

impl Drop for Client {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// How the connection ended, written by its reader: the reason, and whether the daemon said it
/// shuts down.
struct Ended {
    closed: Arc<Mutex<Option<Option<String>>>>,
    stopping: Arc<AtomicBool>,
}

/// Reads frames from `reader` until the connection ends: replies go to their waiters in
/// `pending` (replies to requests never made are dropped), everything else is held in
/// `unread` for the front end, which drops what was never asked for and ends the connection
/// when the front end leaves too much unread.
async fn read_loop(mut reader: Reader, pending: Pending, ended: Ended, unread: Arc<Unread>) {
    let reason = loop {
        let (frame, payload) = match frame::read_payload(&mut reader).await {
            Ok(Some(payload)) => match frame::decode::<ServerFrame>(&payload) {
                Ok(mut frame) => match tame::frame(&mut frame) {
                    Ok(()) => (frame, payload.len()),
                    Err(why) => break Some(why),
                },
                Err(err) => break Some(err.to_string()),
            },
            Ok(None) => break None,
            Err(err) => break Some(err.to_string()),
        };
        let incoming = match frame {
            ServerFrame::Reply { id, result } => {
                let waiter = pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id);
                if let Some(waiter) = waiter {
                    let _ = waiter.send(result);
                }
                continue;
            }
            ServerFrame::Event(event) => Incoming::Event(event),
            ServerFrame::Lagged { session, last_seq } => Incoming::Lagged { session, last_seq },
            ServerFrame::ReplayDone { session, last_seq } => {
                Incoming::ReplayDone { session, last_seq }
            }
            ServerFrame::Summary(summary) => Incoming::Summary(summary),
            ServerFrame::SummariesReady { sessions } => Incoming::SummariesReady { sessions },
            ServerFrame::SummaryRemoved { session } => Incoming::SummaryRemoved { session },
            ServerFrame::Error(info) => {
                if info.code == ErrorCode::ShuttingDown {
                    ended.stopping.store(true, Ordering::Relaxed);
                }
                break Some(far_text::printable(&info.message, far_text::MESSAGE_CHARS));
            }
            ServerFrame::Welcome(_) => {
                break Some("unexpected second welcome".to_string());
            }
        };
        if let Err(overflow) = unread.hold(incoming, payload) {
            break Some(overflow.to_string());
        }
    };
    // Mark closed before dropping the waiters, so a caller woken by the drop sees the reason.
    let mut pending = pending.lock().unwrap_or_else(|e| e.into_inner());
    *ended.closed.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason.clone());
    pending.clear();
    unread.close(reason);
}
