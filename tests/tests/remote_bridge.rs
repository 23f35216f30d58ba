//! `--host`: every command reaches the daemon of another machine through `ssh … agentctl
//! bridge`. Here a stand-in ssh (`AGENTCTL_SSH`, a script that ignores the host and runs the
//! bridge on this machine) stands for the network: the client speaks the usual protocol over
//! its pipes, the bridge passes the bytes untouched, and a link that drops mid-run is made
//! again with nothing lost or doubled.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use agentctl::client::frames as frame;
use protocol::{ClientFrame, ErrorCode, ErrorInfo, PROTOCOL_VERSION, ServerFrame};
use serde_json::{Value, json};
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::shown::{read_into, wait_shown};
use tests::{Daemon, Home, WAIT, binary, signal};
use tokio::sync::watch;

/// The keep-alive options agentctl gives every ssh it starts.
const KEEP_ALIVE: [&str; 4] = [
    "-o",
    "ServerAliveInterval=15",
    "-o",
    "ServerAliveCountMax=3",
];

/// A stand-in for ssh in `dir`: writes its arguments, one per line, to `ssh-args` and its pid
/// to `ssh-pids`, then becomes `agentctl bridge` (on this machine, with the caller's
/// environment: the test daemon's home).
struct FakeSsh {
    dir: tempfile::TempDir,
}

impl FakeSsh {
    fn new() -> FakeSsh {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{args}'\necho $$ >> '{pids}'\nexec '{agentctl}' bridge\n",
            args = dir.path().join("ssh-args").display(),
            pids = dir.path().join("ssh-pids").display(),
            agentctl = binary("agentctl").display(),
        );
        let path = dir.path().join("ssh");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeSsh { dir }
    }

    fn program(&self) -> PathBuf {
        self.dir.path().join("ssh")
    }

    /// The arguments of the last ssh started.
    fn args(&self) -> Vec<String> {
        let args = std::fs::read_to_string(self.dir.path().join("ssh-args")).unwrap();
        args.lines().map(str::to_string).collect()
    }

    /// The pids of every ssh started, in order.
    fn pids(&self) -> Vec<u32> {
        std::fs::read_to_string(self.dir.path().join("ssh-pids"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }
}

/// `agentctl --host HOST --forward-keys ARGS…` against `server`, in `cwd`, over `ssh`: the
/// "remote" daemon is this machine's, which has no key of its own, so this shell's go along.
fn remote(
    home: &Home,
    server: &ModelServer,
    cwd: &Path,
    ssh: &FakeSsh,
    host: &str,
    args: &[&str],
) -> tokio::process::Command {
    let mut all = vec!["--forward-keys"];
    all.extend_from_slice(args);
    remote_without_keys(home, server, cwd, ssh, host, &all)
}

/// `agentctl --host HOST ARGS…` against `server`, in `cwd`, over `ssh`.
fn remote_without_keys(
    home: &Home,
    server: &ModelServer,
    cwd: &Path,
    ssh: &FakeSsh,
    host: &str,
    args: &[&str],
) -> tokio::process::Command {
    let mut all = vec!["--host", host];
    all.extend_from_slice(args);
    let mut command = home.agentctl_with(server, cwd, &all);
    command.env("AGENTCTL_SSH", ssh.program());
    command
}

/// One test's laptop: its daemon's home, the scripted model, the directory `agentctl` runs in
/// and the stand-in ssh.
struct Laptop<'a> {
    /// The home whose daemon the stand-in reaches.
    home: &'a Home,
    /// The model server.
    server: &'a ModelServer,
    /// Where `agentctl` runs.
    cwd: &'a Path,
    /// The stand-in ssh.
    ssh: &'a FakeSsh,
}

impl<'a> Laptop<'a> {
    /// The laptop of `home`, `server`, `cwd` and `ssh`.
    fn new(home: &'a Home, server: &'a ModelServer, cwd: &'a Path, ssh: &'a FakeSsh) -> Self {
        Laptop {
            home,
            server,
            cwd,
            ssh,
        }
    }

    /// `agentctl --host HOST --forward-keys ARGS…` run to its end.
    async fn run(&self, host: &str, args: &[&str]) -> (Option<i32>, String, String) {
        output(remote(
            self.home,
            self.server,
            self.cwd,
            self.ssh,
            host,
            args,
        ))
        .await
    }

