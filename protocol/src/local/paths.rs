//! Where the daemon keeps its socket, configuration and data (docs/architecture.md#protocol,
//! docs/architecture.md#state-on-disk). The daemon and its clients compute the same paths from
//! the same environment.

use std::io;
use std::path::{Path, PathBuf};

use interprocess::local_socket::Name;

/// Moves all state (config, data, socket) under one directory.
pub const HOME_ENV: &str = "AGENTD_HOME";
/// Overrides the socket path alone.
pub const SOCKET_ENV: &str = "AGENTD_SOCKET";

/// The daemon's directories and files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// Holds `config.toml`.
    pub config_dir: PathBuf,
    /// Holds sessions, plans and logs.
    pub data_dir: PathBuf,
    /// The local socket the daemon listens on (a pipe name on Windows).
    pub socket: PathBuf,
}

/// The paths could not be worked out.
#[derive(Debug, thiserror::Error)]
#[error("cannot find a home directory for agentd's files; set {HOME_ENV} to a directory")]
pub struct NoHomeError;

impl Paths {
    /// The paths for the current environment: `AGENTD_HOME`, `AGENTD_SOCKET`, `XDG_RUNTIME_DIR`,
    /// then the platform's directories, with `$TMPDIR/agentd-$UID` for the socket as last resort.
    pub fn from_env() -> Result<Paths, NoHomeError> {
        let env = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let mut paths = match env(HOME_ENV) {
            Some(home) => Paths::under(&home),
            None => {
                let dirs = directories::ProjectDirs::from("", "", "agentd").ok_or(NoHomeError)?;
                Paths {
                    config_dir: dirs.config_dir().to_path_buf(),
                    data_dir: dirs.data_dir().to_path_buf(),
                    socket: default_socket(env("XDG_RUNTIME_DIR")),
                }
            }
        };
        if let Some(socket) = env(SOCKET_ENV) {
            paths.socket = socket;
        }
        Ok(paths)
    }

    /// All paths under one directory, as `AGENTD_HOME` gives them.
    pub fn under(home: &Path) -> Paths {
        Paths {
            config_dir: home.join("config"),
            data_dir: home.join("data"),
            socket: home.join("agentd.sock"),
        }
    }

    /// The configuration file.
    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("config.toml")
    }

    /// Where each session has its directory.
    pub fn sessions_dir(&self) -> PathBuf {
        self.data_dir.join("sessions")
    }

    /// Where plan-mode plans are written.
    pub fn plans_dir(&self) -> PathBuf {
        self.data_dir.join("plans")
    }

    /// Where the checkpoint stores are, one per work tree.
    pub fn checkpoints_dir(&self) -> PathBuf {
        self.data_dir.join("checkpoints")
    }

    /// Where sessions started with `--worktree` have their git worktree.
    pub fn worktrees_dir(&self) -> PathBuf {
        self.data_dir.join("worktrees")
    }

    /// Where the daemon records the process groups of running commands.
    pub fn commands_dir(&self) -> PathBuf {
        self.data_dir.join("commands")
    }

    /// The log directory.
    pub fn logs_dir(&self) -> PathBuf {
        self.data_dir.join("logs")
    }

    /// The daemon's log file.
    pub fn log_file(&self) -> PathBuf {
        self.logs_dir().join("agentd.log")
    }

    /// The pid file beside the socket; the running daemon holds a lock on it.
    pub fn pid_file(&self) -> PathBuf {
        self.socket.with_extension("pid")
    }
}

#[cfg(unix)]
fn default_socket(runtime_dir: Option<PathBuf>) -> PathBuf {
    match runtime_dir {
        Some(dir) => dir.join("agentd").join("agentd.sock"),
        None => {
            // SAFETY: getuid has no preconditions and cannot fail.
            let uid = unsafe { libc::getuid() };
            std::env::temp_dir()
                .join(format!("agentd-{uid}"))
                .join("agentd.sock")
        }
    }
}

#[cfg(windows)]
fn default_socket(_runtime_dir: Option<PathBuf>) -> PathBuf {
    let user = std::env::var("USERNAME").unwrap_or_else(|_| "user".to_string());
    PathBuf::from(format!("agentd-{user}.sock"))
}

/// The local-socket name for `socket`: a file path on Unix, a pipe name on Windows.
pub fn socket_name(socket: &Path) -> io::Result<Name<'static>> {
    #[cfg(unix)]
    {
        use interprocess::local_socket::{GenericFilePath, ToFsName};
        socket.to_path_buf().to_fs_name::<GenericFilePath>()
    }
    #[cfg(windows)]
    {
        use interprocess::local_socket::{GenericNamespaced, ToNsName};
        let pipe = socket
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "agentd".to_string());
        pipe.to_ns_name::<GenericNamespaced>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_puts_everything_under_one_directory() {
        let paths = Paths::under(Path::new("/h"));
        assert_eq!(paths.socket, Path::new("/h/agentd.sock"));
        assert_eq!(paths.pid_file(), Path::new("/h/agentd.pid"));
        assert_eq!(paths.log_file(), Path::new("/h/data/logs/agentd.log"));
        assert_eq!(paths.config_file(), Path::new("/h/config/config.toml"));
    }

    #[cfg(unix)]
    #[test]
    fn socket_falls_back_to_a_private_temp_directory() {
        let socket = default_socket(None);
        let dir = socket
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(dir.starts_with("agentd-"), "{dir}");
        assert_eq!(
            default_socket(Some(PathBuf::from("/run/user/5"))),
            Path::new("/run/user/5/agentd/agentd.sock")
        );
    }
}
