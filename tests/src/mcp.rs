//! Helpers for tests with the test MCP server (`src/bin/mcp_server.rs`): its config entries,
//! and the events it reports (`started PID`, `call NAME`, `cancelled NAME`) over a Unix socket.

use std::os::unix::net::UnixListener as StdListener;
use std::path::{Path, PathBuf};

use tempfile::TempDir;
use tokio::io::AsyncBufReadExt;
use tokio::net::UnixListener;

/// Where the test MCP servers report what happens to them.
pub struct ServerEvents {
    _dir: TempDir,
    path: PathBuf,
    listener: UnixListener,
    /// The same socket, for taking what is there without waiting.
    backlog: StdListener,
}

impl ServerEvents {
    /// A fresh socket to report to.
    pub fn new() -> ServerEvents {
        let dir = tempfile::Builder::new()
            .prefix("mcpev")
            .tempdir_in("/tmp")
            .expect("a directory for the socket");
        let path = dir.path().join("events.sock");
        let std = StdListener::bind(&path).expect("events socket");
        std.set_nonblocking(true).expect("non-blocking");
        let backlog = std.try_clone().expect("a second handle");
        let listener = UnixListener::from_std(std).expect("tokio listener");
        ServerEvents {
            _dir: dir,
            path,
            listener,
            backlog,
        }
    }

    /// The socket's path, for `MCP_TEST_EVENTS`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next event a server reports, failing the test after [`crate::WAIT`].
    pub async fn next(&self) -> String {
        let next = async {
            let (stream, _) = self.listener.accept().await.expect("a server reports");
            let mut line = String::new();
            tokio::io::BufReader::new(stream)
                .read_line(&mut line)
                .await
                .expect("its report");
            line.trim_end().to_string()
        };
        tokio::time::timeout(crate::WAIT, next)
            .await
            .expect("a server event within the wait")
    }

    /// Events until one starts with `prefix`, which is returned.
    pub async fn until(&self, prefix: &str) -> String {
        loop {
            let event = self.next().await;
            if event.starts_with(prefix) {
                return event;
            }
        }
    }

    /// The events reported and not read yet, without waiting for more (every report is made
    /// before the server answers the call it is about, so after a run they are all here).
    pub fn pending(&self) -> Vec<String> {
        use std::io::BufRead;
        let mut events = Vec::new();
        while let Ok((stream, _)) = self.backlog.accept() {
            let _ = stream.set_nonblocking(false);
            let mut line = String::new();
            let _ = std::io::BufReader::new(stream).read_line(&mut line);
            events.push(line.trim_end().to_string());
        }
        events
    }
}

impl Default for ServerEvents {
    fn default() -> Self {
        ServerEvents::new()
    }
}

/// A `[mcp_servers.NAME]` entry running the test server over stdio, reporting to `events`,
/// with `extra` lines appended.
pub fn stdio_entry(name: &str, events: &ServerEvents, extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nenv = {{ MCP_TEST_EVENTS = {:?} }}\n{extra}\n",
        crate::binary("mcp_server").display().to_string(),
        events.path().display().to_string(),
    )
}

/// The same entry for a server that reports nothing (benchmarks: a report per call would be
/// part of the server's own time, and reports nobody reads would fill the socket's backlog).
pub fn quiet_entry(name: &str, extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\n{extra}\n",
        crate::binary("mcp_server").display().to_string(),
    )
}

/// The pid in a `started PID` event.
pub fn started_pid(event: &str) -> i32 {
    event
        .strip_prefix("started ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("not a start event: {event}"))
}

/// Starts the test server over Streamable HTTP, reporting to `events` if given; returns it
/// (killed on drop) and its URL.
pub async fn http_server(events: Option<&ServerEvents>) -> (tokio::process::Child, String) {
    let mut command = tokio::process::Command::new(crate::binary("mcp_server"));
    if let Some(events) = events {
        command.env("MCP_TEST_EVENTS", events.path());
    }
    let mut child = command
        .arg("--http")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the HTTP test server starts");
    let stdout = child.stdout.take().expect("its stdout");
    let mut line = String::new();
    tokio::time::timeout(
        crate::WAIT,
        tokio::io::BufReader::new(stdout).read_line(&mut line),
    )
    .await
    .expect("it says where it listens")
    .expect("its first line");
    let url = line
        .trim()
        .strip_prefix("listening ")
        .expect("a `listening URL` line")
        .to_string();
    (child, url)
}

/// A daemon whose config names test MCP servers, a scripted model, and one session watched by
/// a client: what most MCP tests start from.
pub struct McpSetup {
    /// Where the servers report.
    pub events: ServerEvents,
    /// The scripted model.
    pub model: crate::model_server::ModelServer,
    /// The daemon.
    pub daemon: crate::Daemon,
    /// The session's directory.
    pub project: TempDir,
    /// A client subscribed to the session.
    pub client: agentctl::client::Client,
    /// The session.
    pub session: protocol::SessionId,
    /// The client's events.
    pub incoming: tokio::sync::mpsc::UnboundedReceiver<agentctl::client::Incoming>,
}

impl McpSetup {
    /// Starts it all; `config` makes the MCP part of `config.toml` from the events socket.
    pub async fn start(
        config: impl FnOnce(&ServerEvents) -> String,
        script: Vec<crate::model_server::Scripted>,
        daemon_env: &[(&str, &str)],
    ) -> McpSetup {
        let events = ServerEvents::new();
        let home = crate::Home::with_config(&format!(
            "retry_base_ms = 5\nretry_max_ms = 20\n{}",
            config(&events)
        ));
        let project = tempfile::tempdir().expect("project directory");
        let model = crate::model_server::ModelServer::start(script).await;
        let daemon = crate::Daemon::start_with(home, daemon_env);
        let (client, session, incoming) = crate::session_in(&daemon, project.path()).await;
        McpSetup {
            events,
            model,
            daemon,
            project,
            client,
            session,
            incoming,
        }
    }

    /// Run options against the scripted model that allow writes, commands and MCP calls.
    pub fn options(&self) -> protocol::RunOptions {
        let mut options = crate::run_options(&self.model);
        options.grants.push(protocol::PermissionClass::Mcp);
        options
    }

    /// Runs `prompt` with `options` to its end; returns its events.
    pub async fn run_with(
        &mut self,
        prompt: &str,
        options: protocol::RunOptions,
    ) -> Vec<protocol::SessionEvent> {
        crate::start_run(&self.client, &self.session, prompt, options).await;
        crate::until_finished(&mut self.incoming).await
    }

    /// Runs `prompt` with MCP calls allowed; returns its events.
    pub async fn run(&mut self, prompt: &str) -> Vec<protocol::SessionEvent> {
        let options = self.options();
        self.run_with(prompt, options).await
    }

    /// `agentctl mcp list --json`.
    pub fn mcp_list(&self) -> Vec<serde_json::Value> {
        let output = self.daemon.home.run_agentctl(&["mcp", "list", "--json"]);
        assert!(output.status.success(), "{output:?}");
        serde_json::from_slice::<serde_json::Value>(&output.stdout)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .expect("a JSON array")
    }
}

/// The tool names and the system prompt of a request to the model.
pub fn offered(request: &serde_json::Value) -> (Vec<String>, String) {
    let names = request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let system = match &request["system"] {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    (names, system)
}
