//! One running language server process: started in its own process group with the command
//! environment (secrets already filtered), under the sandbox helper unless `[lsp] sandbox =
//! false` (see the `confine` module), recorded for the next daemon, its stderr logged (bounded),
//! the handshake made; stopped with `shutdown`/`exit` and then its whole group. A confined
//! server's leader is the helper, which runs the server as the first process of a PID namespace
//! of its own: killing the group (or the helper alone) ends every process of the namespace, and
//! the connection ends when the server does, so a crash is seen as before.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_lsp::{MainLoop, ServerSocket};
use lsp_types::notification::{DidChangeConfiguration, Exit, Initialized, Notification};
use lsp_types::request::{Initialize, Request, Shutdown};
use lsp_types::{
    ClientCapabilities, DidChangeConfigurationClientCapabilities, DidChangeConfigurationParams,
    DidChangeWatchedFilesClientCapabilities, GeneralClientCapabilities, InitializeParams,
    InitializedParams, PositionEncodingKind, PublishDiagnosticsClientCapabilities,
    TextDocumentClientCapabilities, TextDocumentSyncClientCapabilities, Url,
    WindowClientCapabilities, WorkspaceClientCapabilities, WorkspaceFolder,
};
use tokio::sync::watch;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::confine::{Launch, ServerSandbox};
use super::encoding::Encoding;
use super::handlers::{Stop, router};
use super::outbox::Counted;
use super::published::PublishedStore;
use super::select::ServerSpec;
use crate::mcp::stderr::Tail;
use crate::tools::processes::{self, ProcessRecords, Recorded};

/// How long starting and `initialize` may take.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopping server may take to answer `shutdown` and exit before its group is
/// killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// A started server.
pub(crate) struct Live {
    /// Where requests and notifications go.
    socket: ServerSocket,
    /// The server's process id (and group).
    pub(crate) pid: u32,
    /// The column unit it speaks.
    pub(crate) encoding: Encoding,
    /// Whether it runs in the sandbox.
    pub(crate) confined: bool,
    /// Becomes `true` when the server's main loop ended (it exited, crashed or was stopped).
    ended: watch::Receiver<bool>,
    /// The end of what it wrote to stderr.
    stderr: Arc<Tail>,
    /// What was sent to it and what it took.
    outbox: Arc<super::outbox::Outbox>,
    /// Its process group, killed when this goes.
    group: Group,
}

/// A server's process group, and its record for the next daemon.
struct Group {
    pid: u32,
    start: u64,
    marker: String,
    _record: Recorded,
}

impl Drop for Group {
    fn drop(&mut self) {
        // Whatever the server left behind in its group goes with it.
        if let Ok(pgid) = i32::try_from(self.pid) {
            processes::kill_group(pgid, self.start);
        }
        processes::kill_marked(&self.marker);
    }
}

