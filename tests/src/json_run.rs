//! `agentctl run --json` as a child process, read line by line.

use std::path::Path;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

use crate::{Daemon, WAIT, model_server::ModelServer};

/// A running `agentctl run --json` and its output lines.
pub struct JsonRun {
    /// The process.
    pub child: Child,
    /// Its stdout, one event per line.
    pub lines: Lines<BufReader<ChildStdout>>,
}

impl JsonRun {
    /// Starts `agentctl run --allow bash --json PROMPT` in `cwd` against `server`.
    pub fn start(daemon: &Daemon, server: &ModelServer, cwd: &Path, prompt: &str) -> JsonRun {
        let mut child = daemon
            .home
            .agentctl_with(server, cwd, &["run", "--allow", "bash", "--json", prompt])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("agentctl starts");
        let lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
        JsonRun { child, lines }
    }

    /// The next event, or `None` when the output ended.
    pub async fn next(&mut self) -> Option<serde_json::Value> {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("agentctl printed within the wait")
            .expect("stdout is readable")?;
        Some(serde_json::from_str(&line).expect("each line is JSON"))
    }

    /// Reads events until one of type `kind`, and returns it.
    pub async fn until(&mut self, kind: &str) -> serde_json::Value {
        loop {
            let event = self
                .next()
                .await
                .unwrap_or_else(|| panic!("no {kind} event"));
            if event["type"] == kind {
                return event;
            }
        }
    }

    /// Every event until the output ends.
    pub async fn rest(&mut self) -> Vec<serde_json::Value> {
        let mut rest = Vec::new();
        while let Some(event) = self.next().await {
            rest.push(event);
        }
        rest
    }
}
