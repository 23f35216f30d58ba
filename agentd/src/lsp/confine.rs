//! Where a language server runs (docs/architecture.md#sandbox). A server runs the project's
//! code (rust-analyzer its build scripts and proc macros, pyright its Python interpreter), so
//! opening a file of an untrusted repository must not run that code with the user's rights. In
//! every mode a server runs under auto mode's sandbox helper, with a tighter policy than a
//! command's: it reads the project (where `/tmp` or a hidden directory would cover it too) but
//! writes nothing besides its private `/tmp`, has no network,
//! sees agentd's directories empty and the credential stores unreadable. Where the machine has no
//! such sandbox, no server starts, unless `[lsp] sandbox = false` says to run them unconfined.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use protocol::local::paths::Paths;

use super::config::LspConfig;
use crate::sandbox::config::SandboxConfig;
use crate::sandbox::hidden::HiddenPaths;
use crate::sandbox::limits::Limits;
use crate::sandbox::{Policy, Support};

/// The least memory a confined server may use, in MiB, whatever `[sandbox] max_memory_mb` says
/// for commands: a language server holds an index of the whole project, more than most commands
/// need.
pub(crate) const MIN_MEMORY_MB: u64 = 2048;

/// Where the `[sandbox]` settings are read as configured now.
pub type SandboxSettings = Arc<dyn Fn() -> SandboxConfig + Send + Sync>;

/// What confines the daemon's language servers: its own directories, which they never see, and
/// the `[sandbox]` settings (credential stores hidden or let through, limits).
#[derive(Clone)]
pub struct ServerSandbox {
    /// agentd's configuration and data directories and the socket's directory.
    daemon_dirs: Vec<PathBuf>,
    /// Where the sessions' worktrees are, in the data directory: the one part of it a server
    /// may read (its project).
    worktrees: PathBuf,
    /// `[sandbox]` as configured now.
    settings: SandboxSettings,
}

impl std::fmt::Debug for ServerSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSandbox")
            .field("daemon_dirs", &self.daemon_dirs)
            .finish()
    }
}

/// How one server is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Launch {
    /// By the sandbox helper (`helper __sandbox OPTIONS -- PROGRAM ARGS`) with this policy.
    Confined {
        /// The sandbox helper: the daemon's own binary.
        helper: PathBuf,
        /// What the server may do.
        policy: Policy,
    },
    /// As it is, with the user's rights: `[lsp] sandbox = false`.
    Unconfined,
}

impl ServerSandbox {
    /// The sandbox of the servers of a daemon with `paths`, reading `[sandbox]` from `settings`.
    pub fn new(paths: &Paths, settings: SandboxSettings) -> ServerSandbox {
        let mut daemon_dirs = vec![paths.config_dir.clone(), paths.data_dir.clone()];
        daemon_dirs.extend(paths.socket.parent().map(Path::to_path_buf));
        let real = |p: PathBuf| p.canonicalize().unwrap_or(p);
        ServerSandbox {
            daemon_dirs: daemon_dirs.into_iter().map(real).collect(),
            worktrees: paths.worktrees_dir(),
            settings,
        }
    }

    /// What a server for `root`, started with the command environment `env`, may do: read
    /// everything but the hidden paths, write only its private `/tmp`, no network, the limits
    /// of `[sandbox]` with at least [`MIN_MEMORY_MB`] of memory.
    pub(crate) fn policy(&self, root: &Path, env: &[(String, String)]) -> Policy {
        let config = (self.settings)();
        // The credential stores of the environment's home and of the daemon's, as for a
        // session's commands.
        let mut homes: Vec<PathBuf> = crate::sandbox::protected::home_of(env)
            .into_iter()
            .chain(directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()))
            .collect();
        homes.dedup();
        let hidden = HiddenPaths::new(&homes, &config, self.daemon_dirs.clone(), Vec::new(), root);
        let limits = config.limits();
        // Its project stays readable where the private /tmp or the hidden data directory (a
        // worktree) would cover it; never one inside a credential store or the rest of agentd's
        // directories.
        let inside = |dirs: &[PathBuf]| dirs.iter().any(|d| root.starts_with(d));
        // Made when the first worktree is: its real path is known by then.
        let worktrees = self
            .worktrees
            .canonicalize()
            .unwrap_or_else(|_| self.worktrees.clone());
        let readable = (!inside(&hidden.secrets)
            && (!inside(&hidden.daemon) || root.starts_with(&worktrees)))
        .then(|| root.to_path_buf());
        Policy {
            writable: Vec::new(),
            readable: readable.into_iter().collect(),
            protected: Vec::new(),
            hidden: hidden.daemon,
            secrets: hidden.secrets,
            tmp: true,
            network: false,
            limits: Limits {
                max_memory_mb: limits.max_memory_mb.max(MIN_MEMORY_MB),
                ..limits
            },
        }
    }

    /// How a server for `root` with `env` starts: confined unless `sandboxed` is off. `Err`
    /// says why it may not start at all (the machine has no sandbox).
    pub(crate) fn launch(
        &self,
        sandboxed: bool,
        root: &Path,
        env: &[(String, String)],
    ) -> Result<Launch, String> {
        if !sandboxed {
            return Ok(Launch::Unconfined);
        }
        match (crate::sandbox::support(), crate::sandbox::helper()) {
            (Support::Available(_), Some(helper)) => Ok(Launch::Confined {
                helper: helper.to_path_buf(),
                policy: self.policy(root, env),
            }),
            (Support::Unavailable(why), _) => Err(unavailable(&why)),
            (Support::Available(_), None) => Err(unavailable("its helper was not found")),
        }
    }
}

