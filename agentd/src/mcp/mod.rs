//! MCP servers as tool sources (docs/architecture.md#mcp-servers), one shared pool per daemon: the
//! hub keeps every instance (one per server for `daemon` scope, one per session and server for
//! `session` scope), starts them when a run first lists tools, stops the ones whose configuration
//! changed or went, the ones of a session that ended, and all of them with the daemon.

pub(crate) mod client;
pub(crate) mod config;
pub(crate) mod names;
pub(crate) mod result;
pub(crate) mod server;
pub(crate) mod stderr;
pub(crate) mod toolset;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use protocol::{McpServerInfo, SessionId};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::ConfigState;
use crate::tools::ToolOutput;
use crate::tools::processes::ProcessRecords;
use config::{McpScope, McpServerConfig};
use server::{Instance, Launch, LaunchEnv};
pub(crate) use toolset::{McpTool, Toolset};

/// An instance's key: the server's name, and the session for `session` scope.
type Key = (String, Option<SessionId>);

/// What a session brings to the servers it uses.
#[derive(Debug, Clone)]
pub struct SessionSide {
    /// The session.
    pub id: SessionId,
    /// Its directory: where its `session`-scope servers run.
    pub cwd: PathBuf,
    /// The environment its commands get (docs/architecture.md#tools): its `session`-scope servers
    /// get it too.
    pub env: Arc<Vec<(String, String)>>,
}

/// The daemon's MCP servers; cheap to clone.
#[derive(Clone)]
pub struct McpHub {
    inner: Arc<Inner>,
}

struct Inner {
    instances: Mutex<HashMap<Key, Arc<Instance>>>,
    /// Servers clients brought for one session, besides the configured ones.
    extras: Mutex<HashMap<SessionId, Vec<McpServerConfig>>>,
    http: reqwest::Client,
    processes: ProcessRecords,
    config: watch::Receiver<ConfigState>,
}

impl McpHub {
    /// A hub with nothing started, following the configuration in `config`: a server whose
    /// entry changed is stopped (the next use starts it anew), one removed or disabled is
    /// stopped.
    pub fn new(
        http: reqwest::Client,
        processes: ProcessRecords,
        config: watch::Receiver<ConfigState>,
    ) -> McpHub {
        let hub = McpHub {
            inner: Arc::new(Inner {
                instances: Mutex::default(),
                extras: Mutex::default(),
                http,
                processes,
                config: config.clone(),
            }),
        };
        let weak = Arc::downgrade(&hub.inner);
        tokio::spawn(follow_config(weak, config));
        hub
    }

