//! Test support: a fixture that runs the real `agentd` binary in a private temporary home and
//! drives it with the real `agentctl` binary or the protocol client, plus a scripted model
//! server that speaks the providers' wire formats.

pub mod acp;
pub mod fuzz;
pub mod mcp;
pub mod model_server;
pub mod pty;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use protocol::client::{Client, Incoming};
use protocol::paths::Paths;
use protocol::{CreateSession, Event, Reply, Request, SessionEvent, SessionId, SessionInfo};
use tempfile::TempDir;
use tokio::sync::mpsc::UnboundedReceiver;

/// How long any single wait in a test may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(20);

/// The directory holding the built `agentd` and `agentctl` binaries.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENTD_TEST_BIN_DIR") {
        return PathBuf::from(dir);
    }
    // Test executables live in target/<profile>/deps; the binaries one level up.
    let exe = std::env::current_exe().expect("current test executable");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable in target/<profile>/deps")
        .to_path_buf();
    for name in ["agentd", "agentctl"] {
        let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        assert!(
            bin.is_file(),
            "{} is missing: run the tests with `cargo test --workspace` (which builds the binaries)",
            bin.display()
        );
    }
    dir
}

/// The path of one of the workspace's binaries.
pub fn binary(name: &str) -> PathBuf {
    bin_dir().join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// A private temporary home for one daemon: short, so the socket path fits in `sun_path`.
pub struct Home {
    dir: TempDir,
}

impl Home {
    /// A fresh home whose configuration retries model calls quickly (tests need no real
    /// backoff).
    pub fn new() -> Home {
        Home::with_config("retry_base_ms = 5\nretry_max_ms = 20\n")
    }

    /// A fresh home with `config` as its `config.toml`.
    pub fn with_config(config: &str) -> Home {
        let dir = tempfile::Builder::new()
            .prefix("ad")
            .tempdir_in("/tmp")
            .expect("temporary home");
        let home = Home { dir };
        let file = home.paths().config_file();
        std::fs::create_dir_all(file.parent().expect("config dir")).expect("config dir");
        std::fs::write(file, config).expect("config written");
        home
    }

    /// The home directory (`AGENTD_HOME`).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The daemon's paths under this home.
    pub fn paths(&self) -> Paths {
        Paths::under(self.path())
    }

    /// An `agentctl` command with this home in its environment.
    pub fn agentctl(&self, args: &[&str]) -> Command {
        let mut command = Command::new(binary("agentctl"));
        command
            .args(args)
            .env("AGENTD_HOME", self.path())
            .env_remove("AGENTD_SOCKET")
            .env("AGENTD_BIN", binary("agentd"))
            .env("NO_COLOR", "1");
        command
    }

    /// Runs `agentctl` with `args` to completion.
    pub fn run_agentctl(&self, args: &[&str]) -> Output {
        self.agentctl(args).output().expect("agentctl runs")
    }

    /// An `agentctl` command against the scripted `server`, run in `cwd`.
    pub fn agentctl_with(
        &self,
        server: &model_server::ModelServer,
        cwd: &Path,
        args: &[&str],
    ) -> tokio::process::Command {
        let mut command = tokio::process::Command::from(self.agentctl(args));
        command
            .current_dir(cwd)
            .env("ANTHROPIC_BASE_URL", server.url())
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// An `agentd` command with this home in its environment, stdout piped.
    pub fn agentd(&self) -> Command {
        let mut command = Command::new(binary("agentd"));
        command
            .env("AGENTD_HOME", self.path())
            .env_remove("AGENTD_SOCKET")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }
}

impl Drop for Home {
    /// Kills a daemon still running in this home (one that `agentctl` started, say), so a
    /// failing test leaves nothing behind. Only a daemon that still holds the pid file's lock
    /// is running; a stale pid is never signalled.
    fn drop(&mut self) {
        let pid_file = self.paths().pid_file();
        let Ok(file) = std::fs::File::open(&pid_file) else {
            return;
        };
        if let Err(std::fs::TryLockError::WouldBlock) = file.try_lock()
            && let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|text| text.trim().parse::<u32>().ok())
        {
            signal(pid, libc::SIGKILL);
        }
    }
}

impl Default for Home {
    fn default() -> Self {
        Home::new()
    }
}

/// A running daemon in its own home; stopped (SIGTERM, then SIGKILL) on drop.
pub struct Daemon {
    /// The daemon's home.
    pub home: Home,
    child: Child,
    env: Vec<(String, String)>,
}

impl Daemon {
    /// Starts `agentd` in a fresh home and waits for its ready line.
    pub fn start() -> Daemon {
        Daemon::start_in(Home::new())
    }

    /// Starts `agentd` in `home` and waits for its ready line.
    pub fn start_in(home: Home) -> Daemon {
        Daemon::start_with(home, &[])
    }

    /// Starts `agentd` in `home` with extra environment variables.
    pub fn start_with(home: Home, env: &[(&str, &str)]) -> Daemon {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let child = spawn_ready(&home, &env);
        Daemon { home, child, env }
    }

    /// Kills the daemon with SIGKILL, as a crash would, and waits for it to be gone.
    pub fn kill(&mut self) {
        signal(self.child.id(), libc::SIGKILL);
        let _ = self.child.wait();
    }

    /// Starts the daemon again in the same home (after `kill` or `terminate`).
    pub fn restart(&mut self) {
        self.child = spawn_ready(&self.home, &self.env);
    }

    /// The daemon's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The daemon's paths.
    pub fn paths(&self) -> Paths {
        self.home.paths()
    }

    /// A protocol client connected to the daemon.
    pub async fn client(&self) -> Client {
        Client::connect(&self.paths().socket, "test")
            .await
            .expect("client connects")
    }

    /// Sends SIGTERM and waits for the daemon to exit; returns whether it exited cleanly.
    pub fn terminate(&mut self) -> bool {
        signal(self.child.id(), libc::SIGTERM);
        self.child.wait().map(|s| s.success()).unwrap_or(false)
    }

    /// Waits for the daemon to exit by itself (after `Shutdown`).
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        self.child.wait().expect("agentd exits")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            signal(self.child.id(), libc::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// Starts `agentd` in `home` and waits for its ready line.
fn spawn_ready(home: &Home, env: &[(String, String)]) -> Child {
    let mut child = home
        .agentd()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .spawn()
        .expect("agentd starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("agentd writes its ready line");
    if !line.starts_with("agentd ready") {
        let output = child.wait_with_output().expect("agentd exits");
        panic!(
            "agentd did not start: {line}{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    child
}

/// Sends `sig` to process `pid`.
pub fn signal(pid: u32, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// Creates a session in `cwd` (the temp dir by default) and returns its listing.
pub async fn create_session(client: &Client, cwd: &Path) -> SessionInfo {
    let reply = client
        .request(Request::CreateSession(CreateSession {
            cwd: cwd.to_string_lossy().into_owned(),
            model: None,
            provider: None,
            mode: None,
            max_turns: None,
            title: None,
            env: Vec::new(),
        }))
        .await
        .expect("session created");
    match reply {
        Reply::SessionCreated(info) => info,
        other => panic!("unexpected reply {other:?}"),
    }
}

/// Subscribes `client` to `session` from `from_seq`.
pub async fn subscribe(client: &Client, session: &SessionId, from_seq: u64) -> SessionInfo {
    match client
        .request(Request::Subscribe {
            session: session.clone(),
            from_seq,
        })
        .await
        .expect("subscribed")
    {
        Reply::Subscribed(info) => info,
        other => panic!("unexpected reply {other:?}"),
    }
}

/// Receives the next event, failing the test after [`WAIT`].
pub async fn next_event(incoming: &mut UnboundedReceiver<Incoming>) -> SessionEvent {
    match tokio::time::timeout(WAIT, incoming.recv()).await {
        Ok(Some(Incoming::Event(event))) => event,
        Ok(other) => panic!("expected an event, got {other:?}"),
        Err(_) => panic!("no event within {WAIT:?}"),
    }
}

/// Receives events until one matches `done`, returning all of them.
pub async fn events_until(
    incoming: &mut UnboundedReceiver<Incoming>,
    done: impl Fn(&Event) -> bool,
) -> Vec<SessionEvent> {
    let mut events = Vec::new();
    loop {
        let event = next_event(incoming).await;
        let finished = done(&event.event);
        events.push(event);
        if finished {
            return events;
        }
    }
}

/// Run options that point the daemon at `server` and allow writes and commands.
pub fn run_options(server: &model_server::ModelServer) -> protocol::RunOptions {
    protocol::RunOptions {
        max_turns: None,
        grants: vec![
            protocol::PermissionClass::Write,
            protocol::PermissionClass::Command,
        ],
        deny_unanswered: true,
        model: None,
        provider: None,
        env: vec![
            ("ANTHROPIC_BASE_URL".to_string(), server.url().to_string()),
            ("ANTHROPIC_API_KEY".to_string(), "test-key".to_string()),
        ],
    }
}

/// Sends `text` to an idle session and returns the run it started.
pub async fn start_run(
    client: &Client,
    session: &SessionId,
    text: &str,
    options: protocol::RunOptions,
) -> protocol::RunId {
    match client
        .request(Request::Send {
            session: session.clone(),
            text: text.to_string(),
            delivery: protocol::Delivery::FollowUp,
            options,
        })
        .await
        .expect("message sent")
    {
        Reply::Sent { started: Some(run) } => run,
        other => panic!("expected a new run, got {other:?}"),
    }
}

/// Receives events until a run finishes, returning all of them.
pub async fn until_finished(incoming: &mut UnboundedReceiver<Incoming>) -> Vec<SessionEvent> {
    events_until(incoming, |e| matches!(e, Event::RunFinished { .. })).await
}

/// The `RunFinished` event among `events`.
pub fn finished(events: &[SessionEvent]) -> &Event {
    events
        .iter()
        .map(|e| &e.event)
        .find(|e| matches!(e, Event::RunFinished { .. }))
        .expect("the run finished")
}

/// The stop reason and error of the `RunFinished` event among `events`.
pub fn stop_and_error(events: &[SessionEvent]) -> (protocol::StopReason, Option<String>) {
    match finished(events) {
        Event::RunFinished {
            stop_reason, error, ..
        } => (*stop_reason, error.clone()),
        _ => unreachable!("finished returns a RunFinished event"),
    }
}

/// A daemon, a session in `cwd` subscribed by a client, and that client's events.
pub async fn session_in(
    daemon: &Daemon,
    cwd: &Path,
) -> (Client, SessionId, UnboundedReceiver<Incoming>) {
    let mut client = daemon.client().await;
    let session = create_session(&client, cwd).await.id;
    subscribe(&client, &session, 0).await;
    let incoming = client.take_incoming().expect("incoming");
    (client, session, incoming)
}

/// The results of tool calls among `events`, in order: (name, is_error, output).
pub fn tool_results(events: &[SessionEvent]) -> Vec<(String, bool, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolResult {
                name,
                is_error,
                output,
                ..
            } => Some((name.clone(), *is_error, output.clone())),
            _ => None,
        })
        .collect()
}

/// Checks every session log under `home` (SPEC §8): each `seq` up to the highest is a stored
/// event, inside the range an assistant message folds, or inside a recorded gap; and every
/// permission request has its answer. Load the sessions first (a crash's gap is recorded when
/// the session loads again).
pub fn assert_logs_account_for_every_seq(home: &Home) {
    let sessions = home.paths().sessions_dir();
    for entry in std::fs::read_dir(&sessions).into_iter().flatten().flatten() {
        let log = entry.path().join("log.jsonl");
        let Ok(text) = std::fs::read_to_string(&log) else {
            continue;
        };
        let mut stored = std::collections::BTreeSet::new();
        let mut ranges = Vec::new();
        let mut requested = std::collections::BTreeSet::new();
        let mut resolved = std::collections::BTreeSet::new();
        for line in text.lines() {
            let record: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}: unreadable record {line}: {e}", log.display()));
            match record["kind"].as_str() {
                Some("event") => {
                    stored.insert(record["seq"].as_u64().expect("seq"));
                    let event = &record["event"];
                    if let Some(folds) = event["AssistantMessage"]["folds"].as_array() {
                        ranges.push((folds[0].as_u64().unwrap(), folds[1].as_u64().unwrap()));
                    }
                    if let Some(request) = event["PermissionRequested"]["request"].as_u64() {
                        requested.insert(request);
                    }
                    if let Some(request) = event["PermissionResolved"]["request"].as_u64() {
                        resolved.insert(request);
                    }
                }
                Some("gap") => ranges.push((
                    record["from"].as_u64().unwrap(),
                    record["to"].as_u64().unwrap(),
                )),
                _ => {}
            }
        }
        let highest = stored.last().copied().unwrap_or(0);
        for seq in 1..=highest {
            assert!(
                stored.contains(&seq) || ranges.iter().any(|(a, b)| (*a..=*b).contains(&seq)),
                "{}: seq {seq} is neither stored, folded nor in a gap",
                log.display()
            );
        }
        let unanswered: Vec<_> = requested.difference(&resolved).collect();
        assert!(
            unanswered.is_empty(),
            "{}: permission requests without an answer: {unanswered:?}",
            log.display()
        );
    }
}

/// Every tool result in a request follows the call that asked for it (Anthropic format).
pub fn assert_pairs_intact(messages: &[serde_json::Value]) {
    for (i, message) in messages.iter().enumerate() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                let id = &block["tool_use_id"];
                let previous = &messages[i - 1]["content"];
                assert!(
                    previous
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|b| b["type"] == "tool_use" && &b["id"] == id),
                    "tool_result {id} without its tool_use just before"
                );
            }
        }
    }
}

