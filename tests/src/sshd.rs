//! A real OpenSSH server on a loopback port standing for another machine
//! (docs/architecture.md#another-machine-over-ssh): `/usr/sbin/sshd` run as the current user
//! with a throwaway host key and a test user key, giving its sessions the environment of a
//! "remote" daemon (its own `AGENTD_HOME`; a `HOME` of its own, so that no rc file of this
//! machine's user runs), and an ssh config that names it.
//!
//! ```no_run
//! use tests::Home;
//! use tests::sshd::Sshd;
//!
//! let remote = Home::new();
//! let Some(sshd) = Sshd::builder("box", remote.path()).start() else {
//!     return; // no sshd here: the message naming what to install is printed
//! };
//! let local = Home::new();
//! sshd.register(&local); // `agentctl --host box …` with `local`'s home reaches `remote`
//! ```
//!
//! Several servers may run at once (one per "host", each with its own remote home); each stops
//! on drop, with every process its connections started.

use std::io::Read;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::model_server::ModelServer;
use crate::{Home, WAIT, bin_dir, binary, children_running, descendants, signal};

/// The OpenSSH server.
pub const SSHD: &str = "/usr/sbin/sshd";
/// The OpenSSH client.
pub const SSH: &str = "/usr/bin/ssh";
/// The key generator.
const SSH_KEYGEN: &str = "/usr/bin/ssh-keygen";
/// How often a port is tried before giving up (another process may take the free port first).
const PORT_ATTEMPTS: usize = 5;

/// What this machine lacks to run a real sshd, as a message naming how to get it; `None` when
/// nothing is missing.
pub fn missing() -> Option<String> {
    for program in [SSHD, SSH, SSH_KEYGEN] {
        if !Path::new(program).is_file() {
            return Some(format!(
                "{program} not found: run tests/scripts/install-sshd.sh (Debian's openssh-server)"
            ));
        }
    }
    if current_user().is_none() {
        return Some(
            "this uid has no user name (`id -un` fails): sshd lets in no such user".into(),
        );
    }
    // As root, sshd refuses to start without its privilege separation directory.
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 && std::fs::create_dir_all("/run/sshd").is_err() {
        return Some(
            "/run/sshd is missing and cannot be made: run tests/scripts/install-sshd.sh".into(),
        );
    }
    None
}

/// How an [`Sshd`] is set up; [`SshdBuilder::start`] starts it.
pub struct SshdBuilder {
    /// The host's name in the ssh config.
    alias: String,
    /// The remote daemon's `AGENTD_HOME`.
    remote_home: PathBuf,
    /// More variables for the sessions' environment.
    env: Vec<(String, String)>,
    /// Whether ssh runs share one connection.
    control_master: bool,
}

impl SshdBuilder {
    /// One more variable in the environment of the server's sessions (so of the remote
    /// `agentctl bridge` and the daemon it starts). Values must not hold `"`, `\` or newlines.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Gives the remote side the scripted model's address and a key, as a remote machine's own
    /// provider configuration would.
    pub fn provider(self, server: &ModelServer) -> Self {
        self.env("ANTHROPIC_BASE_URL", server.url())
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("NO_PROXY", "127.0.0.1,localhost")
    }

    /// Shares one ssh connection between the client's ssh runs (`ControlMaster auto`,
    /// `ControlPersist 60`), as users set up for speed: for benchmarks.
    pub fn control_master(mut self) -> Self {
        self.control_master = true;
        self
    }

