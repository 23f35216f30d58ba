//! `agentctl acp`: an Agent Client Protocol agent on stdio (docs/architecture.md#editors-acp), so
//! that editors (Zed, JetBrains, Neovim, Emacs) drive the daemon's sessions, also ones a terminal
//! started, while terminals stay attached. A thin client: every session lives in the daemon, and
//! closing the editor leaves them running. Stdout carries the protocol; notes go to stderr.

mod bridge;
mod commands;
mod editor_out;
mod images;
mod updates;

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification, ContentBlock,
    EmbeddedResourceResource, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, PromptResponse, SessionCapabilities, SessionId as AcpSessionId,
    SessionInfo as AcpSessionInfo, SessionListCapabilities, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::{Agent, ByteStreams, Client as Editor, Error, v1};
use agentctl::client::Feed;
use agentctl::client::paths::Paths;
use protocol::{
    CreateSession, Delivery, McpServerSpec, Reply, Request, RunOptions, SessionId, SessionInfo,
};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::Failure;
use bridge::Bridge;

/// Serves ACP on stdin and stdout until the editor closes stdin.
pub async fn serve(paths: &Paths) -> Result<u8, Failure> {
    let daemon = crate::connect::connect(paths, "acp").await?;
    let feed = Feed::new(daemon)
        .ok_or_else(|| Failure::new("the daemon connection has no event stream"))?
        .reconnecting(crate::connect::reconnect(paths, "acp"));
    let bridge = Arc::new(Bridge::new(feed.follower().clone()));
    let (output, input) = stdio();
    let output = editor_out::EditorOut::new(output);
    let transport = ByteStreams::new(output.compat_write(), input.compat());
    let pump = bridge.clone();
    let (b_new, b_load, b_list, b_prompt, b_cancel, b_mode) = (
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
    );
    Agent
        .v1()
        .name("agentd")
        .with_spawned(move |cx| pump.pump(cx, feed))
        .on_receive_request(
            async move |_: InitializeRequest, responder: v1::Responder<InitializeResponse>, _| {
                let capabilities = AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(
                        PromptCapabilities::new().embedded_context(true).image(true),
                    )
                    .mcp_capabilities(McpCapabilities::new().http(true))
                    .session_capabilities(
                        SessionCapabilities::new().list(SessionListCapabilities::new()),
                    );
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(capabilities)
                        .agent_info(Implementation::new("agentd", env!("CARGO_PKG_VERSION"))),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_: AuthenticateRequest,
                        responder: v1::Responder<AuthenticateResponse>,
                        _| {
                // Providers' keys come from the environment; there is nothing to log in to.
                responder.respond(AuthenticateResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest,
                        responder: v1::Responder<NewSessionResponse>,
                        cx: v1::ConnectionTo<Editor>| {
                let bridge = b_new.clone();
                let editor = cx.clone();
                cx.clone().spawn(async move {
                    let cwd = req.cwd.clone();
                    let answer = new_session(&bridge, req).await;
                    let opened = answer.as_ref().ok().map(|r| r.session_id.clone());
                    responder.respond_with_result(answer)?;
                    if let Some(session) = opened {
                        commands::announce(&bridge, &editor, session, &cwd).await;
                    }
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest,
                        responder: v1::Responder<LoadSessionResponse>,
                        cx: v1::ConnectionTo<Editor>| {
                let bridge = b_load.clone();
                let editor = cx.clone();
                cx.clone().spawn(async move {
                    let (cwd, session) = (req.cwd.clone(), req.session_id.clone());
                    let answer = load_session(&bridge, req).await;
                    // The editor knows the session it loads: its commands come with the
                    // history, before the answer.
                    if answer.is_ok() {
                        commands::announce(&bridge, &editor, session, &cwd).await;
                    }
                    responder.respond_with_result(answer)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest,
                        responder: v1::Responder<ListSessionsResponse>,
                        cx: v1::ConnectionTo<Editor>| {
                let bridge = b_list.clone();
                cx.spawn(async move {
                    let answer = list_sessions(&bridge, req).await;
                    responder.respond_with_result(answer)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest,
                        responder: v1::Responder<PromptResponse>,
                        cx: v1::ConnectionTo<Editor>| {
                let bridge = b_prompt.clone();
                cx.spawn(async move {
                    prompt(&bridge, req, responder).await;
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest,
                        responder: v1::Responder<SetSessionModeResponse>,
                        cx: v1::ConnectionTo<Editor>| {
                let bridge = b_mode.clone();
                cx.spawn(async move {
                    let answer = set_mode(&bridge, req).await;
                    responder.respond_with_result(answer)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |note: CancelNotification, cx: v1::ConnectionTo<Editor>| {
                let bridge = b_cancel.clone();
                cx.spawn(async move {
                    let session = SessionId(note.session_id.0.to_string());
                    if let Err(err) = bridge.daemon().request(Request::Cancel { session }).await {
                        eprintln!("agentctl acp: cancel failed: {err}");
                    }
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await
        .map_err(|e| Failure::new(format!("ACP connection failed: {e}")))?;
    // The editor is gone; its sessions go on in the daemon.
    Ok(0)
}

/// Stdout and stdin for the protocol. Editors connect them to pipes, which are used directly
/// (non-blocking, each message written at once); anything else goes through tokio's blocking
/// stdio.
fn stdio() -> (
    Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
    Box<dyn tokio::io::AsyncRead + Send + Unpin>,
) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    // Non-blocking is a property of the open pipe: when stderr is the same pipe, notes written
    // to it could fail, so stdout then stays blocking.
    let same_as_stderr = {
        let (out, err) = (
            file_id(std::io::stdout().as_fd()),
            file_id(std::io::stderr().as_fd()),
        );
        out.is_some() && out == err
    };
    let output: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .filter(|_| !same_as_stderr)
        .and_then(|fd| pipe::Sender::from_owned_fd(fd).ok())
        .map_or_else(
            || Box::new(tokio::io::stdout()) as Box<_>,
            |sender| Box::new(sender) as Box<_>,
        );
    let input: Box<dyn tokio::io::AsyncRead + Send + Unpin> = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| pipe::Receiver::from_owned_fd(fd).ok())
        .map_or_else(
            || Box::new(tokio::io::stdin()) as Box<_>,
            |receiver| Box::new(receiver) as Box<_>,
        );
    (output, input)
}

/// The device and inode of an open file.
fn file_id(fd: std::os::fd::BorrowedFd<'_>) -> Option<(u64, u64)> {
    use std::os::fd::AsRawFd;
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes the struct for a descriptor we hold open.
    if unsafe { libc::fstat(fd.as_raw_fd(), stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: fstat succeeded, so the struct is written.
    let stat = unsafe { stat.assume_init() };
    Some((stat.st_dev, stat.st_ino))
}

/// A daemon error as an ACP one.
fn daemon_error(err: agentctl::client::ClientError) -> Error {
    match err.code() {
        Some(protocol::ErrorCode::UnknownSession | protocol::ErrorCode::InvalidRequest) => {
            Error::invalid_params().data(err.to_string())
        }
        _ => Error::internal_error().data(err.to_string()),
    }
}

fn session_id(id: &AcpSessionId) -> SessionId {
    SessionId(id.0.to_string())
}

/// Subscribes the bridge to `session` from its start, and waits until its history has been
/// sent to the editor.
async fn follow(bridge: &Bridge, session: &SessionId, cwd: PathBuf) -> Result<SessionInfo, Error> {
    let replayed = bridge.watch(session, cwd);
    let info = match bridge.follower.follow(session, 0).await {
        Ok(info) => info,
        Err(err) => {
            bridge.forget(session);
            return Err(daemon_error(err));
        }
    };
    if info.id != *session {
        // A prefix of an id: the editor must use the id the events carry.
        bridge.forget(session);
        bridge.follower.forget(&info.id);
        let _ = bridge
            .daemon()
            .request(Request::Unsubscribe {
                session: info.id.clone(),
            })
            .await;
        return Err(Error::invalid_params().data(format!("use the full session id {}", info.id)));
    }
    bridge.set_cwd(session, PathBuf::from(&info.cwd));
    // The daemon marks the end of the replay; the history has been sent to the editor then.
    let _ = replayed.await;
    Ok(info)
}

/// The editor's MCP servers as the daemon takes them (SSE servers are not supported).
fn mcp_specs(servers: &[McpServer]) -> Vec<McpServerSpec> {
    let mut specs = Vec::new();
    for server in servers {
        let spec = match server {
            McpServer::Stdio(stdio) => McpServerSpec {
                name: stdio.name.clone(),
                command: Some(stdio.command.to_string_lossy().into_owned()),
                args: stdio.args.clone(),
                env: stdio
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect(),
                url: None,
                headers: Vec::new(),
            },
            McpServer::Http(http) => McpServerSpec {
                name: http.name.clone(),
                command: None,
                args: Vec::new(),
                env: Vec::new(),
                url: Some(http.url.clone()),
                headers: http
                    .headers
                    .iter()
                    .map(|h| (h.name.clone(), h.value.clone()))
                    .collect(),
            },
            McpServer::Sse(sse) => {
                eprintln!(
                    "agentctl acp: MCP server `{}` speaks the old SSE transport, which agentd does not; it is left out",
                    sse.name
                );
                continue;
            }
            _ => continue,
        };
        specs.push(spec);
    }
    specs
}

/// Gives the daemon the editor's MCP servers for `session` (kept in its memory only).
async fn use_mcp_servers(
    bridge: &Bridge,
    session: &SessionId,
    servers: &[McpServer],
) -> Result<(), Error> {
    let specs = mcp_specs(servers);
    if specs.is_empty() {
        return Ok(());
    }
    let request = Request::SetSessionMcpServers {
        session: session.clone(),
        servers: specs,
    };
    bridge
        .daemon()
        .request(request)
        .await
        .map_err(daemon_error)?;
    Ok(())
}

async fn new_session(bridge: &Bridge, req: NewSessionRequest) -> Result<NewSessionResponse, Error> {
    let create = CreateSession {
        cwd: crate::commands::here::dir_or(&req.cwd),
        model: None,
        provider: None,
        mode: None,
        max_turns: None,
        title: None,
        env: crate::commands::client_env(),
        worktree: false,
    };
    let info = match bridge
        .daemon()
        .request(Request::CreateSession(create))
        .await
    {
        Ok(Reply::SessionCreated(info)) => info,
        Ok(other) => {
            return Err(Error::internal_error().data(format!("unexpected reply {other:?}")));
        }
        Err(err) => return Err(daemon_error(err)),
    };
    use_mcp_servers(bridge, &info.id, &req.mcp_servers).await?;
    follow(bridge, &info.id, req.cwd).await?;
    Ok(NewSessionResponse::new(info.id.as_str().to_string()).modes(updates::modes(info.mode)))
}

async fn load_session(
    bridge: &Bridge,
    req: LoadSessionRequest,
) -> Result<LoadSessionResponse, Error> {
    let session = session_id(&req.session_id);
    if bridge.watches(&session) {
        return Err(Error::invalid_params().data("this session is already open here"));
    }
    use_mcp_servers(bridge, &session, &req.mcp_servers).await?;
    let info = follow(bridge, &session, req.cwd).await?;
    Ok(LoadSessionResponse::new().modes(updates::modes(info.mode)))
}

async fn list_sessions(
    bridge: &Bridge,
    req: ListSessionsRequest,
) -> Result<ListSessionsResponse, Error> {
    let listing = bridge
        .daemon()
        .list_sessions()
        .await
        .map_err(daemon_error)?;
    let sessions = listing
        .sessions
        .into_iter()
        .filter(|s| {
            req.cwd
                .as_ref()
                .is_none_or(|cwd| std::path::Path::new(&s.cwd) == cwd.as_path())
        })
        .map(|s| {
            AcpSessionInfo::new(s.id.as_str().to_string(), PathBuf::from(&s.cwd)).title(s.title)
        })
        .collect();
    Ok(ListSessionsResponse::new(sessions))
}

/// The prompt as one user message: text as it is, embedded files with their URI, other
/// content named; images go along as images.
fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(file) => parts.push(format!(
                    "<file uri=\"{}\">\n{}\n</file>",
                    file.uri, file.text
                )),
                EmbeddedResourceResource::BlobResourceContents(blob) => {
                    parts.push(format!("[binary resource {} left out]", blob.uri))
                }
                _ => {}
            },
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[{}]({})", link.name, link.uri))
            }
            ContentBlock::Audio(_) => {
                parts.push("[audio was attached; audio is not supported]".into())
            }
            _ => {}
        }
    }
    parts.join("\n\n")
}

/// Sends the prompt: it starts a run, or joins the running one as a follow-up; either way it
/// is answered when that run ends.
async fn prompt(bridge: &Bridge, req: PromptRequest, responder: v1::Responder<PromptResponse>) {
    let session = session_id(&req.session_id);
    let text = prompt_text(&req.prompt);
    let images = match images::uploads(&req.prompt) {
        Ok(images) => images,
        Err(refusal) => {
            let _ = responder.respond_with_error(Error::invalid_params().data(refusal));
            return;
        }
    };
    if text.trim().is_empty() && images.is_empty() {
        let _ = responder.respond_with_error(Error::invalid_params().data("the prompt is empty"));
        return;
    }
    let image_bytes = images.iter().map(|i| i.data.len()).sum();
    if let Err(too_large) = crate::commands::check_message_size(&text, image_bytes) {
        let _ = responder.respond_with_error(Error::invalid_params().data(too_large.message));
        return;
    }
    if let Some(responder) = bridge.await_run(&session, &text, responder) {
        let _ = responder.respond_with_error(
            Error::invalid_params()
                .data("unknown session: open it with session/new or session/load"),
        );
        return;
    }
    let send = Request::Send {
        session: session.clone(),
        text,
        images,
        delivery: Delivery::FollowUp,
        options: RunOptions {
            // Editors drive runs interactively: no turn limit, asks go to whoever answers.
            max_turns: Some(0),
            env: crate::commands::run::provider_env(),
            ..RunOptions::default()
        },
    };
    if let Err(err) = bridge.daemon().request(send).await
        && let Some(responder) = bridge.take_last_prompt(&session)
    {
        let _ = responder.respond_with_error(daemon_error(err));
    }
}

async fn set_mode(
    bridge: &Bridge,
    req: SetSessionModeRequest,
) -> Result<SetSessionModeResponse, Error> {
    let Some(mode) = updates::mode(&req.mode_id) else {
        return Err(Error::invalid_params().data(format!("no mode `{}`", req.mode_id)));
    };
    let request = Request::SetMode {
        session: session_id(&req.session_id),
        mode,
    };
    bridge
        .daemon()
        .request(request)
        .await
        .map_err(daemon_error)?;
    Ok(SetSessionModeResponse::new())
}
