//! `--host` over the real thing (docs/architecture.md#another-machine-over-ssh): OpenSSH's
//! sshd on a loopback port stands for the other machine, with a throwaway host key, a test
//! user key and a daemon home of its own; the "laptop" is a home with no daemon whose
//! `client.toml` names the host, and its `agentctl` reaches the remote daemon through the real
//! `ssh` and `agentctl bridge`. Each test skips, saying what to install, without sshd.

use std::path::Path;
use std::process::Stdio;

use agent_client_protocol::v1::schema::LoadSessionRequest;
use protocol::Event;
use serde_json::{Value, json};
use tempfile::TempDir;
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::pty::Pty;
use tests::restart::provider_env;
use tests::shown::{read_into, wait_shown};
use tests::sshd::{Sshd, ssh_children};
use tests::{Daemon, Home, WAIT, next_event, session_mid_reply, signal, subscribe, until_finished};
use tokio::sync::watch;

/// The name the laptop's `client.toml` gives the sshd.
const HOST: &str = "box";

/// The laptop and the other machine: a home with no daemon that names the sshd as [`HOST`],
/// the sshd, a directory only the remote side's runs use and the laptop's working directory.
/// The sshd drops first, taking its connections' processes with it.
struct Machines {
    /// The other machine's sshd, named [`HOST`].
    sshd: Sshd,
    /// The laptop's home: `client.toml` and nothing else.
    local: Home,
    /// A directory of the other machine that no local command uses.
    remote_dir: TempDir,
    /// The laptop's working directory.
    here: TempDir,
}

impl Machines {
    /// An sshd whose sessions use the daemon of `remote` (with `env` in their environment),
    /// named in a fresh laptop home. `None` when this machine has no sshd (the test skips).
    fn new(remote: &Home, env: &[(&str, &str)]) -> Option<Machines> {
        let mut builder = Sshd::builder(HOST, remote.path());
        for (name, value) in env {
            builder = builder.env(name, value);
        }
        let sshd = builder.start()?;
        let local = Home::new();
        sshd.register(&local);
        Some(Machines {
            sshd,
            local,
            remote_dir: tempfile::tempdir().unwrap(),
            here: tempfile::tempdir().unwrap(),
        })
    }

    /// `agentctl --host box ARGS…` on the laptop, in its working directory, with `server`'s
    /// address and a key in its environment (which stay on the laptop without
    /// `--forward-keys`).
    fn agentctl(&self, server: &ModelServer, args: &[&str]) -> tokio::process::Command {
        let mut all = vec!["--host", HOST];
        all.extend_from_slice(args);
        self.local.agentctl_with(server, self.here.path(), &all)
    }

    /// The remote directory's path, as `--cwd` takes it.
    fn remote_dir(&self) -> String {
        self.remote_dir.path().display().to_string()
    }
}

