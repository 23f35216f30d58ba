//! The configuration in force and how the file on disk stands with it, kept current by a
//! watcher on the file.
//!
//! A broken file fails closed: a daemon that has never read a good file does not know the
//! user's rules (`[permissions] deny`, hooks, limits), so it refuses runs rather than run them
//! on the defaults; a run may still ask to ignore the file. A file that breaks after a good
//! reading leaves that last good configuration in force, and every run is told so.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use protocol::{ErrorCode, ErrorInfo};
use tokio::sync::watch;

use super::{Config, ConfigError};

/// The configuration in force, and the error of a newer file that could not be used.
#[derive(Debug, Clone, Default)]
pub struct ConfigState {
    /// The configuration in force: the file's, the last good one, or the defaults standing in
    /// for a file that was never good (see [`ConfigState::standing`]).
    pub(crate) config: Arc<Config>,
    /// Why the file on disk is not the one in force, if it is not.
    pub(crate) error: Option<ConfigError>,
    /// How many times the file was read; goes up with every change seen.
    pub(crate) generation: u64,
    /// Whether some reading of the file was good, so that `config` is the user's own and not
    /// the defaults standing in for a file the daemon could never read.
    pub(crate) ever_good: bool,
}

/// How the file on disk stands with the configuration in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing<'a> {
    /// The file (or the defaults, when there is no file) is in force.
    InForce,
    /// The file has been unusable since the daemon started: the defaults stand in, without
    /// any of the user's rules, so runs are refused unless they ask to ignore the file.
    FailClosed(&'a ConfigError),
    /// The file became unusable after a good reading: that last good configuration stays in
    /// force until the file is fixed.
    LastGoodKept(&'a ConfigError),
}

impl ConfigState {
    /// A state whose configuration `config` is in force (read from a good file).
    pub fn good(config: Config) -> ConfigState {
        ConfigState {
            config: Arc::new(config),
            error: None,
            generation: 1,
            ever_good: true,
        }
    }

    /// Loads `path` as the daemon starts: its configuration, or the defaults and the error,
    /// which keeps runs out until the file is fixed.
    pub(crate) fn load(path: &Path) -> ConfigState {
        match Config::load(path) {
            Ok(config) => ConfigState::good(config),
            Err(error) => {
                tracing::error!(
                    "configuration not used, runs are refused until it is fixed: {error}"
                );
                ConfigState {
                    config: Arc::default(),
                    error: Some(error),
                    generation: 1,
                    ever_good: false,
                }
            }
        }
    }

    /// Reads `path` again: a good file replaces the configuration in force, a broken one
    /// leaves it and records the error.
    pub(crate) fn reload(&mut self, path: &Path) {
        self.generation += 1;
        match Config::load(path) {
            Ok(config) => {
                tracing::info!(file = %path.display(), "configuration reloaded");
                self.config = Arc::new(config);
                self.error = None;
                self.ever_good = true;
            }
            Err(error) if self.ever_good => {
                tracing::error!(
                    "configuration not used, the last good one stays in force: {error}"
                );
                self.error = Some(error);
            }
            Err(error) => {
                tracing::error!("configuration still not usable, runs stay refused: {error}");
                self.error = Some(error);
            }
        }
    }

    /// How the file on disk stands with the configuration in force.
    pub(crate) fn standing(&self) -> Standing<'_> {
        match &self.error {
            None => Standing::InForce,
            Some(error) if self.ever_good => Standing::LastGoodKept(error),
            Some(error) => Standing::FailClosed(error),
        }
    }

    /// Whether a run may start now, `ignore_config` being what the run asked for: the warning
    /// line its events start with, if any, or the refusal.
    pub(crate) fn admit_run(&self, ignore_config: bool) -> Result<Option<String>, ErrorInfo> {
        match self.standing() {
            Standing::InForce => Ok(None),
            Standing::LastGoodKept(error) => Ok(Some(error.last_good_kept())),
            Standing::FailClosed(error) if ignore_config => Ok(Some(error.ignored())),
            Standing::FailClosed(error) => {
                Err(ErrorInfo::new(ErrorCode::ConfigBroken, error.refusal()))
            }
        }
    }
}

/// What a broken file does to the daemon, for `agentctl config check`.
pub const BROKEN_FILE_NOTE: &str = "until the file is fixed, a daemon that starts with it refuses runs (a run may pass --ignore-config to go on with the defaults), and a daemon already running keeps its last good configuration";

impl ConfigError {
    /// Why a run is refused while the daemon has no good configuration.
    pub(crate) fn refusal(&self) -> String {
        format!(
            "{self} — runs are refused until the file is fixed, as its rules cannot be applied: fix it (`agentctl config check` shows the problem) or pass --ignore-config to run with the defaults"
        )
    }