impl Live {
    /// Starts `spec` for `root` with `env`, in `sandbox` when `sandboxed`, and shakes hands;
    /// diagnostics it publishes go to `published`.
    pub(crate) async fn start(
        spec: &ServerSpec,
        root: &Path,
        env: &[(String, String)],
        records: &ProcessRecords,
        sandbox: &ServerSandbox,
        sandboxed: bool,
        published: PublishedStore,
    ) -> Result<Live, String> {
        let (program, args) = spec
            .command
            .split_first()
            .ok_or_else(|| format!("[lsp.{}] has an empty command", spec.name))?;
        let root_uri = Url::from_directory_path(root)
            .map_err(|()| format!("{} is not an absolute directory", root.display()))?;
        let folder = WorkspaceFolder {
            uri: root_uri.clone(),
            name: root
                .file_name()
                .map_or_else(|| "root".to_string(), |n| n.to_string_lossy().into_owned()),
        };
        let launch = sandbox.launch(sandboxed, root, env)?;
        let pending = records.prepare(&format!("language server {}", spec.name));
        let mut command = match &launch {
            // The daemon's own binary confines itself, then becomes the server.
            Launch::Confined { helper, policy } => {
                let mut command = tokio::process::Command::new(helper);
                command.args(policy.helper_args()).arg(program);
                command
            }
            Launch::Unconfined => tokio::process::Command::new(program),
        };
        command
            .args(args)
            .env_clear()
            .envs(env.iter().cloned())
            .env(pending.env().0, pending.env().1)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let confined = matches!(launch, Launch::Confined { .. });
        if confined {
            let tmp = crate::sandbox::policy::TMP_MOUNT;
            command.env("TMPDIR", tmp);
            // rust-analyzer's `cargo check` writes its build where it can: the private /tmp.
            command.env("CARGO_TARGET_DIR", format!("{tmp}/cargo-target"));
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run `{program}`: {e}"))?;
        let pid = child.id().unwrap_or(0);
        let group = Group {
            pid,
            start: processes::start_time(pid as i32).unwrap_or(0),
            marker: pending.marker().to_string(),
            _record: pending.started(pid as i32),
        };
        let (Some(stdin), Some(stdout), Some(stderr_pipe)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(format!("`{program}` started without its pipes"));
        };
        let stderr = Arc::new(Tail::default());
        {
            let (tail, label) = (stderr.clone(), format!("lsp {}", spec.name));
            tokio::spawn(async move { tail.collect(&label, stderr_pipe).await });
        }
        let (settings, name) = (spec.settings.clone(), spec.name.clone());
        let (main_loop, socket) = MainLoop::new_client(|socket| {
            router(socket, name, published, settings, folder.clone())
        });
        // The server's output reaches the JSON-RPC layer only as bounded, well-formed messages.
        let (checked, relay_end) = tokio::io::duplex(64 << 10);
        {
            let name = spec.name.clone();
            tokio::spawn(async move {
                if let Err(why) = super::frames::relay(stdout, relay_end).await {
                    tracing::warn!(server = %name, pid, "language server output refused: {why}; it is stopped");
                }
            });
        }
        let outbox = Arc::new(super::outbox::Outbox::default());
        let sent = outbox.clone();
        let (ended_tx, ended) = watch::channel(false);
        let name = spec.name.clone();
        tokio::spawn(async move {
            let outcome = main_loop
                .run_buffered(checked.compat(), Counted::new(stdin, sent).compat_write())
                .await;
            if let Err(err) = outcome {
                tracing::info!(server = %name, pid, "language server connection ended: {err}");
            }
            // A server that was told to exit has a moment to do so; the group is killed after.
            if tokio::time::timeout(STOP_GRACE, child.wait())
                .await
                .is_err()
            {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
            let _ = ended_tx.send(true);
        });
        let live = Live {
            socket,
            pid,
            encoding: Encoding::default(),
            confined,
            ended,
            stderr,
            outbox,
            group,
        };
        let params = initialize_params(spec, root_uri, folder, confined);
        let answer =
            tokio::time::timeout(START_TIMEOUT, live.socket.request::<RawInitialize>(params)).await;
        let result = match answer {
            Ok(Ok(result)) => result,
            Ok(Err(err)) => {
                return Err(format!(
                    "`initialize` failed ({err}){}",
                    live.stderr.describe()
                ));
            }
            Err(_) => {
                return Err(format!(
                    "no answer to `initialize` within {} s{}",
                    START_TIMEOUT.as_secs(),
                    live.stderr.describe()
                ));
            }
        };
        let live = Live {
            encoding: Encoding::negotiated(&result),
            ..live
        };
        live.notify::<Initialized>(InitializedParams {});
        if !spec.settings.is_null() {
            live.notify::<DidChangeConfiguration>(DidChangeConfigurationParams {
                settings: spec.settings.clone(),
            });
        }
        Ok(live)
    }

    /// Whether the server is still there.
    pub(crate) fn alive(&self) -> bool {
        !*self.ended.borrow()
    }

    /// Returns when the server is gone.
    pub(crate) async fn ended(&self) {
        let mut ended = self.ended.clone();
        let _ = ended.wait_for(|&e| e).await;
    }

    /// What the server last wrote to stderr, for an error.
    pub(crate) fn stderr_tail(&self) -> String {
        self.stderr.describe()
    }

    /// Sends a notification; a server that went is noticed on the next use. A server that has
    /// not taken what was sent to it for a while is stopped instead (it is started again on the
    /// next need).
    pub(crate) fn notify<N: Notification>(&self, params: N::Params) {
        if !self.outbox.admit(&params) {
            tracing::warn!(
                pid = self.pid,
                "language server is not reading its input ({} MiB waiting); stopping it",
                super::outbox::MAX_BACKLOG >> 20
            );
            if let Ok(pgid) = i32::try_from(self.group.pid) {
                processes::kill_group(pgid, self.group.start);
            }
            return;
        }
        let _ = self.socket.notify::<N>(params);
    }

    /// Sends a request and waits for its answer (the `code` tool's questions).
    pub(crate) async fn request<R: Request>(
        &self,
        params: R::Params,
    ) -> Result<R::Result, async_lsp::Error> {
        self.socket.request::<R>(params).await
    }

    /// Asks the server to shut down and exit, ends the connection, and waits (bounded) for the
    /// process to go; its group is killed when `self` is dropped.
    pub(crate) async fn stop(&self) {
        let mut ended = self.ended.clone();
        if self.alive() {
            let asked = tokio::time::timeout(STOP_GRACE, self.socket.request::<Shutdown>(()));
            if matches!(asked.await, Ok(Ok(()))) {
                self.notify::<Exit>(());
            }
            let _ = self.socket.emit(Stop);
            let _ = tokio::time::timeout(STOP_GRACE * 2, ended.wait_for(|&e| e)).await;
        }
    }
}

/// `initialize`, sent and answered as JSON: clangd's `offsetEncoding` (asked and answered) is in
/// neither typed form.
enum RawInitialize {}

impl Request for RawInitialize {
    type Params = serde_json::Value;
    type Result = serde_json::Value;
    const METHOD: &'static str = Initialize::METHOD;
}

/// What the daemon tells a server of itself at `initialize`: push diagnostics with versions,
/// settings by request, progress, UTF-8 columns if it can (docs/architecture.md#language-servers).
/// A `confined` server is not told the daemon's pid: it could not see it from inside the sandbox
/// (its own pid namespace, signals scoped), and servers that watch their client's pid (pyright,
/// every server built on vscode-languageserver) would take the daemon for dead and exit.
fn initialize_params(
    spec: &ServerSpec,
    root_uri: Url,
    folder: WorkspaceFolder,
    confined: bool,
) -> serde_json::Value {
    let dynamic = Some(true);
    let capabilities = ClientCapabilities {
        general: Some(GeneralClientCapabilities {
            position_encodings: Some(vec![
                PositionEncodingKind::UTF8,
                PositionEncodingKind::UTF16,
            ]),
            ..GeneralClientCapabilities::default()
        }),
        window: Some(WindowClientCapabilities {
            work_done_progress: Some(true),
            ..WindowClientCapabilities::default()
        }),
        workspace: Some(WorkspaceClientCapabilities {
            configuration: Some(true),
            workspace_folders: Some(true),
            did_change_configuration: Some(DidChangeConfigurationClientCapabilities {
                dynamic_registration: dynamic,
            }),
            did_change_watched_files: Some(DidChangeWatchedFilesClientCapabilities {
                dynamic_registration: dynamic,
                ..DidChangeWatchedFilesClientCapabilities::default()
            }),
            ..WorkspaceClientCapabilities::default()
        }),
        // No pull diagnostics: a server offered them may stop pushing.
        text_document: Some(TextDocumentClientCapabilities {
            synchronization: Some(TextDocumentSyncClientCapabilities {
                did_save: Some(true),
                ..TextDocumentSyncClientCapabilities::default()
            }),
            publish_diagnostics: Some(PublishDiagnosticsClientCapabilities {
                version_support: Some(true),
                related_information: Some(true),
                ..PublishDiagnosticsClientCapabilities::default()
            }),
            ..TextDocumentClientCapabilities::default()
        }),
        experimental: Some(serde_json::json!({"serverStatusNotification": true})),
    };
    // Some servers still read the deprecated `rootUri`.
    #[allow(deprecated)]
    let params = InitializeParams {
        process_id: (!confined).then(std::process::id),
        root_uri: Some(root_uri),
        initialization_options: spec.init_options.clone(),
        capabilities,
        workspace_folders: Some(vec![folder]),
        ..InitializeParams::default()
    };
    let mut params = serde_json::to_value(params).unwrap_or_default();
    if let Some(capabilities) = params
        .get_mut("capabilities")
        .and_then(|c| c.as_object_mut())
    {
        capabilities.insert(
            "offsetEncoding".to_string(),
            serde_json::json!(["utf-8", "utf-16"]),
        );
    }
    params
}