    fn instances(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<Instance>>> {
        self.inner
            .instances
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The enabled server called `name` for `session`.
    fn configured_one(&self, session: &SessionId, name: &str) -> Option<McpServerConfig> {
        self.configured(session)
            .into_iter()
            .find(|s| s.name == name)
    }

    /// The servers `session` uses: the enabled ones of the configuration in force, and those
    /// a client brought for it (which win over a configured one of the same name).
    fn configured(&self, session: &SessionId) -> Vec<McpServerConfig> {
        let extras = self
            .inner
            .extras
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session)
            .cloned()
            .unwrap_or_default();
        let state = self.inner.config.borrow();
        let mut servers: Vec<McpServerConfig> = state
            .config
            .mcp
            .servers
            .iter()
            .filter(|s| s.enabled && !extras.iter().any(|e| e.name == s.name))
            .cloned()
            .collect();
        servers.extend(extras);
        servers
    }

    /// Uses `servers` in `session`'s runs besides the configured ones, replacing what was
    /// given before; instances of servers no longer given are stopped.
    pub(crate) async fn set_session_servers(
        &self,
        session: &SessionId,
        servers: Vec<McpServerConfig>,
    ) {
        let before = self
            .inner
            .extras
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(session.clone(), servers.clone())
            .unwrap_or_default();
        let retired: Vec<Arc<Instance>> = {
            let mut instances = self.instances();
            let old: Vec<Key> = instances
                .iter()
                .filter(|((_, owner), instance)| {
                    owner.as_ref() == Some(session)
                        && before.contains(&instance.config)
                        && !servers.contains(&instance.config)
                })
                .map(|(key, _)| key.clone())
                .collect();
            old.iter().filter_map(|k| instances.remove(k)).collect()
        };
        futures::future::join_all(retired.iter().map(|i| i.stop())).await;
    }

    /// The instance of `config` for `session`, made when there is none.
    fn instance(&self, config: &McpServerConfig, session: &SessionSide) -> Arc<Instance> {
        let owner = (config.scope == McpScope::Session).then(|| session.id.clone());
        let key = (config.name.clone(), owner.clone());
        let mut instances = self.instances();
        match instances.get(&key) {
            Some(instance) if instance.config == *config => instance.clone(),
            _ => {
                let instance = Arc::new(Instance::new(config.clone(), owner));
                if let Some(old) = instances.insert(key, instance.clone()) {
                    tokio::spawn(async move { old.stop().await });
                }
                instance
            }
        }
    }

    fn launch(&self, config: &McpServerConfig, session: &SessionSide) -> Launch {
        let (cwd, env) = match config.scope {
            McpScope::Session => (session.cwd.clone(), LaunchEnv::Session(session.env.clone())),
            McpScope::Daemon => {
                let shell_env = self.inner.config.borrow().config.shell_env.clone();
                let home =
                    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
                (home, LaunchEnv::Daemon(shell_env))
            }
        };
        Launch {
            cwd,
            env,
            http: self.inner.http.clone(),
            processes: self.inner.processes.clone(),
        }
    }

    /// The MCP tools for `session`'s next turn: servers not started yet are started (in
    /// parallel, each within its startup timeout), until `cancel` fires.
    pub async fn toolset(&self, session: &SessionSide, cancel: &CancellationToken) -> Toolset {
        let configs = self.configured(&session.id);
        if configs.is_empty() {
            return Toolset::default();
        }
        let listings = configs.iter().map(|config| {
            let instance = self.instance(config, session);
            let launch = self.launch(config, session);
            async move { instance.tools(&launch).await }
        });
        let listings = tokio::select! {
            listings = futures::future::join_all(listings) => listings,
            () = cancel.cancelled() => return Toolset::default(),
        };
        let mut set = Toolset::default();
        let mut taken = HashSet::new();
        for (config, listing) in configs.iter().zip(listings) {
            set.add(
                config,
                listing.as_deref().map(Vec::as_slice).map_err(Clone::clone),
                &mut taken,
            );
        }
        set
    }

    /// Finds a tool the turn's toolset did not have, by the server its name gives: that
    /// server is started (again) if it can be. `None` when the name names no configured
    /// server; otherwise the tool, or an error result that names the server.
    pub(crate) async fn find(
        &self,
        session: &SessionSide,
        name: &str,
        cancel: &CancellationToken,
    ) -> Option<Result<McpTool, ToolOutput>> {
        let (server, _) = names::split(name)?;
        let config = self.configured_one(&session.id, server)?;
        let instance = self.instance(&config, session);
        let launch = self.launch(&config, session);
        let listing = tokio::select! {
            listing = instance.tools(&launch) => listing,
            () = cancel.cancelled() => return Some(Err(ToolOutput::error(crate::tools::pool::INTERRUPTED_RUNNING))),
        };
        let mut set = Toolset::default();
        set.add(
            &config,
            listing.as_deref().map(Vec::as_slice).map_err(Clone::clone),
            &mut HashSet::new(),
        );
        if let Some(Err(error)) = set.servers.first().map(|s| s.outcome.clone()) {
            return Some(Err(ToolOutput::error(error)));
        }
        Some(set.get(name).cloned().ok_or_else(|| {
            let names: Vec<&str> = set.tools.iter().map(|t| t.tool.as_str()).collect();
            ToolOutput::error(format!(
                "MCP server `{server}` has no tool for `{name}`; its tools are: {}",
                if names.is_empty() {
                    "(none)".to_string()
                } else {
                    names.join(", ")
                }
            ))
        }))
    }

    /// Calls `tool` for `session`.
    pub async fn call(
        &self,
        session: &SessionSide,
        tool: &McpTool,
        args: Value,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let Some(config) = self.configured_one(&session.id, &tool.server) else {
            return ToolOutput::error(format!(
                "MCP server `{}` is no longer configured",
                tool.server
            ));
        };
        let args = match args {
            Value::Object(map) => map,
            _ => return ToolOutput::error("the arguments must be a JSON object"),
        };
        let instance = self.instance(&config, session);
        let launch = self.launch(&config, session);
        instance.call(&launch, &tool.tool, args, cancel).await
    }

    /// Stops the `session`-scope servers of `session`, and forgets the ones a client brought
    /// for it (a client opening it again brings them again).
    pub(crate) async fn end_session(&self, session: &SessionId) {
        self.inner
            .extras
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(session);
        let ended: Vec<Arc<Instance>> = {
            let mut instances = self.instances();
            let keys: Vec<Key> = instances
                .keys()
                .filter(|(_, owner)| owner.as_ref() == Some(session))
                .cloned()
                .collect();
            keys.iter().filter_map(|k| instances.remove(k)).collect()
        };
        futures::future::join_all(ended.iter().map(|i| i.stop())).await;
    }

    /// Stops every server; none runs when this returns.
    pub async fn shutdown(&self) {
        let all: Vec<Arc<Instance>> = self.instances().drain().map(|(_, i)| i).collect();
        futures::future::join_all(all.iter().map(|i| i.stop())).await;
    }

    /// Every configured server and its instances, for `agentctl mcp list` and `daemon status`.
    pub(crate) fn list(&self) -> Vec<McpServerInfo> {
        let (servers, broken) = {
            let state = self.inner.config.borrow();
            (
                state.config.mcp.servers.clone(),
                state.config.mcp.broken.clone(),
            )
        };
        let instances: Vec<Arc<Instance>> = self.instances().values().cloned().collect();
        let mut out = Vec::new();
        for config in &servers {
            let mut mine: Vec<&Arc<Instance>> =
                instances.iter().filter(|i| i.config == *config).collect();
            mine.sort_by(|a, b| a.session.cmp(&b.session));
            let info = |state: &str, session, pid, tools, last_error| McpServerInfo {
                name: config.name.clone(),
                transport: config.transport.kind().to_string(),
                scope: config.scope.as_str().to_string(),
                session,
                state: state.to_string(),
                pid,
                tools,
                last_error,
            };
            if mine.is_empty() {
                let state = if config.enabled { "idle" } else { "disabled" };
                out.push(info(state, None, None, 0, None));
            }
            for instance in mine {
                let status = instance.status();
                out.push(info(
                    status.state,
                    instance.session.clone(),
                    status.pid,
                    status.tools as u32,
                    status.last_error,
                ));
            }
        }
        // Servers clients brought for their sessions.
        for instance in instances.iter().filter(|i| !servers.contains(&i.config)) {
            let status = instance.status();
            out.push(McpServerInfo {
                name: instance.config.name.clone(),
                transport: instance.config.transport.kind().to_string(),
                scope: McpScope::Session.as_str().to_string(),
                session: instance.session.clone(),
                state: status.state.to_string(),
                pid: status.pid,
                tools: status.tools as u32,
                last_error: status.last_error,
            });
        }
        for (name, error) in broken {
            out.push(McpServerInfo {
                name,
                transport: "?".to_string(),
                scope: "?".to_string(),
                session: None,
                state: "broken".to_string(),
                pid: None,
                tools: 0,
                last_error: Some(error),
            });
        }
        out
    }
}

/// Stops instances whose entry changed, went or was disabled, whenever the configuration is
/// read again; ends with the hub.
async fn follow_config(hub: Weak<Inner>, mut config: watch::Receiver<ConfigState>) {
    while config.changed().await.is_ok() {
        let Some(inner) = hub.upgrade() else { return };
        let servers = config.borrow_and_update().config.mcp.servers.clone();
        let retired: Vec<Arc<Instance>> = {
            let mut instances = inner.instances.lock().unwrap_or_else(|e| e.into_inner());
            let keys: Vec<Key> = instances
                .iter()
                .filter(|((_, owner), instance)| {
                    let configured = servers.iter().any(|s| s.enabled && *s == instance.config);
                    let given = owner.as_ref().is_some_and(|session| {
                        inner
                            .extras
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get(session)
                            .is_some_and(|given| given.contains(&instance.config))
                    });
                    !configured && !given
                })
                .map(|(key, _)| key.clone())
                .collect();
            keys.iter().filter_map(|k| instances.remove(k)).collect()
        };
        for instance in &retired {
            tracing::info!(server = %instance.config.name, "MCP server configuration changed: stopping it");
        }
        futures::future::join_all(retired.iter().map(|i| i.stop())).await;
    }
}
