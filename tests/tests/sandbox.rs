//! Auto mode (docs/architecture.md#permissions-and-modes, docs/architecture.md#sandbox): commands
//! run without asking inside the kernel sandbox, which confines writes to the session directory,
//! the temporary directory and `[sandbox] writable`, and keeps the network out unless allowed. Each
//! test says why it skips on a machine without Landlock or user namespaces.

use std::path::{Path, PathBuf};

use protocol::{Event, Mode, Request, RunOptions};
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, start_run, tool_results, until_finished};

/// A project and, beside it, a directory it must not write to; the daemon's temporary
/// directory is a third one (so that neither of the others is inside it).
struct Dirs {
    _base: tempfile::TempDir,
    project: PathBuf,
    outside: PathBuf,
    tmp: PathBuf,
    extra: PathBuf,
}

fn dirs() -> Dirs {
    // Not under /tmp, which the sandbox replaces with a private one: writes outside meet
    // Landlock. A build under /tmp has its temporary directory there too.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let parent = if target.starts_with("/tmp") {
        Path::new("/var/tmp")
    } else {
        target
    };
    let base = tempfile::tempdir_in(parent).unwrap();
    let dirs = Dirs {
        project: base.path().join("project"),
        outside: base.path().join("outside"),
        tmp: base.path().join("tmp"),
        extra: base.path().join("extra"),
        _base: base,
    };
    for dir in [&dirs.project, &dirs.outside, &dirs.tmp, &dirs.extra] {
        std::fs::create_dir(dir).unwrap();
    }
    std::os::unix::fs::symlink(&dirs.outside, dirs.project.join("link")).unwrap();
    dirs
}

fn daemon(config: &str, dirs: &Dirs) -> Daemon {
    let config = format!("retry_base_ms = 5\nretry_max_ms = 20\n{config}");
    Daemon::start_with(
        Home::with_config(&config),
        &[("TMPDIR", dirs.tmp.to_str().unwrap())],
    )
}

/// Options with nothing granted and nobody to ask: only what the mode allows runs.
fn unattended(model: &ModelServer) -> RunOptions {
    RunOptions {
        grants: Vec::new(),
        ..tests::run_options(model)
    }
}

#[tokio::test]
async fn auto_mode_runs_commands_confined_without_asking() {
    let d = dirs();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = d.outside.display().to_string();
    let agentctl = tests::binary_in(&d.project, "agentctl");
    let commands = [
        "echo in > inside.txt && cat inside.txt".to_string(),
        format!("echo out > {out}/direct"),
        "echo via > link/through-link".to_string(),
        "echo up > ../outside/dotdot".to_string(),
        "head -c 5 /etc/passwd".to_string(),
        "echo t > \"$TMPDIR/scratch\" && cat \"$TMPDIR/scratch\"".to_string(),
        format!("echo x > {}/allowed && echo written", d.extra.display()),
        format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
        format!("(echo bg > {out}/background) & wait; bash -c 'echo child > {out}/child'; true"),
        format!("{} sessions", agentctl.display()),
    ];
    let mut script: Vec<_> = commands
        .iter()
        .map(|c| anthropic::tool("bash", json!({"command": c})))
        .collect();
    script.push(anthropic::text("done"));
    let model = ModelServer::start(script).await;
    let daemon = daemon(
        &format!(
            "[sandbox]\nwritable = [{:?}]\n",
            d.extra.display().to_string()
        ),
        &d,
    );
    if !daemon.sandbox_or_skip() {
        return;
    }
    let (client, id, mut incoming) =
        tests::session_with_mode(&daemon, &d.project, Mode::Auto).await;
    start_run(&client, &id, "try everything", unattended(&model)).await;
    let run = until_finished(&mut incoming).await;
    assert!(
        !run.iter()
            .any(|e| matches!(e.event, Event::PermissionRequested { .. })),
        "nothing is asked in auto mode"
    );
    let results = tool_results(&run);
    let ok = |i: usize, text: &str| {
        let (_, is_error, output) = &results[i];
        assert!(
            !is_error && output.contains(text),
            "{}: {output}",
            commands[i]
        );
    };
    let refused = |i: usize| {
        let (_, is_error, output) = &results[i];
        assert!(*is_error, "{}: {output}", commands[i]);
        assert!(output.contains("[sandbox:"), "{}: {output}", commands[i]);
    };
    ok(0, "in");
    refused(1);
    refused(2);
    refused(3);
    ok(4, "root:");
    ok(5, "t");
    ok(6, "written");
    refused(7);
    assert!(
        std::fs::read_dir(&d.outside).unwrap().next().is_none(),
        "nothing was written outside"
    );
    assert!(d.project.join("inside.txt").exists());
    assert!(
        listener.accept().is_err(),
        "no connection reached the loopback server"
    );
    let (_, _, last) = &results[8];
    assert!(last.contains("Permission denied"), "{last}");
    // A sandboxed command cannot drive the daemon that confined it: it does not see it (an
    // agentctl there may start a daemon of its own, confined like itself, which knows nothing
    // of this session and ends with the call).
    let (_, _, output) = &results[9];
    assert!(!output.contains(&id.0[..8]), "{output}");
}

