//! Language servers run in the sandbox (docs/architecture.md#sandbox), in every mode: a server
//! that runs the project's code reads the project but writes nothing in it, sees neither the
//! daemon's key file nor the credential stores, and has no network, while its diagnostics still
//! reach the edit's result; and it goes, with everything it started, when the daemon stops. With
//! `[lsp] sandbox = false` it runs with the user's rights. The server here is a probe: a small
//! LSP server in Python that tries all of that when a file is opened or changed and publishes
//! what worked as an error.

use std::path::{Path, PathBuf};

use protocol::{CreateSession, Mode, Reply, Request};
use serde_json::json;
use tests::language_servers::{LSP_STDIO_PY, children_named, exited};
use tests::model_server::{ModelServer, anthropic};
use tests::{
    Daemon, Home, WAIT, descendants, run_options, start_run, tool_results, until_finished,
};

/// The probe (after [`LSP_STDIO_PY`]): `probe.py KEY SECRET PORT`. On `didOpen` and `didChange` it tries to write a file
/// in its working directory (the project), read `KEY` and `SECRET`, and connect to
/// 127.0.0.1:`PORT`, and publishes one error saying what worked, after whether it could see the
/// client process `initialize` named (`client=none` when it named none). At `initialize` it starts a
/// `sleep` in a session of its own, which must go with the server all the same.
const PROBE: &str = r#"
import json, os, socket, subprocess, sys

key, secret, port = sys.argv[1], sys.argv[2], int(sys.argv[3])

def attempt(name, action):
    try:
        action()
        return name + "=ok"
    except Exception as e:
        return name + "=no(" + type(e).__name__ + ")"

def write():
    with open(os.path.join(os.getcwd(), "written-by-server"), "w") as f:
        f.write("x")

def read_file(path):
    def action():
        with open(path) as f:
            if "SECRET" not in f.read():
                raise ValueError("empty")
    return action

def connect():
    socket.create_connection(("127.0.0.1", port), timeout=3).close()

client = "client=none"

def watch_client(pid):
    # What servers built on vscode-languageserver do every 3 s: exit when the client is gone.
    global client
    client = attempt("client", lambda: os.kill(pid, 0))

def probe(document):
    found = " ".join([client,
        attempt("write", write),
        attempt("key", read_file(key)),
        attempt("secret", read_file(secret)),
        attempt("net", connect),
    ])
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
        "uri": document["uri"], "version": document.get("version"),
        "diagnostics": [{"range": {"start": {"line": 0, "character": 0},
                                   "end": {"line": 0, "character": 1}},
                         "severity": 1, "source": "probe", "message": "probe: " + found}]}})

while True:
    message = read()
    method = message.get("method")
    if method == "initialize":
        if message["params"].get("processId"):
            watch_client(message["params"]["processId"])
        subprocess.Popen(["sleep", "120"], start_new_session=True)
        send({"jsonrpc": "2.0", "id": message["id"],
              "result": {"capabilities": {"textDocumentSync": 1}}})
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        probe(message["params"]["textDocument"])
    elif method == "exit":
        sys.exit(0)
    elif "id" in message:
        send({"jsonrpc": "2.0", "id": message["id"], "result": None})
"#;

/// A daemon whose `[lsp.probe]` serves `.probe` files with the probe, the key file and a
/// secret in place, a listener for the probe to reach, and a home directory for the sessions.
struct Setup {
    daemon: Daemon,
    /// The sessions' home directory, with `.ssh/id_ed25519`.
    user: PathBuf,
    /// Where the daemon's home, the sessions' home and the projects are.
    base: tempfile::TempDir,
    /// What the probe connects to.
    _listener: std::net::TcpListener,
}