/// Event `i` of a realistic mix as sessions store them: messages, tool calls, results, turns
/// and replies (benchmarks).
pub fn sample_event(i: u64) -> Event {
    match i % 5 {
        0 => Event::UserMessage {
            text: "Please look at the parser and fix the failing test.".into(),
            delivery: protocol::Delivery::FollowUp,
        },
        1 => Event::ToolCall(protocol::ToolCallInfo {
            id: format!("toolu_{i}"),
            name: "read".into(),
            args: r#"{"path":"src/parser.rs"}"#.into(),
        }),
        2 => Event::ToolResult {
            id: format!("toolu_{i}"),
            name: "read".into(),
            is_error: false,
            output: "     1\tfn parse(input: &str) -> Result<Ast, Error> {\n".repeat(6),
            duration_ms: 1,
        },
        3 => Event::TurnStarted { turn: i as u32 },
        _ => Event::AssistantMessage {
            turn: i as u32,
            text: "I read the parser; the test fails because of an off-by-one.".into(),
            thinking: String::new(),
            tool_calls: vec![],
            stop_reason: protocol::ModelStopReason::EndTurn,
            folds: None,
        },
    }
}

/// The tool calls and results among `events`, in order, as "call" and "result".
pub fn call_order(events: &[SessionEvent]) -> Vec<&'static str> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolCall(_) => Some("call"),
            Event::ToolResult { .. } => Some("result"),
            _ => None,
        })
        .collect()
}

