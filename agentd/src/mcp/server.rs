//! One running instance of a configured MCP server: started on first use, its tool list cached
//! (and fetched again when the server says it changed), restarted after it died, with backoff
//! after failed starts, and stopped with its whole process group.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use protocol::SessionId;
use rmcp::model::{CallToolRequestParams, PaginatedRequestParams, Tool as McpToolDef};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use tokio_util::sync::CancellationToken;

use super::client::Handler;
use super::config::{McpServerConfig, McpTransport};
use super::stderr::Tail;
use crate::tools::ToolOutput;
use crate::tools::pool::INTERRUPTED_RUNNING;
use crate::tools::processes::{self, ProcessRecords, Recorded};

/// Failed starts after which a server counts as failed (it is still tried again, later).
const FAILED_AFTER: u32 = 3;
/// How long the end of a failed server's stderr is waited for, to say what it said.
const STDERR_GRACE: Duration = Duration::from_millis(500);
/// How long a stopping server may take to go before its process group is killed.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// Where and with what an instance starts.
#[derive(Clone)]
pub(crate) struct Launch {
    /// The directory a stdio server runs in, unless its entry names one.
    pub(crate) cwd: PathBuf,
    /// The environment a stdio server runs with, before its entry's `env`.
    pub(crate) env: LaunchEnv,
    /// The HTTP client for Streamable HTTP servers.
    pub(crate) http: reqwest::Client,
    /// Where server process groups are recorded, for the next daemon after a crash.
    pub(crate) processes: ProcessRecords,
}

/// Where a server's environment comes from; the daemon's own is read only when a server starts.
#[derive(Clone)]
pub(crate) enum LaunchEnv {
    /// A session's (already filtered).
    Session(Arc<Vec<(String, String)>>),
    /// The daemon's, filtered by these settings.
    Daemon(crate::shell_env::ShellEnv),
}

impl LaunchEnv {
    fn resolve(&self) -> Vec<(String, String)> {
        match self {
            LaunchEnv::Session(env) => env.to_vec(),
            LaunchEnv::Daemon(settings) => settings.for_commands(&crate::shell_env::current()),
        }
    }
}

/// What `agentctl mcp list` shows of an instance.
#[derive(Debug, Clone, Default)]
pub(crate) struct Status {
    /// `idle`, `starting`, `ready`, `restarting`, `failed` or `stopped`.
    pub(crate) state: &'static str,
    /// The server process.
    pub(crate) pid: Option<u32>,
    /// Tools offered.
    pub(crate) tools: usize,
    /// The last thing that went wrong.
    pub(crate) last_error: Option<String>,
}

/// One instance of a server: the daemon's, or one session's.
pub(crate) struct Instance {
    /// Its configuration.
    pub(crate) config: McpServerConfig,
    /// The session it belongs to, for `session` scope.
    pub(crate) session: Option<SessionId>,
    conn: tokio::sync::Mutex<Conn>,
    status: Mutex<Status>,
    stopped: AtomicBool,
}

/// The connection, guarded so that one start serves every caller waiting for it.
#[derive(Default)]
struct Conn {
    live: Option<Arc<Live>>,
    failed_starts: u32,
    last_failure: Option<Instant>,
    last_error: Option<String>,
}

/// A started server.
struct Live {
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    peer: Peer<RoleClient>,
    stale: Arc<AtomicBool>,
    tools: Mutex<Arc<Vec<McpToolDef>>>,
    process: Option<Process>,
    stderr: Arc<Tail>,
}

/// A stdio server's process group.
struct Process {
    pid: u32,
    start: u64,
    /// What the server and its children carry in their environment, also after leaving the
    /// group.
    marker: String,
    _record: Recorded,
}

impl Drop for Process {
    fn drop(&mut self) {
        // Whatever the server left behind in its group goes with it.
        if let Ok(pgid) = i32::try_from(self.pid) {
            processes::kill_group(pgid, self.start);
        }
        processes::kill_marked(&self.marker);
    }
}

impl Instance {
    /// A new instance, not started.
    pub(crate) fn new(config: McpServerConfig, session: Option<SessionId>) -> Instance {
        Instance {
            config,
            session,
            conn: tokio::sync::Mutex::default(),
            status: Mutex::new(Status {
                state: "idle",
                ..Status::default()
            }),
            stopped: AtomicBool::new(false),
        }
    }

    fn name(&self) -> &str {
        &self.config.name
    }