fn setup(lsp: &str) -> Setup {
    // Outside /tmp, which the sandbox replaces by a private one: what the server does not reach
    // there, it does not reach because of the policy.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let parent = if target.starts_with("/tmp") {
        Path::new("/var/tmp")
    } else {
        target
    };
    let base = tempfile::tempdir_in(parent).expect("a temporary directory");
    let root = base.path().canonicalize().expect("a real path");
    let user = root.join("home");
    std::fs::create_dir_all(user.join(".ssh")).expect("the home directory");
    let secret = user.join(".ssh/id_ed25519");
    std::fs::write(&secret, "SECRET-TWO private key\n").expect("the secret");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
    let port = listener.local_addr().expect("its address").port();
    let home = Home::with_config_in(&root, "");
    let key = home.paths().config_dir.join("env");
    std::fs::write(&key, "ANTHROPIC_API_KEY=sk-SECRET-ONE\n").expect("the key file");
    let config = format!(
        "retry_base_ms = 5\nretry_max_ms = 20\n\n[lsp]\nwait_ms = 15000\n{lsp}\n[lsp.probe]\ncommand = [\"python3\", \"probe.py\", \"{}\", \"{}\", \"{port}\"]\nlanguages = [\"probe\"]\nroot_markers = [\"probe.py\"]\n",
        key.display(),
        secret.display()
    );
    std::fs::write(home.paths().config_file(), config).expect("the configuration");
    Setup {
        daemon: Daemon::start_in(home),
        user,
        base,
        _listener: listener,
    }
}

impl Setup {
    /// A new project directory `name`, with the probe (which runs from the project).
    fn project(&self, name: &str) -> PathBuf {
        let dir = self
            .base
            .path()
            .canonicalize()
            .expect("a real path")
            .join(name);
        std::fs::create_dir_all(&dir).expect("the project");
        std::fs::write(dir.join("probe.py"), format!("{LSP_STDIO_PY}{PROBE}")).expect("the probe");
        dir
    }

    /// Writes `file` in `project` from a session in `mode`; the `write` result.
    async fn write_probe_file(&self, project: &Path, file: &str, mode: Mode) -> String {
        let model = ModelServer::start(vec![
            anthropic::tool("write", json!({"path": file, "content": "hello\n"})),
            anthropic::text("done"),
        ])
        .await;
        let mut client = self.daemon.client().await;
        let session = CreateSession {
            mode: Some(mode),
            env: vec![
                (
                    "PATH".to_string(),
                    std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
                ),
                ("HOME".to_string(), self.user.display().to_string()),
            ],
            ..CreateSession::in_dir(project.to_string_lossy())
        };
        let reply = client
            .request(Request::CreateSession(session))
            .await
            .expect("the session is created");
        let Reply::SessionCreated(info) = reply else {
            panic!("{reply:?}")
        };
        tests::subscribe(&client, &info.id, 0).await;
        let mut incoming = client.take_incoming().expect("incoming");
        start_run(&client, &info.id, "write the file", run_options(&model)).await;
        let results = tool_results(&until_finished(&mut incoming).await);
        assert_eq!(results.len(), 1, "{results:?}");
        assert!(!results[0].1, "the write failed: {}", results[0].2);
        results[0].2.clone()
    }
}

/// The processes (live, not zombies) among `pids`.
fn alive(pids: &[u32]) -> Vec<u32> {
    pids.iter()
        .copied()
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z")
        })
        .collect()
}

