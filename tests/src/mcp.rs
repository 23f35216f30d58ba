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

/// The pid in a `started PID` event.
pub fn started_pid(event: &str) -> i32 {
    event
        .strip_prefix("started ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("not a start event: {event}"))
}

/// Starts the test server over Streamable HTTP; returns it (killed on drop) and its URL.
pub async fn http_server(events: &ServerEvents) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(crate::binary("mcp_server"))
        .arg("--http")
        .env("MCP_TEST_EVENTS", events.path())
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