#[tokio::test]
async fn the_network_can_be_allowed() {
    let d = dirs();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let model = ModelServer::start(vec![
        anthropic::tool(
            "bash",
            json!({"command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")}),
        ),
        anthropic::text("done"),
    ])
    .await;
    let daemon = daemon("[sandbox]\nnetwork = true\n", &d);
    if !daemon.sandbox_or_skip() {
        return;
    }
    let (client, id, mut incoming) =
        tests::session_with_mode(&daemon, &d.project, Mode::Auto).await;
    start_run(&client, &id, "connect", unattended(&model)).await;
    let run = until_finished(&mut incoming).await;
    let (_, is_error, output) = &tool_results(&run)[0];
    assert!(!is_error && output.contains("connected"), "{output}");
    assert!(listener.accept().is_ok());
}

#[tokio::test]
async fn leaving_the_sandbox_asks_and_default_mode_is_unchanged() {
    let d = dirs();
    let out = d.outside.display().to_string();
    let escape = json!({"command": format!("echo esc > {out}/escaped"), "sandbox": false});
    let model = ModelServer::start(vec![
        anthropic::tool("bash", escape.clone()),
        anthropic::text("done"),
        anthropic::tool("bash", escape),
        anthropic::text("done"),
        anthropic::tool("bash", json!({"command": "echo hi"})),
        anthropic::text("done"),
    ])
    .await;
    let daemon = daemon("", &d);
    if !daemon.sandbox_or_skip() {
        return;
    }
    let (client, id, mut incoming) =
        tests::session_with_mode(&daemon, &d.project, Mode::Auto).await;
    // Nobody to ask: refused.
    start_run(&client, &id, "escape", unattended(&model)).await;
    let run = until_finished(&mut incoming).await;
    assert!(tool_results(&run)[0].1);
    assert!(!d.outside.join("escaped").exists());
    // Asked and allowed: it runs unconfined.
    let mut options = unattended(&model);
    options.deny_unanswered = false;
    start_run(&client, &id, "escape", options).await;
    let asked = tests::events_until(&mut incoming, |e| {
        matches!(e, Event::PermissionRequested { .. })
    })
    .await;
    let Some(Event::PermissionRequested { request, .. }) = asked.last().map(|e| e.event.clone())
    else {
        unreachable!()
    };
    client
        .request(Request::Answer {
            session: id.clone(),
            request,
            decision: protocol::Decision::Allow,
        })
        .await
        .unwrap();
    until_finished(&mut incoming).await;
    assert_eq!(
        std::fs::read_to_string(d.outside.join("escaped")).unwrap(),
        "esc\n"
    );
    // Default mode still asks before any command.
    let (client, id, mut incoming) =
        tests::session_with_mode(&daemon, &d.project, Mode::Default).await;
    start_run(&client, &id, "hi", unattended(&model)).await;
    let run = until_finished(&mut incoming).await;
    let (_, is_error, output) = &tool_results(&run)[0];
    assert!(*is_error && output.contains("--allow bash"), "{output}");
}