    /// Starts sshd on a free loopback port and waits until it answers. `None`, with a message
    /// on stderr naming what is missing, when this machine cannot run sshd: the test skips.
    pub fn start(self) -> Option<Sshd> {
        if let Some(what) = missing() {
            eprintln!("SKIPPED: {what}");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("ssh")
            .tempdir_in("/tmp")
            .expect("the sshd's directory is made");
        keygen(&dir.path().join("host_key"), "agentd-test-host");
        keygen(&dir.path().join("user_key"), "agentd-test-user");
        std::fs::copy(
            dir.path().join("user_key.pub"),
            dir.path().join("authorized_keys"),
        )
        .expect("authorized_keys is written");
        let user = current_user().expect("a user name, checked by `missing`");
        let config = dir.path().join("sshd_config");
        let log = dir.path().join("sshd.log");
        let mut tried = Vec::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port();
            std::fs::write(&config, self.sshd_config(dir.path(), port, &user))
                .expect("sshd_config is written");
            let mut child = Command::new(SSHD)
                .args(["-D", "-e", "-f"])
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).expect("sshd.log is made"))
                .spawn()
                .expect("sshd starts");
            if wait_ready(&mut child, port, &log) {
                let sshd = Sshd {
                    dir,
                    child,
                    port,
                    alias: self.alias,
                    control_master: self.control_master,
                };
                sshd.write_client_files(&user);
                return Some(sshd);
            }
            // The port was taken after all: try another.
            let _ = child.wait();
            tried.push(std::fs::read_to_string(&log).unwrap_or_default());
        }
        panic!(
            "sshd did not start on {PORT_ATTEMPTS} ports:\n{}",
            tried.join("\n")
        );
    }

    /// The server's configuration: loopback only, public keys only, this user only, and the
    /// remote daemon's environment for every session.
    fn sshd_config(&self, dir: &Path, port: u16, user: &str) -> String {
        let path = format!(
            "{}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            bin_dir().display()
        );
        // A home of its own: the remote shell reads none of this user's rc files (which may
        // print, or take a tenth of a second each time, and are not what is tested).
        let home = dir.join("home");
        std::fs::create_dir_all(&home).expect("the remote shell's home is made");
        let mut env = vec![
            ("HOME".to_string(), home.display().to_string()),
            (
                "AGENTD_HOME".to_string(),
                self.remote_home.display().to_string(),
            ),
            (
                "AGENTD_BIN".to_string(),
                binary("agentd").display().to_string(),
            ),
            ("PATH".to_string(), path),
            ("NO_COLOR".to_string(), "1".to_string()),
        ];
        env.extend(self.env.iter().cloned());
        // sshd takes only the first SetEnv line: every variable goes on one.
        let set_env: Vec<String> = env
            .iter()
            .map(|(name, value)| {
                assert!(
                    !value.contains(['"', '\\', '\n']),
                    "SetEnv cannot carry {name}={value}"
                );
                format!("{name}=\"{value}\"")
            })
            .collect();
        let dir = dir.display();
        format!(
            "ListenAddress 127.0.0.1\n\
             Port {port}\n\
             HostKey {dir}/host_key\n\
             PidFile none\n\
             AuthorizedKeysFile {dir}/authorized_keys\n\
             AuthenticationMethods publickey\n\
             PubkeyAuthentication yes\n\
             PasswordAuthentication no\n\
             KbdInteractiveAuthentication no\n\
             UsePAM no\n\
             StrictModes no\n\
             PermitRootLogin prohibit-password\n\
             AllowUsers {user}\n\
             PermitUserEnvironment no\n\
             PrintMotd no\n\
             PrintLastLog no\n\
             UseDNS no\n\
             X11Forwarding no\n\
             AllowTcpForwarding no\n\
             SetEnv {}\n",
            set_env.join(" ")
        )
    }
}

/// A running sshd standing for a remote machine; killed on drop, with what its connections
/// started (a shared ControlMaster connection is closed first).
pub struct Sshd {
    /// Keys, configs, the log and the ssh wrapper.
    dir: TempDir,
    /// The sshd.
    child: Child,
    /// Its loopback port.
    port: u16,
    /// The host's name in the ssh config.
    alias: String,
    /// Whether ssh runs share one connection (closed on drop).
    control_master: bool,
}

impl Sshd {
    /// A server named `alias` in its ssh config whose sessions use the daemon of
    /// `remote_home` (its `AGENTD_HOME`), with this workspace's binaries on their `PATH`.
    pub fn builder(alias: &str, remote_home: &Path) -> SshdBuilder {
        SshdBuilder {
            alias: alias.to_string(),
            remote_home: remote_home.to_path_buf(),
            env: Vec::new(),
            control_master: false,
        }
    }

