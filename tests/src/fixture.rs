//! The real binaries in a private home: `Home` (the directories and `config.toml`), `Daemon`
//! (a running `agentd`, stopped on drop) and `agentctl` runs against them.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use agentctl::client::Client;
use agentctl::client::paths::Paths;
use tempfile::TempDir;

use crate::model_server;

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

/// A copy of one of the workspace's binaries in `dir`, for running inside auto mode's sandbox:
/// the sandbox shows the session directory wherever the build lives (a build under /tmp is
/// hidden by its private /tmp).
pub fn binary_in(dir: &Path, name: &str) -> PathBuf {
    let copy = dir.join(format!(".tool-{name}"));
    std::fs::copy(binary(name), &copy).expect("the binary is copied");
    copy
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
        Home::with_config_in(Path::new("/tmp"), config)
    }

    /// A fresh home inside `parent` with `config` as its `config.toml`.
    pub fn with_config_in(parent: &Path, config: &str) -> Home {
        let dir = tempfile::Builder::new()
            .prefix("ad")
            .tempdir_in(parent)
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

    /// An `agentctl` command against the scripted `server`, to run in `cwd`.
    pub fn agentctl_against(
        &self,
        server: &model_server::ModelServer,
        cwd: &Path,
        args: &[&str],
    ) -> Command {
        let mut command = self.agentctl(args);
        command
            .current_dir(cwd)
            .env("ANTHROPIC_BASE_URL", server.url())
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("NO_PROXY", "127.0.0.1,localhost");
        command
    }

    /// [`Home::agentctl_against`] as a tokio command with no stdin, killed when dropped.
    pub fn agentctl_with(
        &self,
        server: &model_server::ModelServer,
        cwd: &Path,
        args: &[&str],
    ) -> tokio::process::Command {
        let mut command = tokio::process::Command::from(self.agentctl_against(server, cwd, args));
        command.stdin(Stdio::null()).kill_on_drop(true);
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

    /// Starts the daemon again in the same home with these environment variables instead.
    pub fn restart_with(&mut self, env: &[(&str, &str)]) {
        self.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.restart();
    }

    /// Whether the daemon found a sandbox; says why the test skips when not.
    pub fn sandbox_or_skip(&self) -> bool {
        let status = self.home.run_agentctl(&["daemon", "status"]);
        let status = String::from_utf8_lossy(&status.stdout).into_owned();
        let line = status
            .lines()
            .find(|l| l.starts_with("sandbox"))
            .unwrap_or("sandbox   (not shown)")
            .to_string();
        if line.contains("unavailable") {
            eprintln!("SKIPPED: this machine has no sandbox for auto mode: {line}");
            return false;
        }
        assert!(line.contains("Landlock ABI"), "{line}");
        true
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
