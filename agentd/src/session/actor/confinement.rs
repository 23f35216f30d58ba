//! What the session's calls may reach (docs/architecture.md#sandbox): the sandbox of its
//! commands in auto mode, the paths no tool may look at, and the paths no tool may write
//! without asking.

use std::path::{Path, PathBuf};

use protocol::local::paths::Paths;

use super::workspace::Workspace;
use crate::config::Config;
use crate::sandbox::hidden::HiddenPaths;

impl Workspace {
    /// What a sandboxed command of this session may write, see and reach, for the
    /// configuration, command environment and hidden paths its check already has; the
    /// daemon's `paths` and the session's `worktree` are not to be written.
    pub(super) fn sandbox_policy(
        &self,
        config: &Config,
        env: &[(String, String)],
        hidden: &HiddenPaths,
        paths: &Paths,
        worktree: Option<&crate::worktree::Worktree>,
    ) -> crate::sandbox::Sandbox {
        let cwd = self.cwd().to_path_buf();
        // `~/` is the home directory; a relative path is the session directory's.
        let mut search = vec![cwd.clone()];
        search.extend(
            config
                .sandbox
                .writable
                .iter()
                .map(|p| crate::tools::resolve(&cwd, &p.to_string_lossy())),
        );
        let mut writable = search.clone();
        let mut protected = self.protected_paths(config, env, false, paths).daemon_dirs;
        if let Some(worktree) = worktree {
            writable.extend(worktree.sandbox_writable());
            protected.extend(worktree.sandbox_protected());
        }
        crate::sandbox::Sandbox {
            policy: crate::sandbox::Policy {
                writable,
                readable: Vec::new(),
                protected,
                hidden: hidden.daemon.clone(),
                secrets: hidden.secrets.clone(),
                tmp: true,
                network: config.sandbox.network,
                limits: config.sandbox.limits(),
            },
            search,
            session_dir: cwd,
            home: crate::sandbox::protected::home_of(env),
            path_var: env
                .iter()
                .find(|(k, _)| k == "PATH")
                .map(|(_, v)| v.clone()),
            min_free_mb: config.sandbox.min_free_mb,
        }
    }

    /// What no call of this session may look at (the daemon's `paths` among them); nothing in
    /// `bypass` mode.
    pub(super) fn hidden_paths(
        &self,
        config: &Config,
        env: &[(String, String)],
        mode: protocol::Mode,
        paths: &Paths,
    ) -> HiddenPaths {
        if mode == protocol::Mode::Bypass {
            return HiddenPaths::default();
        }
        let mut homes: Vec<PathBuf> = crate::sandbox::protected::home_of(env)
            .into_iter()
            .chain(directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()))
            .collect();
        homes.dedup();
        let daemon = [
            Some(paths.config_dir.clone()),
            Some(paths.data_dir.clone()),
            paths.socket.parent().map(Path::to_path_buf),
        ]
        .into_iter()
        .flatten()
        .collect();
        HiddenPaths::new(
            &homes,
            &config.sandbox,
            daemon,
            vec![self.cwd().to_path_buf(), self.plan_file().to_path_buf()],
            self.cwd(),
        )
    }

    /// Where writes are refused whatever the mode but `bypass` (the daemon's `paths` among
    /// them); the guarded paths (`PATH` directories, tools' configuration) only
    /// `with_guarded`, as finding them takes a look at the file system.
    pub(super) fn protected_paths(
        &self,
        config: &Config,
        env: &[(String, String)],
        with_guarded: bool,
        paths: &Paths,
    ) -> crate::sandbox::protected::ProtectedPaths {
        let mut daemon_dirs = vec![paths.config_dir.clone(), paths.data_dir.clone()];
        daemon_dirs.extend(paths.socket.parent().map(Path::to_path_buf));
        let real = |p: PathBuf| p.canonicalize().unwrap_or(p);
        let home = crate::sandbox::protected::home_of(env);
        let cwd = self.cwd().to_path_buf();
        let writable: Vec<PathBuf> = std::iter::once(cwd.clone())
            .chain(
                config
                    .sandbox
                    .writable
                    .iter()
                    .map(|p| crate::tools::resolve(&cwd, &p.to_string_lossy())),
            )
            .collect();
        let path_var = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str());
        let guarded = match with_guarded {
            true => crate::sandbox::guarded::find(&writable, &cwd, home.as_deref(), path_var),
            false => crate::sandbox::guarded::Guarded::default(),
        };
        crate::sandbox::protected::ProtectedPaths {
            daemon_dirs: daemon_dirs.into_iter().map(real).collect(),
            home: home.map(real),
            session_dir: real(cwd),
            guarded: guarded
                .existing
                .into_iter()
                .chain(guarded.missing)
                .map(real)
                .collect(),
        }
    }
}
