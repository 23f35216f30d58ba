//! Driving auto mode's sandbox as a hostile model would: a session whose calls (`bash` and the
//! file tools) a scripted model makes one reply at a time, with nothing granted and nobody to
//! ask, and `git` run afterwards as the user would run it, outside the sandbox.

use std::path::Path;
use std::process::Command;

use protocol::{CreateSession, Mode, Reply, Request};
use serde_json::{Value, json};

use crate::model_server::{ModelServer, anthropic};
use crate::{Daemon, start_run, tool_results, until_finished};

/// A `bash` call with `command`.
pub fn bash(command: &str) -> (&'static str, Value) {
    ("bash", json!({ "command": command }))
}

/// Runs `git` in `dir` as the user would (with an identity, `dir` as its home).
pub fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .output()
        .expect("git runs")
}

/// An auto-mode session in `cwd` whose commands get `env`.
pub fn auto_session(cwd: &Path, env: &[(&str, String)]) -> CreateSession {
    CreateSession {
        mode: Some(Mode::Auto),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        ..CreateSession::in_dir(cwd.to_string_lossy())
    }
}

/// Creates `session` and runs `calls` in it, one reply each, with nothing granted and nobody
/// to ask; the results (tool, error, output), in order.
pub async fn run_calls(
    daemon: &Daemon,
    session: CreateSession,
    calls: &[(&str, Value)],
) -> Vec<(String, bool, String)> {
    let mut script: Vec<_> = calls
        .iter()
        .map(|(tool, args)| anthropic::tool(tool, args.clone()))
        .collect();
    script.push(anthropic::text("done"));
    let model = ModelServer::start(script).await;
    let mut client = daemon.client().await;
    let reply = client
        .request(Request::CreateSession(session))
        .await
        .unwrap();
    let Reply::SessionCreated(info) = reply else {
        panic!("{reply:?}")
    };
    crate::subscribe(&client, &info.id, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    let options = protocol::RunOptions {
        grants: Vec::new(),
        ..crate::run_options(&model)
    };
    start_run(&client, &info.id, "get out", options).await;
    let results = tool_results(&until_finished(&mut incoming).await);
    assert_eq!(results.len(), calls.len(), "{results:?}");
    results
}
