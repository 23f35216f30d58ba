//! The real language server the tests use (pyright, installed by
//! `tests/scripts/install-lsp.sh`), and finding the daemon's server processes.

use std::path::PathBuf;
use std::time::Duration;

use crate::WAIT;

/// Where `tests/scripts/install-lsp.sh` puts pyright: `AGENTD_TESTS_LSP_DIR`, or the user's cache.
fn install_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENTD_TESTS_LSP_DIR") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/nonexistent"));
    cache.join("agentd-tests/pyright")
}

/// The installed `pyright-langserver`, for one test at a time: a cold pyright costs about a
/// second and a half of CPU, and several starting at once on a small machine would each take
/// longer than the waits under test. Held until the test ends.
pub struct Pyright {
    /// The program.
    path: PathBuf,
    /// This test's turn.
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl std::ops::Deref for Pyright {
    type Target = std::path::Path;

    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

/// The installed `pyright-langserver` (see [`Pyright`]); `None`, with a message on stderr naming
/// the script that installs it, when it is missing (the test skips).
pub fn pyright_or_skip() -> Option<Pyright> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let bin = install_dir().join("node_modules/.bin/pyright-langserver");
    let node = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|dir| dir.join("node").is_file());
    if bin.is_file() && node {
        let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        return Some(Pyright {
            path: bin,
            _turn: turn,
        });
    }
    eprintln!(
        "SKIPPED: pyright is not installed at {} (or node is not on PATH); run tests/scripts/install-lsp.sh",
        bin.display()
    );
    None
}

/// A daemon configuration that runs `pyright` from where it was installed, waits up to
/// `wait_ms` for diagnostics and stops servers idle for `idle_stop_secs`.
pub fn pyright_config(pyright: &std::path::Path, wait_ms: u64, idle_stop_secs: u64) -> String {
    format!(
        "retry_base_ms = 5\nretry_max_ms = 20\n\n[lsp]\nwait_ms = {wait_ms}\nidle_stop_secs = {idle_stop_secs}\n\n[lsp.pyright]\ncommand = [\"{}\", \"--stdio\"]\n",
        pyright.display()
    )
}

/// The processes whose parent is `parent` and whose command line mentions `name`.
pub fn children_named(parent: u32, name: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().collect())
                .unwrap_or_default();
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            fields.len() > 1
                && fields[0] != "Z"
                && fields[1] == parent.to_string()
                && String::from_utf8_lossy(&cmdline).contains(name)
        })
        .collect()
}

/// Waits (at most [`WAIT`]) until `pid` has exited and been reaped, or is a zombie no more
/// running; whether it did.
pub async fn exited(pid: u32) -> bool {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_string));
        if state.is_none() || state.as_deref() == Some("Z") {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The daemon log's language-server lines in `home` (the last 40), for a failing test's message:
/// why a server did not start or answer is written there, not to the model.
pub fn server_log(home: &crate::Home) -> String {
    let text = std::fs::read_to_string(home.paths().log_file()).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("language server") || l.contains("lsp"))
        .collect();
    let tail = &lines[lines.len().saturating_sub(40)..];
    format!(
        "\n--- daemon log (language servers) ---\n{}",
        tail.join("\n")
    )
}

/// The start of a small LSP server in Python for the tests: `import json, sys`, `read()` (the
/// next message from stdin; exits at its end) and `send(message)` (to stdout).
pub const LSP_STDIO_PY: &str = r#"import json, sys

def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))

def send(message):
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()

"#;
