//! Language servers the daemon keeps warm (docs/architecture.md#language-servers): one pool per
//! daemon, keyed by (root, server). A server starts on first need, is shared by every session
//! with files under its root, hears of the changes the agent makes, is stopped when idle and
//! with the daemon. After `write` and `edit`, the diagnostics the change introduced are added to
//! the result the model reads.

pub(crate) mod config;
pub(crate) mod confine;
pub(crate) mod defaults;
pub(crate) mod diagnostics;
pub(crate) mod disk;
pub(crate) mod documents;
pub(crate) mod encoding;
pub(crate) mod frames;
pub(crate) mod handlers;
pub(crate) mod instance;
mod listing;
pub(crate) mod outbox;
pub(crate) mod published;
pub(crate) mod query;
pub(crate) mod root;
pub(crate) mod select;
pub(crate) mod server;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::tools::processes::ProcessRecords;
use diagnostics::Introduced;
use instance::{InUse, Instance, Running};
use select::ServerSpec;

/// An instance's key: its root and the server's name.
type Key = (PathBuf, String);

/// The largest file told to a server (a bigger one is neither opened nor re-read for it).
pub(crate) const MAX_FILE_BYTES: usize = 4 << 20;
/// Servers kept at once (each may take a gigabyte or more); past it the least recently used
/// is stopped for the next.
pub(crate) const MAX_SERVERS: usize = 8;

/// A file the agent read or changed, as the servers are told of it.
pub(crate) struct FileText<'a> {
    /// The file, absolute.
    pub(crate) path: &'a Path,
    /// Its whole text now.
    pub(crate) text: &'a str,
    /// The session's directory (where the root search stops, with its repository).
    pub(crate) cwd: &'a Path,
    /// The session's command environment: a server is found on its PATH and runs with it.
    pub(crate) env: &'a Arc<Vec<(String, String)>>,
}

/// The daemon's language servers; cheap to clone.
#[derive(Clone)]
pub struct LspHub {
    inner: Arc<Inner>,
    /// The session this handle works for, recorded on the instances it uses.
    session: Option<protocol::SessionId>,
}

impl std::fmt::Debug for LspHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LspHub")
            .field("instances", &self.instances().len())
            .finish()
    }
}

/// Where the hub reads `[lsp]` as configured now (the daemon's configuration follows its file).
pub type LspSettings = Arc<dyn Fn() -> config::LspConfig + Send + Sync>;

/// The pool.
struct Inner {
    instances: Mutex<HashMap<Key, Arc<Instance>>>,
    records: ProcessRecords,
    config: LspSettings,
    /// What servers run in.
    sandbox: confine::ServerSandbox,
}

impl LspHub {
    /// A pool with nothing started, following `config`; servers are recorded in `records` and
    /// run in `sandbox`.
    pub fn new(
        records: ProcessRecords,
        config: LspSettings,
        sandbox: confine::ServerSandbox,
    ) -> LspHub {
        let hub = LspHub {
            inner: Arc::new(Inner {
                instances: Mutex::default(),
                records,
                config,
                sandbox,
            }),
            session: None,
        };
        tokio::spawn(stop_idle(Arc::downgrade(&hub.inner)));
        hub
    }

    /// The same pool, for `session`'s tools: the instances they use list the session.
    pub(crate) fn for_session(&self, session: protocol::SessionId) -> LspHub {
        LspHub {
            inner: self.inner.clone(),
            session: Some(session),
        }
    }