    /// The warning line of a run while the last good configuration stays in force.
    pub(crate) fn last_good_kept(&self) -> String {
        format!(
            "{self} — the last good configuration stays in force until the file is fixed (`agentctl config check` shows the problem)"
        )
    }

    /// The warning line of a run that ignores the broken file (`--ignore-config`).
    pub(crate) fn ignored(&self) -> String {
        format!(
            "{self} — this run ignores the file (--ignore-config) and runs with the defaults: none of its rules, limits or settings apply"
        )
    }
}

/// How long the configuration file must be left alone after a change before it is read.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(100);

/// Watches the configuration file and reloads it into `state` on every change. The returned
/// watcher must be kept alive; `None` when watching is not possible (the daemon then keeps the
/// configuration it started with).
pub fn watch(file: PathBuf, state: watch::Sender<ConfigState>) -> Option<RecommendedWatcher> {
    let dir = file.parent()?.to_path_buf();
    if let Err(err) = std::fs::create_dir_all(&dir) {
        tracing::warn!(dir = %dir.display(), "cannot create the config directory: {err}");
        return None;
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let name = file.file_name()?.to_os_string();
    // notify calls back on its own thread: hand the events over to the runtime.
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event
            && !event.kind.is_access()
            && event
                .paths
                .iter()
                .any(|p| p.file_name() == Some(name.as_os_str()))
        {
            let _ = tx.send(());
        }
    })
    .inspect_err(|err| tracing::warn!("cannot watch the configuration: {err}"))
    .ok()?;
    if let Err(err) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
        tracing::warn!(dir = %dir.display(), "cannot watch the configuration: {err}");
        return None;
    }
    tokio::spawn(async move {
        while rx.recv().await.is_some() {
            // One save often comes as several events (truncate, write, rename): wait until
            // the file is quiet, then read it once.
            loop {
                tokio::select! {
                    more = rx.recv() => if more.is_none() { return },
                    () = tokio::time::sleep(SETTLE) => break,
                }
            }
            state.send_modify(|state| state.reload(&file));
        }
    });
    Some(watcher)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DENY: &str = "[permissions]\ndeny = [\"bash:rm -rf*\"]\n";
    const BROKEN: &str = "[permissions]\ndeny = [\"bash:rm -rf*\"]\nmax_turns = \"x\"\n";

    fn file_with(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, text).unwrap();
        (dir, file)
    }

    #[test]
    fn a_broken_file_at_start_fails_closed_and_refuses_runs_with_file_and_line() {
        let (_dir, file) = file_with(BROKEN);
        let state = ConfigState::load(&file);
        assert!(matches!(state.standing(), Standing::FailClosed(_)));
        let refused = state.admit_run(false).unwrap_err();
        assert_eq!(refused.code, ErrorCode::ConfigBroken);
        let at = format!("{}:3: ", file.display());
        assert!(refused.message.starts_with(&at), "{}", refused.message);
        assert!(
            refused.message.contains("--ignore-config"),
            "{}",
            refused.message
        );
    }

    #[test]
    fn a_run_that_ignores_the_broken_file_is_admitted_with_a_warning() {
        let (_dir, file) = file_with(BROKEN);
        let state = ConfigState::load(&file);
        let warning = state.admit_run(true).unwrap().expect("a warning");
        assert!(warning.contains("config.toml:3:"), "{warning}");
        assert!(warning.contains("defaults"), "{warning}");
    }

    #[test]
    fn a_broken_reload_after_a_good_file_keeps_the_last_good_one_with_a_warning() {
        let (_dir, file) = file_with(DENY);
        let mut state = ConfigState::load(&file);
        assert_eq!(state.admit_run(false).unwrap(), None);
        std::fs::write(&file, BROKEN).unwrap();
        state.reload(&file);
        assert!(matches!(state.standing(), Standing::LastGoodKept(_)));
        assert!(!state.config.permissions.deny.is_empty(), "the rules stay");
        let warning = state.admit_run(false).unwrap().expect("a warning");
        assert!(warning.contains("config.toml:3:"), "{warning}");
        assert!(warning.contains("last good configuration"), "{warning}");
    }

    #[test]
    fn a_good_reload_ends_the_fail_closed_state() {
        let (_dir, file) = file_with(BROKEN);
        let mut state = ConfigState::load(&file);
        std::fs::write(&file, BROKEN).unwrap();
        state.reload(&file);
        assert!(
            matches!(state.standing(), Standing::FailClosed(_)),
            "still never good"
        );
        std::fs::write(&file, DENY).unwrap();
        state.reload(&file);
        assert_eq!(state.standing(), Standing::InForce);
        assert_eq!(state.admit_run(false).unwrap(), None);
    }
}