/// The daemon's descendants whose command line mentions `text`.
fn descendants_with(daemon: u32, text: &str) -> Vec<u32> {
    descendants(daemon)
        .into_iter()
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(text)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_writes_nothing_reads_no_secret_and_reaches_no_network_in_every_mode() {
    let mut setup = setup("");
    if !setup.daemon.sandbox_or_skip() {
        return;
    }
    for (name, mode) in [
        ("default", Mode::Default),
        ("auto", Mode::Auto),
        ("bypass", Mode::Bypass),
    ] {
        let project = setup.project(name);
        let result = setup.write_probe_file(&project, "x.probe", mode).await;
        // The diagnostics still come, and say that nothing got through.
        assert!(
            result.contains(
                "diagnostics (probe): 1 error (all errors in the file)\n  x.probe:1:1 error: probe: client=none write=no("
            ),
            "{name}: {result}"
        );
        for refused in ["write=no(", "key=no(", "secret=no(", "net=no("] {
            assert!(result.contains(refused), "{name}: {refused} in {result}");
        }
        assert!(!result.contains("SECRET"), "{name}: {result}");
        assert!(
            !project.join("written-by-server").exists(),
            "{name}: the server wrote into the project"
        );
    }
    // The servers, what they started in sessions of their own included, go with the daemon.
    let daemon = setup.daemon.pid();
    let servers = descendants_with(daemon, "probe.py");
    let sleeps = descendants_with(daemon, "sleep");
    assert!(
        servers.len() >= 3 && sleeps.len() == 3,
        "{servers:?} {sleeps:?}"
    );
    assert!(setup.daemon.terminate(), "the daemon stops cleanly");
    let deadline = std::time::Instant::now() + WAIT;
    let all: Vec<u32> = servers.iter().chain(&sleeps).copied().collect();
    while !alive(&all).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(alive(&all).is_empty(), "left running: {:?}", alive(&all));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_sandbox_off_a_server_runs_with_the_users_rights() {
    let setup = setup("sandbox = false\n");
    let project = setup.project("project");
    let result = setup
        .write_probe_file(&project, "x.probe", Mode::Default)
        .await;
    assert!(
        result.contains("x.probe:1:1 error: probe: client=ok write=ok key=ok secret=ok net=ok"),
        "{result}"
    );
    assert!(project.join("written-by-server").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_server_that_dies_inside_the_sandbox_is_started_again() {
    let setup = setup("");
    if !setup.daemon.sandbox_or_skip() {
        return;
    }
    let project = setup.project("project");
    let first = setup
        .write_probe_file(&project, "x.probe", Mode::Default)
        .await;
    assert!(
        first.contains("x.probe:1:1 error: probe: client=none write=no("),
        "{first}"
    );
    // The server itself, not the sandbox helper that leads its group (nor the helper's first
    // process of the PID namespace, which runs the server).
    let daemon = setup.daemon.pid();
    let helpers = children_named(daemon, "__sandbox");
    let sandbox = descendants_with(daemon, "__sandbox");
    let servers: Vec<u32> = descendants_with(daemon, "probe.py")
        .into_iter()
        .filter(|pid| !sandbox.contains(pid))
        .collect();
    assert_eq!(helpers.len(), 1, "{helpers:?}");
    assert!(!servers.is_empty(), "no probe runs");
    for server in &servers {
        tests::signal(*server, libc::SIGKILL);
    }
    // The helper goes with it, and the next change starts a new one.
    assert!(
        exited(helpers[0]).await,
        "the helper {} outlived its server",
        helpers[0]
    );
    let second = setup
        .write_probe_file(&project, "y.probe", Mode::Default)
        .await;
    assert!(
        second.contains("y.probe:1:1 error: probe: client=none write=no("),
        "{second}"
    );
    assert_ne!(children_named(daemon, "__sandbox"), helpers);
}

#[test]
fn a_project_under_tmp_or_a_hidden_directory_comes_back_read_only() {
    // Under /tmp, which the sandbox replaces, and inside a directory it hides.
    let base = tempfile::tempdir().expect("a temporary directory");
    let hidden = base.path().join("data");
    let project = hidden.join("worktrees/project");
    std::fs::create_dir_all(&project).expect("the project");
    std::fs::write(project.join("f"), "seen\n").expect("a file");
    std::fs::write(hidden.join("key"), "SECRET\n").expect("a key");
    let path = |p: &Path| p.display().to_string();
    let plain = std::process::Command::new(tests::binary("agentd"))
        .args(["__sandbox", "--tmp", "--", "true"])
        .output()
        .expect("the helper runs");
    if !plain.status.success() {
        eprintln!(
            "SKIPPED: this machine has no sandbox: {}",
            String::from_utf8_lossy(&plain.stderr)
        );
        return;
    }
    let output = std::process::Command::new(tests::binary("agentd"))
        .args(["__sandbox", "--tmp", "--hide", &path(&hidden), "--read"])
        .args([path(&project), "--".into(), "sh".into(), "-c".into()])
        .arg("cat f; cat ../../key; echo x > g && echo wrote")
        .current_dir(&project)
        .output()
        .expect("the helper runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout,
        "seen\n",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!project.join("g").exists());
}