/// Why no server starts on a machine without the sandbox, and what the user can do.
fn unavailable(why: &str) -> String {
    format!(
        "language servers run in the sandbox and this machine has none ({why}), so none is started; to run them unconfined, with your full rights (only for projects you trust: they may run the project's code), set [lsp] sandbox = false in config.toml"
    )
}

/// Whether servers may start under `config` here: yes when they run in the sandbox and the
/// machine has it, or when `[lsp] sandbox = false`. The first time they may not, the daemon
/// log says why.
pub(crate) fn permitted(config: &LspConfig) -> bool {
    /// Whether the log already said that no server starts.
    static TOLD: AtomicBool = AtomicBool::new(false);
    if !config.sandbox || crate::sandbox::available() {
        return true;
    }
    if !TOLD.swap(true, Ordering::Relaxed)
        && let Support::Unavailable(why) = crate::sandbox::support()
    {
        tracing::warn!("{}", unavailable(&why));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_sandbox(max_memory_mb: u64) -> (tempfile::TempDir, ServerSandbox) {
        let home = tempfile::tempdir().unwrap();
        let paths = Paths::under(home.path());
        let config = SandboxConfig {
            max_memory_mb,
            ..SandboxConfig::default()
        };
        (
            home,
            ServerSandbox::new(&paths, Arc::new(move || config.clone())),
        )
    }

    #[test]
    fn a_server_writes_nothing_reaches_no_network_and_sees_no_secret() {
        let (home, sandbox) = server_sandbox(512);
        let user = tempfile::tempdir().unwrap();
        let env = vec![("HOME".to_string(), user.path().display().to_string())];
        let policy = sandbox.policy(Path::new("/project"), &env);
        assert!(policy.writable.is_empty(), "{policy:?}");
        assert_eq!(policy.readable, [PathBuf::from("/project")]);
        assert!(!policy.network);
        assert!(policy.tmp);
        assert_eq!(policy.limits.max_memory_mb, MIN_MEMORY_MB);
        let paths = Paths::under(home.path());
        let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        assert!(
            policy.hidden.contains(&real(&paths.config_dir)),
            "{policy:?}"
        );
        assert!(policy.hidden.contains(&real(&paths.data_dir)), "{policy:?}");
        assert!(
            policy
                .secrets
                .iter()
                .any(|s| s.ends_with(".ssh") && s.starts_with(real(user.path()))),
            "{policy:?}"
        );
        // A project in a credential store or among agentd's files does not come back.
        let ssh = real(user.path()).join(".ssh/keys");
        assert!(sandbox.policy(&ssh, &env).readable.is_empty());
        let config = real(&paths.config_dir).join("x");
        assert!(sandbox.policy(&config, &env).readable.is_empty());
        let worktree = real(&paths.data_dir).join("worktrees/abc/project");
        assert_eq!(sandbox.policy(&worktree, &env).readable, [worktree]);
        // More memory than that stays as configured.
        let (_home, roomy) = server_sandbox(8192);
        assert_eq!(
            roomy.policy(Path::new("/p"), &env).limits.max_memory_mb,
            8192
        );
    }

    #[test]
    fn unconfined_only_when_asked_and_never_without_the_sandbox() {
        let (_home, sandbox) = server_sandbox(512);
        assert_eq!(
            sandbox.launch(false, Path::new("/p"), &[]),
            Ok(Launch::Unconfined)
        );
        // The unit tests never looked for the sandbox: it counts as missing.
        if !crate::sandbox::available() {
            let error = sandbox.launch(true, Path::new("/p"), &[]).unwrap_err();
            assert!(error.contains("[lsp] sandbox = false"), "{error}");
            assert!(!permitted(&LspConfig::default()));
        }
        let off = LspConfig {
            sandbox: false,
            ..LspConfig::default()
        };
        assert!(permitted(&off));
    }
}