    /// `agentctl --host HOST ARGS…` run to its end.
    async fn run_without_keys(&self, host: &str, args: &[&str]) -> (Option<i32>, String, String) {
        output(remote_without_keys(
            self.home,
            self.server,
            self.cwd,
            self.ssh,
            host,
            args,
        ))
        .await
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
async fn a_remote_run_completes_and_its_session_is_listed() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text("Hello from the build box.")]).await;
    let daemon = Daemon::start();
    let ssh = FakeSsh::new();
    let laptop = Laptop::new(&daemon.home, &server, project.path(), &ssh);

    let (code, stdout, stderr) = laptop.run("fake", &["run", "say hi"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout.matches("Hello from the build box.").count(),
        1,
        "{stdout}"
    );
    assert_eq!(
        ssh.args(),
        [
            KEEP_ALIVE.as_slice(),
            &["-T", "--", "fake", "agentctl", "bridge"]
        ]
        .concat()
    );

    let (code, stdout, stderr) = laptop.run("fake", &["sessions", "--json"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let sessions: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(sessions.len(), 1, "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_forward_keys_a_remote_run_uses_the_remote_keys_and_says_which_is_missing() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text("never")]).await;
    let daemon = Daemon::start();
    let ssh = FakeSsh::new();
    let laptop = Laptop::new(&daemon.home, &server, project.path(), &ssh);
    let (code, _, stderr) = laptop.run_without_keys("fake", &["run", "say hi"]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("ANTHROPIC_API_KEY is not set"), "{stderr}");
    assert!(server.received().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agentctl_host_names_the_host_and_its_user_and_port_reach_ssh() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let ssh = FakeSsh::new();
    let mut by_env = daemon
        .home
        .agentctl_with(&server, project.path(), &["sessions"]);
    by_env
        .env("AGENTCTL_SSH", ssh.program())
        .env("AGENTCTL_HOST", "me@build.internal:2222");
    let (code, _, stderr) = output(by_env).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        ssh.args(),
        [
            KEEP_ALIVE.as_slice(),
            &[
                "-T",
                "-p",
                "2222",
                "--",
                "me@build.internal",
                "agentctl",
                "bridge",
            ]
        ]
        .concat()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_ssh_would_read_as_an_option_is_refused_before_ssh_runs() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let ssh = FakeSsh::new();
    let mut list = daemon.home.agentctl_with(
        &server,
        project.path(),
        &["--host=-oProxyCommand=touch /tmp/owned", "sessions"],
    );
    list.env("AGENTCTL_SSH", ssh.program());
    let (code, _, stderr) = output(list).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("[user@]HOST[:PORT]"), "{stderr}");
    assert!(ssh.pids().is_empty(), "ssh ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_on_this_machines_files_refuse_a_host() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let ssh = FakeSsh::new();
    let laptop = Laptop::new(&daemon.home, &server, project.path(), &ssh);
    for args in [&["daemon", "install"][..], &["config", "check"]] {
        let refused = remote(&daemon.home, &server, project.path(), &ssh, "fake", args);
        let (code, _, stderr) = output(refused).await;
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains("run it there: `ssh fake agentctl"),
            "{stderr}"
        );
    }
    assert!(ssh.pids().is_empty(), "ssh ran");
    let (code, stdout, stderr) = laptop.run("fake", &["daemon", "status"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!("pid       {}", daemon.pid())),
        "{stdout}"
    );
    assert!(stdout.contains("host      fake"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_restart_over_the_link_starts_a_new_daemon_there() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let mut daemon = Daemon::start();
    let old = daemon.pid();
    let ssh = FakeSsh::new();
    let laptop = Laptop::new(&daemon.home, &server, project.path(), &ssh);
    let (code, stdout, stderr) = laptop.run("fake", &["daemon", "restart"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!("agentd on fake restarted (pid {old} → ")),
        "{stdout}"
    );
    let new: u32 = stdout
        .split(" → ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("a new pid in {stdout}"));
    assert_ne!(new, old);
    let (code, stdout, stderr) = laptop.run("fake", &["daemon", "stop"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!("agentd on fake stopped (pid {new})")),
        "{stdout}"
    );
    assert_eq!(daemon.wait_exit().code(), Some(0), "the old daemon stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_host_of_client_toml_gives_ssh_its_options_and_the_remote_agentctl() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let ssh = FakeSsh::new();
    let laptop = Laptop::new(&daemon.home, &server, project.path(), &ssh);
    write_client_toml(
        &daemon.home,
        "[hosts.box]\nssh = \"me@box.internal:2200\"\nagentctl = \"~/bin/agentctl\"\nssh_options = [\"-o\", \"BatchMode=yes\"]\n",
        0o600,
    );
    let (code, _, stderr) = laptop.run_without_keys("box", &["sessions"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let expected: Vec<&str> = [
        &["-o", "BatchMode=yes"][..],
        &KEEP_ALIVE,
        &[
            "-T",
            "-p",
            "2200",
            "--",
            "me@box.internal",
            "~/bin/agentctl",
            "bridge",
        ],
    ]
    .concat();
    assert_eq!(ssh.args(), expected);
    // A name a letter from a named host is taken as an address, and said to be one.
    let (code, _, stderr) = laptop.run_without_keys("bxo", &["sessions"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("`bxo` is not a host of client.toml (did you mean `box`?)"),
        "{stderr}"
    );
    assert!(ssh.args().contains(&"bxo".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_toml_with_a_typo_or_writable_by_others_is_refused() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let ssh = FakeSsh::new();
    let laptop = Laptop::new(&daemon.home, &server, project.path(), &ssh);
    write_client_toml(
        &daemon.home,
        "[hosts.box]\nssh = \"box\"\nforward_key = true\n",
        0o600,
    );
    let (code, _, stderr) = laptop.run_without_keys("box", &["sessions"]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("client.toml"), "{stderr}");
    assert!(stderr.contains("forward_key"), "{stderr}");
    write_client_toml(
        &daemon.home,
        "[hosts.box]\nssh = \"box\"\nssh_options = [\"-oProxyCommand=touch /tmp/x\"]\n",
        0o666,
    );
    let (code, _, stderr) = laptop.run_without_keys("box", &["sessions"]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("chmod go-w"), "{stderr}");
    assert!(ssh.pids().is_empty(), "ssh ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_missing_on_the_remote_says_to_give_cwd() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let ssh = FakeSsh::new();
    let laptop = Laptop::new(&daemon.home, &server, project.path(), &ssh);
    let missing = project.path().join("only-here");
    let (code, _, stderr) = laptop
        .run("fake", &["--cwd", missing.to_str().unwrap(), "run", "hi"])
        .await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("is not a directory on fake; give --cwd DIR"),
        "{stderr}"
    );
    assert!(server.received().is_empty());

    let (code, _, stderr) = laptop.run("fake", &["--cwd", "rel", "run", "hi"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("give an absolute path on fake"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cwd_names_the_remote_directory_of_a_run_and_of_its_lookups() {
    let (here, there) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let there_path = there.path().canonicalize().unwrap();
    let server = ModelServer::start(vec![anthropic::text("Working there.")]).await;
    let daemon = Daemon::start();
    let ssh = FakeSsh::new();
    let laptop = Laptop::new(&daemon.home, &server, here.path(), &ssh);
    let dir = there_path.to_str().unwrap();
    let (code, _, stderr) = laptop.run("fake", &["--cwd", dir, "run", "hi"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stdout, stderr) = laptop.run("fake", &["sessions", "--json"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let sessions: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(sessions.len(), 1, "{stdout}");
    assert_eq!(sessions[0]["cwd"], json!(dir), "{stdout}");
    // `-` is the latest session of that directory, not of this one.
    let (code, stdout, stderr) = laptop.run("fake", &["--cwd", dir, "show", "-"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("Working there."), "{stdout}");
    let (code, _, stderr) = laptop.run("fake", &["show", "-"]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("no session in"), "{stderr}");
}

/// Writes the client's config file of `home` with `mode`.
fn write_client_toml(home: &Home, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let dir = home.paths().config_dir;
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("client.toml");
    std::fs::write(&file, text).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A daemon of another protocol version behind `listener`: refuses the first Hello (and
/// returns it, to show it came through the bridge untouched).
async fn daemon_of_another_version(listener: tokio::net::UnixListener) -> ClientFrame {
    let (mut stream, _) = listener.accept().await.unwrap();
    let hello: ClientFrame = frame::read_frame(&mut stream).await.unwrap().unwrap();
    let refusal = ServerFrame::Error(ErrorInfo::new(
        ErrorCode::VersionMismatch,
        format!("this daemon speaks protocol {}", PROTOCOL_VERSION + 1),
    ));
    frame::write_frame(&mut stream, &refusal).await.unwrap();
    hello
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_of_another_version_is_refused_end_to_end() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("agentd.sock");
    let fake = tokio::spawn(daemon_of_another_version(
        tokio::net::UnixListener::bind(&socket).unwrap(),
    ));
    let home = Home::new();
    let ssh = FakeSsh::new();
    let mut list = remote(&home, &server, project.path(), &ssh, "fake", &["sessions"]);
    list.env("AGENTD_SOCKET", &socket);
    let (code, _, stderr) = output(list).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "this daemon speaks protocol {}",
            PROTOCOL_VERSION + 1
        )) && stderr.contains("agentctl daemon restart --force"),
        "{stderr}"
    );
    let ClientFrame::Hello(hello) = fake.await.unwrap() else {
        panic!("the bridge did not pass the client's Hello through");
    };
    assert_eq!(hello.protocol_version, PROTOCOL_VERSION);
    assert!(hello.client.starts_with("agentctl "), "{}", hello.client);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_link_is_made_again_and_the_run_loses_and_doubles_nothing() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("notes.txt"), "notes\n").unwrap();
    let gate = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "notes.txt"})),
        anthropic::text("the whole answer").hold_after(2, &gate),
    ])
    .await;
    let daemon = Daemon::start();
    let ssh = FakeSsh::new();
    let mut run = remote(
        &daemon.home,
        &server,
        project.path(),
        &ssh,
        "fake",
        &["run", "--json", "think hard"],
    );
    let mut child = run
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out_tx, mut out_shown) = watch::channel(String::new());
    let (err_tx, mut err_shown) = watch::channel(String::new());
    let stdout = read_into(child.stdout.take().unwrap(), out_tx);
    let stderr = read_into(child.stderr.take().unwrap(), err_tx);

    // Mid-run, in the held second model call: the link dies.
    wait_shown(&mut out_shown, "notes.txt").await;
    server.wait_for_requests(2).await;
    let first = ssh.pids();
    assert_eq!(first.len(), 1, "{first:?}");
    signal(first[0], libc::SIGKILL);
    wait_shown(&mut err_shown, "the link to fake is down").await;
    wait_shown(&mut err_shown, "the link to fake is back").await;
    assert_eq!(ssh.pids().len(), 2);
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
}