    /// What the instance is doing now.
    pub(crate) fn status(&self) -> Status {
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_status(&self, change: impl FnOnce(&mut Status)) {
        change(&mut self.status.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// The server's tools, starting it first when needed; the cached list unless the server
    /// said it changed.
    pub(crate) async fn tools(&self, launch: &Launch) -> Result<Arc<Vec<McpToolDef>>, String> {
        let live = self.ensure(launch).await?;
        if live.stale.swap(false, Ordering::SeqCst) {
            match tokio::time::timeout(
                self.config.startup_timeout,
                list_tools(&live.peer, self.name()),
            )
            .await
            {
                Ok(Ok(tools)) => {
                    let count = tools.len();
                    *live.tools.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(tools);
                    self.set_status(|s| s.tools = count);
                    tracing::info!(server = self.name(), tools = count, "MCP tools changed");
                }
                Ok(Err(err)) => {
                    live.stale.store(true, Ordering::SeqCst);
                    tracing::warn!(server = self.name(), "cannot list the changed tools: {err}");
                }
                Err(_) => live.stale.store(true, Ordering::SeqCst),
            }
        }
        Ok(live.tools.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// Calls `tool` with `args`; gives up at the call timeout or when `cancel` fires (the server
    /// is told with `notifications/cancelled`, and is not waited for).
    pub(crate) async fn call(
        &self,
        launch: &Launch,
        tool: &str,
        args: serde_json::Map<String, serde_json::Value>,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let live = tokio::select! {
            live = self.ensure(launch) => match live {
                Ok(live) => live,
                Err(err) => return ToolOutput::error(err),
            },
            () = cancel.cancelled() => return ToolOutput::error(INTERRUPTED_RUNNING),
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let timeout = self.config.call_timeout;
        // Dropping the request (on timeout or cancel) sends `notifications/cancelled`.
        let answer = tokio::select! {
            answer = tokio::time::timeout(timeout, live.peer.call_tool(params)) => answer,
            () = cancel.cancelled() => return ToolOutput::error(INTERRUPTED_RUNNING),
        };
        let name = self.name();
        match answer {
            Ok(Ok(result)) => super::result::to_output(&result),
            Ok(Err(ServiceError::McpError(err))) => ToolOutput::error(format!(
                "MCP server `{name}` refused the call of `{tool}`: {}",
                err.message
            )),
            Ok(Err(err)) if live.peer.is_transport_closed() => {
                let tail = live.stderr.describe();
                self.set_status(|s| {
                    s.state = "restarting";
                    s.last_error = Some(format!("exited during a call of `{tool}`{tail}"));
                });
                ToolOutput::error(format!(
                    "MCP server `{name}` stopped during the call of `{tool}` ({err}){tail}; it is started again on the next call"
                ))
            }
            Ok(Err(err)) => ToolOutput::error(format!(
                "MCP server `{name}` failed the call of `{tool}`: {err}"
            )),
            Err(_) => ToolOutput::error(format!(
                "MCP server `{name}` did not answer `{tool}` within {} s, so the call was cancelled (raise `call_timeout_ms` in [mcp_servers.{name}] if it needs longer)",
                timeout.as_secs_f32()
            )),
        }
    }

    /// The live connection, started (or started again) when there is none.
    async fn ensure(&self, launch: &Launch) -> Result<Arc<Live>, String> {
        let name = self.name().to_string();
        let mut conn = self.conn.lock().await;
        if self.stopped.load(Ordering::SeqCst) {
            return Err(format!(
                "MCP server `{name}` was stopped (its configuration changed or its session ended); try again"
            ));
        }
        if let Some(live) = &conn.live {
            if !live.peer.is_transport_closed() {
                return Ok(live.clone());
            }
            let error = format!("exited{}", live.stderr.describe());
            tracing::warn!(server = %name, "MCP server {error}; starting it again");
            conn.last_error = Some(error);
            if let Some(live) = conn.live.take() {
                live.stop().await;
            }
        }
        if let (Some(at), Some(error)) = (conn.last_failure, &conn.last_error)
            && conn.failed_starts > 0
        {
            // A server that died after a good start is started again at once.
            let wait = crate::restart_backoff::backoff(conn.failed_starts);
            let left = wait.saturating_sub(at.elapsed());
            if !left.is_zero() {
                return Err(format!(
                    "MCP server `{name}` failed to start: {error}; it is tried again in {} s (check [mcp_servers.{name}] in config.toml)",
                    left.as_secs().max(1)
                ));
            }
        }
        self.set_status(|s| s.state = "starting");
        let started = tokio::time::timeout(self.config.startup_timeout, self.connect(launch)).await;
        let outcome = match started {
            Ok(outcome) => outcome,
            Err(_) => Err(format!(
                "it did not finish `initialize` and `tools/list` within {} s (`startup_timeout_ms`)",
                self.config.startup_timeout.as_secs_f32()
            )),
        };
        match outcome {
            Ok(live) => {
                let (pid, tools) = (
                    live.process.as_ref().map(|p| p.pid),
                    live.tools.lock().unwrap_or_else(|e| e.into_inner()).len(),
                );
                tracing::info!(server = %name, ?pid, tools, "MCP server ready");
                conn.failed_starts = 0;
                conn.live = Some(live.clone());
                self.set_status(|s| {
                    s.state = "ready";
                    s.pid = pid;
                    s.tools = tools;
                });
                Ok(live)
            }
            Err(error) => {
                conn.failed_starts += 1;
                conn.last_failure = Some(Instant::now());
                conn.last_error = Some(error.clone());
                tracing::warn!(server = %name, "MCP server failed to start: {error}");
                let failed = conn.failed_starts >= FAILED_AFTER;
                self.set_status(|s| {
                    s.state = if failed { "failed" } else { "restarting" };
                    s.pid = None;
                    s.last_error = Some(error.clone());
                });
                Err(format!(
                    "MCP server `{name}` failed to start: {error} (check [mcp_servers.{name}] in config.toml)"
                ))
            }
        }
    }

    /// Starts the server, shakes hands and lists its tools.
    async fn connect(&self, launch: &Launch) -> Result<Arc<Live>, String> {
        let handler = Handler::default();
        let stale = handler.stale.clone();
        let stderr = Arc::new(Tail::default());
        let (service, process) = match &self.config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let pending = launch
                    .processes
                    .prepare(&format!("mcp server {}", self.name()));
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .env_clear()
                    .envs(launch.env.resolve())
                    .envs(env)
                    .env(pending.env().0, pending.env().1)
                    .current_dir(match cwd {
                        Some(dir) => launch.cwd.join(dir),
                        None => launch.cwd.clone(),
                    })
                    .kill_on_drop(true);
                #[cfg(unix)]
                cmd.process_group(0);
                let (transport, err_pipe) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot run `{command}`: {e}"))?;
                let marker = pending.marker().to_string();
                let process = transport.id().map(|pid| Process {
                    pid,
                    start: processes::start_time(pid as i32).unwrap_or(0),
                    marker,
                    _record: pending.started(pid as i32),
                });
                let collector = err_pipe.map(|pipe| {
                    let (tail, name) = (stderr.clone(), self.name().to_string());
                    tokio::spawn(async move { tail.collect(&name, pipe).await })
                });
                match handler.serve(transport).await {
                    Ok(service) => (service, process),
                    Err(err) => {
                        // The server is gone or going: what it said last tells why.
                        if let Some(collector) = collector {
                            let _ = tokio::time::timeout(STDERR_GRACE, collector).await;
                        }
                        return Err(format!("`initialize` failed ({err}){}", stderr.describe()));
                    }
                }
            }
            McpTransport::Http { url, headers } => {
                let mut map = HashMap::new();
                for (name, value) in headers {
                    let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| format!("header `{name}` is not a valid header name"))?;
                    let value = reqwest::header::HeaderValue::from_str(value)
                        .map_err(|_| format!("the value of header `{name}` is not valid"))?;
                    map.insert(name, value);
                }
                let mut config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map);
                config.retry_config =
                    Arc::new(rmcp::transport::common::client_side_sse::NeverRetry::default());
                let transport =
                    StreamableHttpClientTransport::with_client(launch.http.clone(), config);
                let service = handler.serve(transport).await.map_err(|e| {
                    // A token may sit in the query: it is not shown.
                    let shown = url.split('?').next().unwrap_or_default();
                    format!("`initialize` with {shown} failed: {e}")
                })?;
                (service, None)
            }
        };
        let peer = service.peer().clone();
        let tools = list_tools(&peer, self.name())
            .await
            .map_err(|e| format!("`tools/list` failed: {e}{}", stderr.describe()))?;
        Ok(Arc::new(Live {
            service: Mutex::new(Some(service)),
            peer,
            stale,
            tools: Mutex::new(Arc::new(tools)),
            process,
            stderr,
        }))
    }

    /// Stops the instance for good: calls waiting for it fail, and the server and its process
    /// group are gone when this returns.
    pub(crate) async fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let live = self.conn.lock().await.live.take();
        if let Some(live) = live {
            live.stop().await;
        }
        self.set_status(|s| {
            s.state = "stopped";
            s.pid = None;
        });
    }
}

impl Live {
    /// Closes the connection (a stdio server sees its stdin close), then kills what is left of
    /// the process group.
    async fn stop(&self) {
        let service = self
            .service
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(service) = service {
            let _ = tokio::time::timeout(STOP_GRACE, service.cancel()).await;
        }
        if let Some(process) = &self.process {
            if let Ok(pgid) = i32::try_from(process.pid) {
                processes::kill_group(pgid, process.start);
            }
            processes::kill_marked(&process.marker);
        }
    }
}

/// Pages of `tools/list` followed at most: a server that pages for ever is cut off.
const MAX_PAGES: usize = 50;

/// The server's tools, page after page, up to the most a server may offer.
async fn list_tools(
    peer: &Peer<RoleClient>,
    server: &str,
) -> Result<Vec<McpToolDef>, ServiceError> {
    let limit = super::toolset::MAX_TOOLS_PER_SERVER;
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let page = peer.list_tools(Some(params)).await?;
        tools.extend(page.tools);
        cursor = page.next_cursor;
        if cursor.is_none() || tools.len() >= limit {
            break;
        }
    }
    if cursor.is_some() || tools.len() > limit {
        tracing::warn!(
            server,
            limit,
            "MCP server offers too many tools (or pages); the rest are left out"
        );
        tools.truncate(limit);
    }
    Ok(tools)
}
