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

/// The events of `run --json`'s `stdout`, checked to hold each event once and in order, as a
/// client that lost its link or daemon and followed again must show them: a gap only where a
/// message replayed after its deltas stands for them (`folds`: the first and last delta it
/// replaces). `stderr` goes into the failure message.
pub fn events_once_in_order(stdout: &str, stderr: &str) -> Vec<serde_json::Value> {
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut last = 0;
    for event in &events {
        let seq = event["seq"].as_u64().unwrap();
        let folded = event["folds"] == serde_json::json!([last + 1, seq.saturating_sub(1)]);
        assert!(
            seq == last + 1 || (seq > last + 1 && folded),
            "event {seq} after {last}:\n{stdout}\n{stderr}"
        );
        last = seq;
    }
    events
}
