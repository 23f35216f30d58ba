//! A test's usual surroundings in one call: a project directory, a scripted model server, the
//! real daemon in a private home, and a session in the project subscribed by a client.
//!
//! ```no_run
//! # async fn example() {
//! use tests::TestEnv;
//! use tests::model_server::anthropic;
//!
//! let mut env = TestEnv::builder()
//!     .file("README.md", "hello\n")
//!     .model(vec![anthropic::text("It says hello.")])
//!     .start()
//!     .await;
//! let events = env.run("read the readme").await;
//! # }
//! ```

use std::path::Path;

use agentctl::client::{Client, Incoming};
use protocol::{Mode, RunId, RunOptions, SessionEvent, SessionId};
use tempfile::TempDir;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::model_server::{ModelServer, Scripted};
use crate::{Daemon, Home, run_options, session_in, session_with_mode, start_run, until_finished};

/// How a [`TestEnv`] is set up; [`TestEnvBuilder::start`] starts it.
pub struct TestEnvBuilder {
    project: TempDir,
    config: Option<String>,
    script: Vec<Scripted>,
    routes: Vec<(String, Vec<Scripted>)>,
    mode: Option<Mode>,
    daemon_env: Vec<(String, String)>,
    provider_in_daemon: bool,
}

impl TestEnvBuilder {
    /// The daemon's `config.toml` (by default the one [`Home::new`] writes, which retries model
    /// calls quickly).
    pub fn config(mut self, config: &str) -> Self {
        self.config = Some(config.to_string());
        self
    }

    /// The scripted model's replies, one per request, in order (by default none).
    pub fn model(mut self, script: Vec<Scripted>) -> Self {
        self.script = script;
        self
    }

    /// Replies for requests whose first user message contains `marker` (a subagent's task,
    /// say), instead of the main script: [`ModelServer::route`].
    pub fn route(mut self, marker: &str, replies: Vec<Scripted>) -> Self {
        self.routes.push((marker.to_string(), replies));
        self
    }

    /// The session's permission mode (by default the daemon's).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Writes `contents` to `path` in the project now, before the daemon starts (making the
    /// directories on the way).
    pub fn file(self, path: &str, contents: &str) -> Self {
        let file = self.project.path().join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).expect("the file's directory is made");
        }
        std::fs::write(&file, contents).expect("the project file is written");
        self
    }

    /// An extra environment variable for the daemon itself.
    pub fn daemon_env(mut self, name: &str, value: &str) -> Self {
        self.daemon_env.push((name.to_string(), value.to_string()));
        self
    }

    /// Points the daemon's own environment at the scripted model: a run resumed by a restarted
    /// daemon has no client to give it one.
    pub fn provider_in_daemon(mut self) -> Self {
        self.provider_in_daemon = true;
        self
    }

    /// The project directory, to prepare before the daemon starts.
    pub fn project(&self) -> &Path {
        self.project.path()
    }

    /// Starts the model server and the daemon, and creates the session in the project,
    /// subscribed from its start.
    pub async fn start(self) -> TestEnv {
        let server = ModelServer::start(self.script).await;
        for (marker, replies) in self.routes {
            server.route(&marker, replies);
        }
        let home = match &self.config {
            Some(config) => Home::with_config(config),
            None => Home::new(),
        };
        let mut env: Vec<(&str, &str)> = self
            .daemon_env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if self.provider_in_daemon {
            env.extend(crate::restart::provider_env(&server));
        }
        let daemon = Daemon::start_with(home, &env);
        let (client, session, incoming) = match self.mode {
            Some(mode) => session_with_mode(&daemon, self.project.path(), mode).await,
            None => session_in(&daemon, self.project.path()).await,
        };
        TestEnv {
            incoming,
            client,
            session,
            daemon,
            server,
            project: self.project,
        }
    }
}

/// A running daemon with one session in a project of its own and the scripted model it talks
/// to. The fields drop in order: the client goes first, the daemon is stopped before the
/// project is removed.
pub struct TestEnv {
    /// The session's events, as the client receives them.
    pub incoming: UnboundedReceiver<Incoming>,
    /// The client that created the session and is subscribed to it.
    pub client: Client,
    /// The session, in [`TestEnv::project`].
    pub session: SessionId,
    /// The daemon, in a home of its own.
    pub daemon: Daemon,
    /// The scripted model; [`TestEnv::options`] point runs at it.
    pub server: ModelServer,
    /// The project directory the session works in.
    pub project: TempDir,
}

impl TestEnv {
    /// A fresh project directory, nothing started yet.
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder {
            project: tempfile::tempdir().expect("a temporary project"),
            config: None,
            script: Vec::new(),
            routes: Vec::new(),
            mode: None,
            daemon_env: Vec::new(),
            provider_in_daemon: false,
        }
    }

    /// The project directory.
    pub fn project(&self) -> &Path {
        self.project.path()
    }

    /// Run options that point at the scripted model and allow writes and commands
    /// ([`run_options`]).
    pub fn options(&self) -> RunOptions {
        run_options(&self.server)
    }

    /// Sends `text` with [`TestEnv::options`] and returns the run it started.
    pub async fn start_run(&self, text: &str) -> RunId {
        self.start_run_with(text, self.options()).await
    }

    /// Sends `text` with `options` and returns the run it started.
    pub async fn start_run_with(&self, text: &str, options: RunOptions) -> RunId {
        start_run(&self.client, &self.session, text, options).await
    }

    /// Sends `text` with [`TestEnv::options`] and returns the events until the run finishes.
    pub async fn run(&mut self, text: &str) -> Vec<SessionEvent> {
        let options = self.options();
        self.run_with(text, options).await
    }

    /// Sends `text` with `options` and returns the events until the run finishes.
    pub async fn run_with(&mut self, text: &str, options: RunOptions) -> Vec<SessionEvent> {
        start_run(&self.client, &self.session, text, options).await;
        until_finished(&mut self.incoming).await
    }

    /// Cancels the session's run (the daemon accepts it).
    pub async fn cancel(&self) {
        self.client
            .request(protocol::Request::Cancel {
                session: self.session.clone(),
            })
            .await
            .expect("cancel accepted");
    }
}
