//! Commands run with the environment of the `agentctl` that created the session, not the
//! daemon's, and never see a secret (docs/architecture.md#tools): not in their output, not on disk,
//! not in the next request to the model.

use std::path::Path;

use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home};

const SECRETS: [&str; 5] = [
    "client-secret",
    "daemon-secret",
    "daemon-key",
    "test-key",
    "hunter2",
];

/// Every file under `dir`, with its content.
fn files_under(dir: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            found.push((
                path.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
    found
}

#[tokio::test]
async fn commands_get_the_clients_environment_without_secrets() {
    let home = Home::with_config(
        "[shell_env]\ninclude = [\"VISIBLE_TOKEN\"]\nexclude = [\"client_drop_*\"]\nset = { FIXED = \"yes\" }\n",
    );
    let project = tempfile::tempdir().unwrap();
    let bin = project.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let tool = bin.join("only-on-the-clients-path");
    std::fs::write(&tool, "#!/bin/sh\necho found on the client PATH\n").unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool(
            "bash",
            json!({"command": "only-on-the-clients-path; env | sort"}),
        ),
        anthropic::text("done"),
    ])
    .await;
    // The daemon was started from a shell with secrets of its own.
    let daemon = Daemon::start_with(
        home,
        &[
            ("ANTHROPIC_API_KEY", "daemon-key"),
            ("DAEMON_SECRET_TOKEN", "daemon-secret"),
            ("DAEMON_ONLY", "from-the-daemon"),
        ],
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = daemon.home.agentctl_with(
        &server,
        project.path(),
        &["run", "--allow", "bash", "show the environment"],
    );
    command
        .env("PATH", &path)
        .env("CLIENT_MARKER", "from-the-client")
        .env("MY_API_KEY", "client-secret")
        .env("Session_Password", "hunter2")
        .env("VISIBLE_TOKEN", "shown-by-include")
        .env("CLIENT_DROP_ME", "dropped");
    let output = command.output().await.unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let request = server.received()[1].body.to_string();
    let result = server.received()[1].body["messages"][2]["content"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.contains("found on the client PATH"), "{result}");
    for expected in [
        format!("PATH={path}"),
        "CLIENT_MARKER=from-the-client".to_string(),
        "VISIBLE_TOKEN=shown-by-include".to_string(),
        "FIXED=yes".to_string(),
    ] {
        assert!(
            result.lines().any(|l| l == expected),
            "no `{expected}` in {result}"
        );
    }
    for absent in [
        "DAEMON_ONLY",
        "CLIENT_DROP_ME",
        "MY_API_KEY",
        "ANTHROPIC_API_KEY",
    ] {
        assert!(!result.contains(absent), "`{absent}` in {result}");
    }
    for secret in SECRETS {
        assert!(!request.contains(secret), "`{secret}` sent to the model");
    }
    for (file, content) in files_under(daemon.home.path()) {
        for secret in SECRETS {
            assert!(!content.contains(secret), "`{secret}` written to {file}");
        }
    }
}