/// Runs `command` to its end: exit code, stdout, stderr.
async fn output(mut command: tokio::process::Command) -> (Option<i32>, String, String) {
    let out = tokio::time::timeout(WAIT, command.output())
        .await
        .expect("agentctl ends within the wait")
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_run_completes_in_the_remote_directory() {
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "only-there.txt"})),
        anthropic::text("It says: remote contents."),
    ])
    .await;
    let remote = Home::new();
    let Some(m) = Machines::new(&remote, &provider_env(&server)) else {
        return;
    };
    std::fs::write(
        m.remote_dir.path().join("only-there.txt"),
        "remote contents\n",
    )
    .unwrap();
    let dir = m.remote_dir();

    let run = m.agentctl(&server, &["--cwd", &dir, "run", "read only-there.txt"]);
    let (code, stdout, stderr) = output(run).await;
    assert_eq!(code, Some(0), "{stderr}\n{}", m.sshd.log());
    assert!(stdout.contains("It says: remote contents."), "{stdout}");
    // The tool ran in the remote directory: the model saw the file's contents.
    let second = &server.received()[1];
    assert!(
        second.body.to_string().contains("remote contents"),
        "{}",
        second.body
    );
    // Over the real sshd, to the remote home's daemon (started by the bridge); the laptop
    // started none.
    assert!(
        m.sshd.log().contains("Accepted publickey"),
        "{}",
        m.sshd.log()
    );
    assert!(remote.paths().pid_file().exists());
    assert!(!m.local.paths().socket.exists());

    let list = m.agentctl(&server, &["sessions", "--json"]);
    let (code, stdout, stderr) = output(list).await;
    assert_eq!(code, Some(0), "{stderr}");
    let sessions: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(sessions.len(), 1, "{stdout}");
    let recorded = Path::new(sessions[0]["cwd"].as_str().unwrap()).to_path_buf();
    assert_eq!(recorded, m.remote_dir.path().canonicalize().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_run_in_a_directory_missing_there_names_cwd() {
    let server = ModelServer::start(vec![anthropic::text("never")]).await;
    let remote = Home::new();
    let Some(m) = Machines::new(&remote, &provider_env(&server)) else {
        return;
    };
    let gone = m.remote_dir.path().join("not-there");
    let gone = gone.display().to_string();
    let run = m.agentctl(&server, &["--cwd", &gone, "run", "say hi"]);
    let (code, _, stderr) = output(run).await;
    assert_ne!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&gone) && stderr.contains("--cwd") && stderr.contains(HOST),
        "{stderr}"
    );
    assert!(server.received().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_over_ssh_shows_the_history_then_the_live_reply() {
    let daemon = Daemon::start();
    let Some(m) = Machines::new(&daemon.home, &[]) else {
        return;
    };
    let (_client, session, mut incoming, server, gate) =
        session_mid_reply(&daemon, m.remote_dir.path()).await;
    let id = session.as_str().to_string();
    let args = ["--host", HOST, "attach", &id];
    let pty = Pty::agentctl(&m.local, &server, m.here.path(), &args, (40, 100));
    // The history: the first run, and the second's reply so far.
    pty.expect("first question");
    pty.expect("first answer");
    pty.expect("second question");
    // Then live: the rest of the held reply.
    gate.release();
    pty.expect("second answer");
    pty.expect("completed");
    until_finished(&mut incoming).await;
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
    assert!(
        m.sshd.log().contains("Accepted publickey"),
        "{}",
        m.sshd.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_over_ssh_answers_a_remote_ask() {
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "echo ok > approved.txt"})),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_with(Home::new(), &provider_env(&server));
    let Some(m) = Machines::new(&daemon.home, &[]) else {
        return;
    };
    let dir = m.remote_dir();
    let started = m.agentctl(&server, &["--cwd", &dir, "run", "--detach", "make a file"]);
    let (code, stdout, stderr) = output(started).await;
    assert_eq!(code, Some(0), "{stderr}");
    let id = stdout.trim().to_string();
    let mut watcher = daemon.client().await;
    subscribe(&watcher, &protocol::SessionId(id.clone()), 0).await;
    let mut events = watcher.take_incoming().unwrap();
    loop {
        if let Event::PermissionRequested { request, .. } = next_event(&mut events).await.event {
            assert_eq!(request.0, 1);
            break;
        }
    }
    assert!(!m.remote_dir.path().join("approved.txt").exists());

    let approve = m.agentctl(&server, &["approve", &id, "1"]);
    let (code, stdout, stderr) = output(approve).await;
    assert_eq!(
        (code, stdout.trim()),
        (Some(0), "request 1 allowed"),
        "{stderr}"
    );
    until_finished(&mut events).await;
    assert!(m.remote_dir.path().join("approved.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_ssh_mid_run_and_reconnecting_loses_and_doubles_nothing() {
    let gate = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "notes.txt"})),
        anthropic::text("the whole answer").hold_after(2, &gate),
    ])
    .await;
    let daemon = Daemon::start_with(Home::new(), &provider_env(&server));
    let Some(m) = Machines::new(&daemon.home, &[]) else {
        return;
    };
    std::fs::write(m.remote_dir.path().join("notes.txt"), "notes\n").unwrap();
    let dir = m.remote_dir();
    let mut child = m
        .agentctl(&server, &["--cwd", &dir, "run", "--json", "think hard"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out_tx, mut out_shown) = watch::channel(String::new());
    let (err_tx, mut err_shown) = watch::channel(String::new());
    let stdout = read_into(child.stdout.take().unwrap(), out_tx);
    let stderr = read_into(child.stderr.take().unwrap(), err_tx);

    // Mid-run, in the held second model call: the real ssh under agentctl dies.
    wait_shown(&mut out_shown, "notes.txt").await;
    server.wait_for_requests(2).await;
    let ssh = ssh_children(child.id().unwrap());
    assert_eq!(ssh.len(), 1, "agentctl's ssh: {ssh:?}");
    signal(ssh[0], libc::SIGKILL);
    wait_shown(&mut err_shown, &format!("the link to {HOST} is down")).await;
    wait_shown(&mut err_shown, &format!("the link to {HOST} is back")).await;
    let again = ssh_children(child.id().unwrap());
    assert!(again.len() == 1 && again != ssh, "{again:?} after {ssh:?}");
    gate.release();

    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("the run ends within the wait")
        .unwrap();
    let (stdout, stderr) = (stdout.await.unwrap(), stderr.await.unwrap());
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches("is down").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("is back").count(), 1, "{stderr}");
    let events = tests::json_run::events_once_in_order(&stdout, &stderr);
    let answers = events
        .iter()
        .filter(|e| e["type"] == "assistant_message")
        .filter(|e| e.to_string().contains("the whole answer"))
        .count();
    assert_eq!(answers, 1, "{stdout}");
    // The model was asked twice: the run itself never noticed the link, made twice through
    // sshd.
    assert_eq!(server.received().len(), 2);
    let log = m.sshd.log();
    assert_eq!(log.matches("Accepted publickey").count(), 2, "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_over_ssh_loads_a_remote_session_in_the_editor() {
    let daemon = Daemon::start();
    let Some(m) = Machines::new(&daemon.home, &[]) else {
        return;
    };
    let (_client, session, mut incoming, server, gate) =
        session_mid_reply(&daemon, m.remote_dir.path()).await;
    let id = session.as_str().to_string();
    let cwd = m.remote_dir.path().to_path_buf();
    let release = gate.clone();
    tests::acp::with_editor_running(
        &m.local,
        &server,
        m.here.path(),
        &["--host", HOST, "acp"],
        async move |cx, mut got, _| {
            cx.send_request(LoadSessionRequest::new(id.clone(), cwd.clone()))
                .block_task()
                .await
                .unwrap();
            let replayed = got.drain();
            assert_eq!(
                tests::acp::user_texts(&replayed),
                ["first question", "second question"]
            );
            let mut text = tests::acp::agent_text(&replayed);
            assert!(text.starts_with("first answer"), "{text}");
            release.release();
            while !text.ends_with("second answer") {
                text.push_str(&tests::acp::agent_text(&[got.update().await]));
            }
            assert_eq!(text, "first answersecond answer");
        },
    )
    .await;
    until_finished(&mut incoming).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_forward_keys_a_keyless_remote_fails_clearly_and_with_them_it_works() {
    let server = ModelServer::start(vec![anthropic::text("Hello with forwarded keys.")]).await;
    // The remote side has no key: its sessions' environment holds none, and the bridge starts
    // its daemon with that environment.
    let remote = Home::new();
    let Some(m) = Machines::new(&remote, &[]) else {
        return;
    };
    let dir = m.remote_dir();
    let run = m.agentctl(&server, &["--cwd", &dir, "run", "say hi"]);
    let (code, _, stderr) = output(run).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("ANTHROPIC_API_KEY is not set"), "{stderr}");
    assert!(server.received().is_empty());

    let run = m.agentctl(&server, &["--forward-keys", "--cwd", &dir, "run", "say hi"]);
    let (code, stdout, stderr) = output(run).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("Hello with forwarded keys."), "{stdout}");
    assert_eq!(
        server.received()[0].header("x-api-key"),
        Some("test-key"),
        "the laptop's key went along"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_status_over_ssh_names_the_remote_daemon() {
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let Some(m) = Machines::new(&daemon.home, &[]) else {
        return;
    };
    let status = m.agentctl(&server, &["daemon", "status"]);
    let (code, stdout, stderr) = output(status).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!("pid       {}", daemon.pid())),
        "{stdout}"
    );
}