/// Creates a named pipe at `path`.
pub fn make_fifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path without NUL");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {}",
        path.display()
    );
}

/// Reads a number written into a FIFO (waiting for its writer, at most [`WAIT`]).
pub async fn read_fifo(path: &Path) -> i32 {
    let fifo = path.to_path_buf();
    let read = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo));
    match tokio::time::timeout(WAIT, read).await {
        Ok(text) => text
            .expect("reader task")
            .expect("FIFO read")
            .trim()
            .parse()
            .expect("a number in the FIFO"),
        Err(_) => {
            // Release the blocked reader so the test ends instead of hanging.
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path);
            panic!("nobody wrote to {}", path.display());
        }
    }
}

/// Whether no live process is left in group `pgid`, allowing the kernel up to a second to
/// finish killing them (a SIGKILL is delivered asynchronously).
pub async fn group_is_gone(pgid: i32) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    loop {
        if !live_members(pgid) {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::task::yield_now().await;
    }
}

/// The process group of process `pid`, while it lives.
pub fn process_group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// Whether any live (not zombie) process is in group `pgid`.
pub fn live_members(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // Fields after the command name: state ppid pgrp ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z"
    })
}

/// The peak resident memory of process `pid` in bytes (`VmHWM`).
pub fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// What an `agentctl` run printed.
pub struct CmdOutput {
    /// The exit code.
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `agentctl` against `server` in `cwd` with `daemon`'s home, to completion.
pub async fn agentctl_output(
    daemon: &Daemon,
    server: &model_server::ModelServer,
    cwd: &Path,
    args: &[&str],
) -> CmdOutput {
    let output = daemon
        .home
        .agentctl_with(server, cwd, args)
        .output()
        .await
        .expect("agentctl runs");
    CmdOutput {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// CPU time (user and system) process `pid` has used, from /proc (benchmarks).
pub fn process_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: u64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(ticks * 1000 / hz.max(1))
}

/// The `p` quantile (0 to 1) of sorted durations (benchmarks).
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Asks the daemon's status until it has read its configuration `generation` times.
pub async fn wait_for_config(client: &Client, generation: u64) -> protocol::DaemonStatus {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let Reply::Status(status) = client.request(Request::Status).await.expect("status") else {
            panic!("Status answered with something else")
        };
        if status.config_generation >= generation {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon did not see the config change"
        );
        // The change arrives through the file watcher; there is no event to wait on.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Writes session `id` under `home` with `events` events of [`sample_event`] (benchmarks).
pub fn write_session(home: &Home, id: &str, events: u64) {
    use agentd::store::{Meta, Record, SessionStore};
    let sessions = home.paths().sessions_dir();
    let mut meta = Meta::new(id, "/");
    meta.title = Some(format!("bench {id}"));
    SessionStore::create(&sessions, &meta, &[], false).expect("session created");
    let mut store = SessionStore::open(&sessions.join(id)).expect("session opened");
    for seq in 1..=events {
        store
            .append(&Record::Event {
                seq,
                time_ms: seq,
                event: sample_event(seq),
            })
            .expect("event appended");
    }
}

/// A session in `cwd` with `mode`, watched by a new client: the client, the session and its
/// events.
pub async fn session_with_mode(
    daemon: &Daemon,
    cwd: &Path,
    mode: protocol::Mode,
) -> (Client, SessionId, UnboundedReceiver<Incoming>) {
    let mut client = daemon.client().await;
    let reply = client
        .request(Request::CreateSession(CreateSession {
            cwd: cwd.to_string_lossy().into_owned(),
            model: None,
            provider: None,
            mode: Some(mode),
            max_turns: None,
            title: None,
            env: Vec::new(),
        }))
        .await
        .expect("session created");
    let Reply::SessionCreated(info) = reply else {
        panic!("unexpected reply {reply:?}")
    };
    subscribe(&client, &info.id, 0).await;
    let incoming = client.take_incoming().expect("incoming");
    (client, info.id, incoming)
}