    /// The host name its ssh config gives it (what `--host` names).
    pub fn alias(&self) -> &str {
        &self.alias
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The sshd's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The ssh client config naming the server (`ssh -F CONFIG ALIAS`).
    pub fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// A program taking ssh's arguments that runs the real ssh with this server's config: for
    /// `AGENTCTL_SSH`.
    pub fn ssh_program(&self) -> PathBuf {
        self.dir.path().join("ssh")
    }

    /// `ssh -F CONFIG ALIAS ARGS…`.
    pub fn ssh(&self, args: &[&str]) -> Command {
        let mut command = Command::new(SSH);
        command
            .arg("-F")
            .arg(self.ssh_config())
            .arg(&self.alias)
            .args(args);
        command
    }

    /// Names the server in `local`'s client config (`<config>/client.toml`, added to what is
    /// there): `agentctl --host ALIAS` with `local`'s home then reaches it with the real ssh,
    /// this server's ssh config and this workspace's `agentctl` on the remote side.
    pub fn register(&self, local: &Home) {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let file = local.paths().config_dir.join("client.toml");
        std::fs::create_dir_all(local.paths().config_dir).expect("the config dir is made");
        let string = |s: &str| serde_json::to_string(s).expect("a string");
        let entry = format!(
            "\n[hosts.{alias}]\nssh = {ssh}\nagentctl = {agentctl}\nssh_options = [\"-F\", {config}]\n",
            alias = self.alias,
            ssh = string(&self.alias),
            agentctl = string(&binary("agentctl").display().to_string()),
            config = string(&self.ssh_config().display().to_string()),
        );
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(file)
            .and_then(|mut f| f.write_all(entry.as_bytes()))
            .expect("client.toml is written");
    }

    /// The pid of the ssh holding the shared connection (`ssh -O check`), while one runs
    /// ([`SshdBuilder::control_master`]).
    pub fn master_pid(&self) -> Option<u32> {
        let out = self
            .ssh(&["-O", "check"])
            .stdin(Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stderr);
        let pid = text.split_once("(pid=")?.1.split_once(')')?.0;
        pid.parse().ok()
    }

    /// What sshd logged so far (`-e`: connections, authentication, errors).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// Writes the client's side: the known host key, the ssh config and the ssh wrapper.
    fn write_client_files(&self, user: &str) {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.dir.path();
        let host_key = std::fs::read_to_string(dir.join("host_key.pub")).expect("the host key");
        std::fs::write(
            dir.join("known_hosts"),
            format!("[127.0.0.1]:{} {host_key}", self.port),
        )
        .expect("known_hosts is written");
        let sharing = if self.control_master {
            format!(
                "  ControlMaster auto\n  ControlPath {}/cm-%C\n  ControlPersist 60\n",
                dir.display()
            )
        } else {
            "  ControlMaster no\n  ControlPath none\n".to_string()
        };
        let config = format!(
            "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {dir}/user_key\n  IdentitiesOnly yes\n  UserKnownHostsFile {dir}/known_hosts\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  UpdateHostKeys no\n  CheckHostIP no\n  BatchMode yes\n  LogLevel ERROR\n{sharing}",
            alias = self.alias,
            port = self.port,
            dir = dir.display(),
        );
        std::fs::write(self.ssh_config(), config).expect("ssh_config is written");
        let wrapper = format!(
            "#!/bin/sh\nexec {SSH} -F '{}' \"$@\"\n",
            self.ssh_config().display()
        );
        std::fs::write(self.ssh_program(), wrapper).expect("the ssh wrapper is written");
        std::fs::set_permissions(self.ssh_program(), std::fs::Permissions::from_mode(0o755))
            .expect("the ssh wrapper is executable");
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        if self.control_master {
            let _ = self
                .ssh(&["-O", "exit"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        // Each connection's sshd has a session of its own, and so has the command it runs:
        // only the process tree leads to them.
        let mut doomed = descendants(self.child.id());
        doomed.push(self.child.id());
        for pid in doomed {
            signal(pid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// Makes an ed25519 key pair without a passphrase at `path` (and `path.pub`).
fn keygen(path: &Path, comment: &str) {
    let out = Command::new(SSH_KEYGEN)
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .expect("ssh-keygen runs");
    assert!(
        out.status.success(),
        "ssh-keygen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The login name of the user this process runs as (sshd can let in no other); `None` when
/// the uid has none.
fn current_user() -> Option<String> {
    let out = Command::new("id").arg("-un").output().ok()?;
    let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !name.is_empty()).then_some(name)
}

/// Whether the sshd `child` listens and speaks ssh on `port`, waiting at most [`WAIT`]; false
/// when it ended (its port taken, say).
fn wait_ready(child: &mut Child, port: u16, log: &Path) -> bool {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        let listening =
            std::fs::read_to_string(log).is_ok_and(|l| l.contains("Server listening on"));
        if listening && answers(port) {
            return true;
        }
        // Polling a condition: sshd gives no other sign that it listens.
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    panic!(
        "sshd did not answer within {WAIT:?}:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// Whether `port` answers with an SSH banner.
fn answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let mut banner = [0u8; 8];
    stream.read_exact(&mut banner).is_ok() && &banner == b"SSH-2.0-"
}

/// A loopback port free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// The ssh processes among the children of `pid` (the link of an `agentctl --host` run).
pub fn ssh_children(pid: u32) -> Vec<u32> {
    children_running(pid, Path::new(SSH))
}
