//! Where a session works: its directory and plan file, the files it read (watched for changes
//! made outside), its checkpoints, the environment its client gave, the skills its system
//! prompt lists, and the notices it said already (each is said once).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::checkpoint::Checkpoints;
use crate::config::Config;
use crate::stale_files::{FileTracker, FileWatcher};

/// The session's directory and what it keeps about it.
pub(super) struct Workspace {
    /// The session directory.
    cwd: PathBuf,
    /// Where plan mode keeps its plan.
    plan_file: PathBuf,
    /// The files the session read, for the stale-file guard.
    files: Arc<FileTracker>,
    /// This session's watches on the daemon's file watcher, dropped when it stops.
    watch_owner: u64,
    /// The checkpoints of the session's runs.
    checkpoints: Arc<Checkpoints>,
    /// The environment of the client that created the session, without secrets.
    client_env: Vec<(String, String)>,
    /// The system prompt's list of skills, read at each run's start.
    skills: Option<String>,
    /// Notices said in this session already.
    noticed: HashSet<String>,
    /// Whether the session was told that auto mode has no sandbox here.
    sandbox_warned: bool,
}

impl Workspace {
    /// The workspace of a session in `cwd`, whose plan is `plan_file`, whose read files
    /// `files` tracks (with watches of `watch_owner`) and whose checkpoints are `checkpoints`.
    pub(super) fn new(
        cwd: PathBuf,
        plan_file: PathBuf,
        files: FileTracker,
        watch_owner: u64,
        checkpoints: Checkpoints,
    ) -> Workspace {
        Workspace {
            cwd,
            plan_file,
            files: Arc::new(files),
            watch_owner,
            checkpoints: Arc::new(checkpoints),
            client_env: Vec::new(),
            skills: None,
            noticed: HashSet::new(),
            sandbox_warned: false,
        }
    }

    /// The session directory.
    pub(super) fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Where plan mode keeps its plan.
    pub(super) fn plan_file(&self) -> &Path {
        &self.plan_file
    }

    /// The files the session read, shared with its runs.
    pub(super) fn files(&self) -> Arc<FileTracker> {
        self.files.clone()
    }

    /// `path`, touched on disk, as the clients are told of it, if the session read it and it
    /// changed since.
    pub(super) fn changed_outside(&self, path: &Path) -> Option<String> {
        self.files
            .changed_outside(path)
            .then(|| crate::tools::display(&self.cwd, path))
    }

    /// Drops the session's watches (it stops).
    pub(super) fn forget_watches(&self, watcher: &FileWatcher) {
        watcher.forget(self.watch_owner);
    }

    /// The checkpoints of the session's runs.
    pub(super) fn checkpoints(&self) -> Arc<Checkpoints> {
        self.checkpoints.clone()
    }

    /// The environment of the client that created the session, without secrets.
    pub(super) fn client_env(&self) -> &[(String, String)] {
        &self.client_env
    }

    /// The client's environment, as stored with the session.
    pub(super) fn restore_client_env(&mut self, env: Vec<(String, String)>) {
        self.client_env = env;
    }

    /// The environment of the session's commands: its client's, or (for a session created
    /// without one) the daemon's, without secrets.
    pub(super) fn command_env(&self, config: &Config) -> Vec<(String, String)> {
        if self.client_env.is_empty() {
            config.shell_env.for_commands(&crate::shell_env::current())
        } else {
            config.shell_env.for_commands(&self.client_env)
        }
    }

    /// Reads the skills anew (at a run's start) from the session directory's and the user's
    /// configuration directory `config_dir`.
    pub(super) fn read_skills(&mut self, config_dir: &Path) {
        let dirs = crate::skills::directories(&self.cwd, config_dir);
        self.skills = crate::skills::prompt(&crate::skills::discover(&dirs));
    }

    /// The system prompt's list of skills, if there are any.
    pub(super) fn skills(&self) -> Option<&str> {
        self.skills.as_deref()
    }

    /// Whether `notice` was not said in this session yet; it counts as said from now on.
    pub(super) fn first_time(&mut self, notice: &str) -> bool {
        self.noticed.insert(notice.to_string())
    }

    /// The warning that auto mode (`mode`) has no sandbox on this machine, the first time it
    /// applies.
    pub(super) fn sandbox_warning(&mut self, mode: protocol::Mode) -> Option<String> {
        if mode == protocol::Mode::Auto
            && !self.sandbox_warned
            && let crate::sandbox::Support::Unavailable(why) = crate::sandbox::support()
        {
            self.sandbox_warned = true;
            return Some(format!(
                "auto mode has no sandbox on this machine ({why}): commands ask, as in default mode"
            ));
        }
        None
    }
}