    fn instances(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<Instance>>> {
        self.inner
            .instances
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The server and root for `file`, and the instance serving them (made, not started, when
    /// new), in use until the guard goes; `None` when no server serves the file.
    fn instance_for(&self, file: &FileText<'_>) -> Option<InUse> {
        if file.text.len() > MAX_FILE_BYTES {
            return None;
        }
        let config = (self.inner.config)();
        if !confine::permitted(&config) {
            return None;
        }
        let spec: ServerSpec = select::server_for(&config, file.path, file.env)?;
        let root = root::find_root(file.path, file.cwd, &spec.root_markers);
        let key = (root.clone(), spec.name.clone());
        let mut instances = self.instances();
        // A server whose entry changed since it started is replaced (and stopped).
        if let Some(old) = instances.get(&key)
            && !old.spec.same_setup(&spec)
            && let Some(old) = instances.remove(&key)
        {
            tracing::info!(server = %spec.name, root = %root.display(), "language server settings changed; starting it anew");
            tokio::spawn(async move { old.stop().await });
        }
        if !instances.contains_key(&key) && instances.len() >= MAX_SERVERS {
            // Room is made by the least recently used server not in use; with every one in
            // use, the file gets no server.
            let (oldest, idle) = instances
                .iter()
                .map(|(k, i)| (k.clone(), i.idle_for()))
                .max_by_key(|(_, idle)| *idle)?;
            if idle.is_zero() {
                tracing::warn!(server = %spec.name, root = %root.display(), "{MAX_SERVERS} language servers are in use; none is started for this root");
                return None;
            }
            if let Some(old) = instances.remove(&oldest) {
                tracing::info!(server = %old.spec.name, root = %old.root.display(), "{MAX_SERVERS} language servers run; stopping the least recently used");
                tokio::spawn(async move { old.stop().await });
            }
        }
        let instance = instances
            .entry(key)
            .or_insert_with(|| Arc::new(Instance::new(spec, root)));
        if let Some(session) = &self.session {
            instance.used_by(session);
        }
        // Held before the pool's lock is let go: the idle sweep cannot take it in between.
        Some(instance.hold())
    }

    /// The running server of `instance`, started with `env` when needed (the start goes on in
    /// the background when the caller stops waiting).
    fn ensure(
        &self,
        instance: &Arc<Instance>,
        env: &Arc<Vec<(String, String)>>,
    ) -> tokio::task::JoinHandle<Result<Arc<Running>, String>> {
        let (instance, env, records) = (instance.clone(), env.clone(), self.inner.records.clone());
        let (sandbox, sandboxed) = (self.inner.sandbox.clone(), (self.inner.config)().sandbox);
        tokio::spawn(async move { instance.ensure(&env, &records, &sandbox, sandboxed).await })
    }

    /// Whether a server serves `path` for a session with command environment `env`.
    pub(crate) fn serves(&self, path: &Path, env: &[(String, String)]) -> bool {
        let config = (self.inner.config)();
        confine::permitted(&config) && select::server_for(&config, path, env).is_some()
    }

    /// Opens a file the agent read on its server (starting the server), without waiting: so
    /// that a later edit has diagnostics to compare with.
    pub(crate) fn opened(&self, file: FileText<'_>) {
        let Some(in_use) = self.instance_for(&file) else {
            return;
        };
        let language = defaults::document_language(file.path);
        let starting = self.ensure(in_use.instance(), file.env);
        let (path, text) = (file.path.to_path_buf(), file.text.to_string());
        tokio::spawn(async move {
            let _in_use = in_use;
            if let Ok(Ok(running)) = starting.await {
                // An edit that came first told the server the newer text.
                let mut docs = running.docs.lock().await;
                if docs.version(&path).is_none() {
                    docs.sync(&running.live, &path, &language, &text, false);
                }
            }
        });
    }

    /// Tells the file's server of the agent's change and waits (at most `[lsp] wait_ms`) for its
    /// diagnostics; the ones the change introduced, as text for the tool's result (`shown` is the
    /// path as the model sees it). `None` when no server serves the file, `wait_ms` is 0, the
    /// server cannot run, or nothing new came.
    pub(crate) async fn changed(
        &self,
        file: FileText<'_>,
        before: Option<&str>,
        shown: &str,
    ) -> Option<String> {
        let wait = (self.inner.config)().wait();
        if wait.is_zero() {
            return None;
        }
        let in_use = self.instance_for(&file)?;
        let instance = in_use.instance();
        let language = defaults::document_language(file.path);
        let deadline = tokio::time::Instant::now() + wait;
        let name = instance.spec.name.clone();
        // A server found dead mid-check (it died just before) is started again once.
        for _ in 0..2 {
            let running =
                match tokio::time::timeout_at(deadline, self.ensure(instance, file.env)).await {
                    Ok(Ok(Ok(running))) => running,
                    // Why it cannot run is in the log: the model can do nothing about it.
                    Ok(Ok(Err(_)) | Err(_)) => return None,
                    Err(_) => {
                        return Some(format!(
                            "diagnostics ({name}): none yet, the language server is still starting"
                        ));
                    }
                };
            let checked = tokio::select! {
                checked = check(instance, &running, (&file, before), &language, wait, deadline) => checked,
                () = running.live.ended() => continue,
            };
            return checked.and_then(|found| found.describe(&name, shown));
        }
        None
    }

    /// Stops every server (the daemon is stopping).
    pub async fn shutdown(&self) {
        let all: Vec<Arc<Instance>> = self.instances().drain().map(|(_, i)| i).collect();
        futures::future::join_all(all.iter().map(|i| i.stop())).await;
    }
}

/// Tells `running` (of `instance`) of `file`'s new text (`before` it: the text it replaced, when
/// the file existed) and waits until `deadline` for its diagnostics; what the change introduced.
async fn check(
    instance: &Instance,
    running: &Running,
    (file, before): (&FileText<'_>, Option<&str>),
    language: &str,
    wait: Duration,
    deadline: tokio::time::Instant,
) -> Option<Introduced> {
    let (synced, baseline) = {
        let mut docs = running.docs.lock().await;
        // Not open yet (no `read` opened it, or its opening raced this edit while the server
        // started): open it with the text it had before the change, so that what the change
        // introduced can be told from what was there.
        if docs.version(file.path).is_none()
            && let Some(before) = before
        {
            docs.sync(&running.live, file.path, language, before, false);
        }
        // The file is open but its diagnostics are still to come (a `read` just opened it):
        // they are the baseline, worth part of the wait.
        if let Some(version) = docs.version(file.path)
            && instance
                .published
                .get(file.path)
                .is_none_or(|p| p.version.is_some_and(|v| v < version))
        {
            let part = tokio::time::Instant::now() + wait / 2;
            instance
                .published
                .settled(file.path, version, Instant::now(), part.min(deadline))
                .await;
        }
        let baseline = instance.published.get(file.path);
        let synced = docs.sync(&running.live, file.path, language, file.text, true)?;
        (synced, baseline)
    };
    let sent = Instant::now();
    let after = instance
        .published
        .settled(file.path, synced.version, sent, deadline)
        .await?;
    let before = match (&baseline, &synced.previous) {
        (Some(published), Some(text)) => Some((published.items.as_slice(), text.as_str())),
        _ => None,
    };
    Some(Introduced::between(
        before,
        &after.items,
        file.text,
        running.live.encoding,
    ))
}

/// Stops the servers unused for `[lsp] idle_stop_secs`, and those the configuration turned off,
/// until the hub is gone.
async fn stop_idle(hub: Weak<Inner>) {
    loop {
        let idle = match hub.upgrade() {
            Some(inner) => (inner.config)().idle_stop(),
            None => return,
        };
        tokio::time::sleep((idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(5)))
            .await;
        let Some(inner) = hub.upgrade() else { return };
        let config = (inner.config)();
        let idle = config.idle_stop();
        let idle_ones: Vec<Arc<Instance>> = {
            let mut instances = inner.instances.lock().unwrap_or_else(|e| e.into_inner());
            let keys: Vec<Key> = instances
                .iter()
                .filter(|(_, i)| i.idle_for() >= idle || config.server_off(&i.spec.name))
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter().filter_map(|k| instances.remove(k)).collect()
        };
        drop(inner);
        // Stopped at once (a start under way gives up); `stop` logs a server that ran.
        for instance in idle_ones {
            tokio::spawn(async move { instance.stop().await });
        }
    }
}
