//! Language servers the daemon keeps warm (docs/architecture.md#language-servers), against a real
//! pyright (tests/scripts/install-lsp.sh installs it; without it, or without the sandbox servers
//! run in, these tests skip), confined by the sandbox: the errors an
//! edit introduced come back in its result, one server serves every session of a project, a
//! killed server comes back, an idle one goes, and a file no server serves gets nothing.

use protocol::Event;
use serde_json::json;
use tests::language_servers::{
    children_named, exited, pyright_config, pyright_or_skip, server_log,
};
use tests::model_server::anthropic;
use tests::{TestEnv, finished, session_in, start_run, tool_results, until_finished};

/// The project's Python file: clean.
const CLEAN: &str =
    "def add(a: int, b: int) -> int:\n    return a + b\n\n\nx: int = 1\nprint(add(x, 2))\n";

/// What pyright says of `x: int = "s"` on line 5.
const TYPE_ERROR: &str = "m.py:5:10 error: Type \"Literal['s']\" is not assignable to declared type \"int\" [reportAssignmentType]";

/// A project with a clean `m.py`, served by the installed pyright (stopped after
/// `idle_stop_secs` unused).
fn pyright_project(pyright: &std::path::Path, idle_stop_secs: u64) -> tests::TestEnvBuilder {
    TestEnv::builder()
        .config(&pyright_config(pyright, 15000, idle_stop_secs))
        .file("pyproject.toml", "")
        .file("m.py", CLEAN)
}

/// Runs "break m.py" in `env`, whose model reads m.py and then breaks `x`'s type; fails unless
/// the edit's result carries pyright's error.
async fn broken(env: &mut TestEnv) {
    let events = env.run("break m.py").await;
    let first = &tool_results(&events)[1].2;
    assert!(
        first.contains(TYPE_ERROR),
        "{first}{}",
        server_log(&env.daemon.home)
    );
}

/// An `edit` of m.py from `old` to `new`.
fn edit(old: &str, new: &str) -> tests::model_server::Scripted {
    anthropic::tool(
        "edit",
        json!({"path": "m.py", "old_string": old, "new_string": new}),
    )
}

/// The text of the tool result the model received in request `index`.
fn received_result(env: &TestEnv, index: usize) -> String {
    let body = &env.server.received()[index].body;
    let messages = body["messages"].as_array().expect("messages");
    let content = &messages.last().expect("a last message")["content"][0]["content"];
    match content {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The one pyright the daemon runs (the sandbox helper that runs it); fails when there is not
/// exactly one, or it runs outside the sandbox.
fn the_pyright(env: &TestEnv) -> u32 {
    let found = children_named(env.daemon.pid(), "pyright");
    assert_eq!(found.len(), 1, "pyright processes of the daemon: {found:?}");
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", found[0])).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&cmdline).contains("__sandbox"),
        "pyright runs outside the sandbox: {}",
        String::from_utf8_lossy(&cmdline)
    );
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_introduces_a_type_error_gets_it_and_the_fix_gets_none() {
    let Some(pyright) = pyright_or_skip() else {
        return;
    };
    // The built-in server, found on the PATH of the commands' environment.
    let bin = pyright
        .parent()
        .expect("a bin directory")
        .display()
        .to_string();
    let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
    let mut env = TestEnv::builder()
        .config("retry_base_ms = 5\nretry_max_ms = 20\n[lsp]\nwait_ms = 15000\n")
        .daemon_env("PATH", &path)
        .file("pyproject.toml", "")
        .file("m.py", CLEAN)
        .model(vec![
            anthropic::tool("read", json!({"path": "m.py"})),
            edit("x: int = 1", "x: int = \"s\""),
            edit("x: int = \"s\"", "x: int = 2"),
            anthropic::text("Done."),
        ])
        .start()
        .await;
    if !env.daemon.sandbox_or_skip() {
        return;
    }
    let events = env.run("break it, then fix it").await;
    let results = tool_results(&events);
    assert!(!results[0].2.contains("diagnostics"), "{}", results[0].2);
    let broken = &results[1].2;
    assert!(
        broken.contains(&format!(
            "\ndiagnostics (pyright): 1 new error\n  {TYPE_ERROR}"
        )),
        "{broken}{}",
        server_log(&env.daemon.home)
    );
    // The model read it in the result of its call.
    assert!(received_result(&env, 2).contains(TYPE_ERROR));
    let fixed = &results[2].2;
    assert!(fixed.starts_with("Edited m.py"), "{fixed}");
    assert!(!fixed.contains("diagnostics"), "{fixed}");
    assert!(!received_result(&env, 3).contains("diagnostics"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_in_one_project_share_one_server() {
    let Some(pyright) = pyright_or_skip() else {
        return;
    };
    let mut env = pyright_project(&pyright, 600)
        .model(vec![
            anthropic::tool("read", json!({"path": "m.py"})),
            edit("x: int = 1", "x: int = \"s\""),
            anthropic::text("Broken."),
            anthropic::tool(
                "write",
                json!({"path": "n.py", "content": "y: int = \"t\"\n"}),
            ),
            anthropic::text("Also broken."),
        ])
        .start()
        .await;
    if !env.daemon.sandbox_or_skip() {
        return;
    }
    broken(&mut env).await;
    let first = the_pyright(&env);
    let (client, session, mut incoming) = session_in(&env.daemon, env.project()).await;
    start_run(&client, &session, "write n.py", env.options()).await;
    let events = until_finished(&mut incoming).await;
    let written = &tool_results(&events)[0].2;
    assert!(
        written.contains(
            "diagnostics (pyright): 1 error (all errors in the file)\n  n.py:1:10 error:"
        ),
        "{written}"
    );
    assert_eq!(the_pyright(&env), first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_started_again_and_diagnostics_come_back() {
    let Some(pyright) = pyright_or_skip() else {
        return;
    };
    let mut env = pyright_project(&pyright, 600)
        .model(vec![
            anthropic::tool("read", json!({"path": "m.py"})),
            edit("x: int = 1", "x: int = \"s\""),
            anthropic::text("Broken."),
            edit("print(add(x, 2))", "print(add(x, \"2\"))"),
            anthropic::text("Broken again."),
        ])
        .start()
        .await;
    if !env.daemon.sandbox_or_skip() {
        return;
    }
    broken(&mut env).await;
    let killed = the_pyright(&env);
    tests::signal(killed, libc::SIGKILL);
    assert!(exited(killed).await, "pyright {killed} did not die");
    let events = env.run("break it more").await;
    let result = &tool_results(&events)[0].2;
    assert!(
        result.contains("m.py:6:14 error: Argument of type \"Literal['2']\" cannot be assigned"),
        "{result}"
    );
    assert_ne!(the_pyright(&env), killed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_server_is_stopped() {
    let Some(pyright) = pyright_or_skip() else {
        return;
    };
    let mut env = pyright_project(&pyright, 1)
        .model(vec![
            anthropic::tool("read", json!({"path": "m.py"})),
            edit("x: int = 1", "x: int = \"s\""),
            anthropic::text("Broken."),
        ])
        .start()
        .await;
    if !env.daemon.sandbox_or_skip() {
        return;
    }
    broken(&mut env).await;
    let server = the_pyright(&env);
    assert!(exited(server).await, "idle pyright {server} still runs");
    assert!(children_named(env.daemon.pid(), "pyright").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_no_server_serves_gets_nothing_added_and_starts_nothing() {
    let Some(pyright) = pyright_or_skip() else {
        return;
    };
    let mut env = pyright_project(&pyright, 600)
        .file("notes.txt", "x: int = 1\n")
        .model(vec![
            anthropic::tool("read", json!({"path": "notes.txt"})),
            anthropic::tool(
                "edit",
                json!({"path": "notes.txt", "old_string": "x: int = 1", "new_string": "x: int = \"s\""}),
            ),
            anthropic::text("Noted."),
        ])
        .start()
        .await;
    if !env.daemon.sandbox_or_skip() {
        return;
    }
    let events = env.run("change the notes").await;
    let result = &tool_results(&events)[1].2;
    assert!(result.starts_with("Edited notes.txt"), "{result}");
    assert!(!result.contains("diagnostics"), "{result}");
    assert!(children_named(env.daemon.pid(), "pyright").is_empty());
    // The same edit of a Python file in the same daemon is checked.
    env.server.push(vec![
        anthropic::tool("read", json!({"path": "m.py"})),
        edit("x: int = 1", "x: int = \"s\""),
        anthropic::text("Broken."),
    ]);
    broken(&mut env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_language_servers_off_a_python_edit_gets_nothing_added() {
    let Some(pyright) = pyright_or_skip() else {
        return;
    };
    let config =
        pyright_config(&pyright, 15000, 600).replace("[lsp]\n", "[lsp]\nenabled = false\n");
    let mut env = TestEnv::builder()
        .config(&config)
        .file("pyproject.toml", "")
        .file("m.py", CLEAN)
        .model(vec![
            anthropic::tool("read", json!({"path": "m.py"})),
            edit("x: int = 1", "x: int = \"s\""),
            anthropic::text("Broken."),
        ])
        .start()
        .await;
    let events = env.run("break m.py").await;
    assert!(matches!(finished(&events), Event::RunFinished { .. }));
    let result = &tool_results(&events)[1].2;
    assert!(result.starts_with("Edited m.py"), "{result}");
    assert!(!result.contains("diagnostics"), "{result}");
    assert!(children_named(env.daemon.pid(), "pyright").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_a_command_changed_is_seen_anew_by_the_server() {
    let Some(pyright) = pyright_or_skip() else {
        return;
    };
    let mut env = TestEnv::builder()
        .config(&pyright_config(&pyright, 15000, 600))
        .file("pyproject.toml", "")
        .file("lib.py", "VALUE = 1\n")
        .file("m.py", "from lib import VALUE\n\nprint(VALUE)\n")
        .model(vec![
            anthropic::tool("read", json!({"path": "m.py"})),
            // The server learns VALUE's type: a number.
            edit("print(VALUE)", "z: str = VALUE"),
            // lib.py, which no tool opened, changes behind the server's back.
            anthropic::tool(
                "bash",
                json!({"command": "printf 'VALUE = \"s\"\\n' > lib.py"}),
            ),
            edit("z: str = VALUE", "y: int = VALUE"),
            anthropic::text("Done."),
        ])
        .start()
        .await;
    if !env.daemon.sandbox_or_skip() {
        return;
    }
    let events = env.run("use the value as a number").await;
    let results = tool_results(&events);
    assert!(
        results[1]
            .2
            .contains("Type \"Literal[1]\" is not assignable"),
        "{}",
        results[1].2
    );
    assert!(!results[2].1, "the command failed: {}", results[2].2);
    let edited = &results[3].2;
    assert!(
        edited.contains(
            "diagnostics (pyright): 1 new error\n  m.py:3:10 error: Type \"Literal['s']\" is not assignable to declared type \"int\""
        ),
        "{edited}{}",
        server_log(&env.daemon.home)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_view_shows_the_diagnostics_under_the_diff() {
    let Some(pyright) = pyright_or_skip() else {
        return;
    };
    let project = tempfile::tempdir().expect("a project");
    std::fs::write(project.path().join("pyproject.toml"), "").expect("pyproject.toml");
    std::fs::write(project.path().join("m.py"), CLEAN).expect("m.py");
    let server = tests::model_server::ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "m.py"})),
        edit("x: int = 1", "x: int = \"s\""),
        anthropic::tool("write", json!({"path": "n.py", "content": "y: str = 1\n"})),
        anthropic::text("Done."),
    ])
    .await;
    let daemon = tests::Daemon::start_in(tests::Home::with_config(&pyright_config(
        &pyright, 15000, 600,
    )));
    if !daemon.sandbox_or_skip() {
        return;
    }
    let pty = tests::pty::Pty::agentctl(
        &daemon.home,
        &server,
        project.path(),
        &["--color", "always", "run", "--yes", "break it"],
        (40, 80),
    );
    pty.expect("Done.");
    assert_eq!(pty.wait(), Some(0));
    let lines = pty.transcript(40, 80);
    let shown = lines.join("\n");
    // Under the diff's last line, apart from it, the server's error; under a new file's lines,
    // its errors.
    assert!(
        shown.contains(&format!(
            "  +x: int = \"s\"\n   print(add(x, 2))\n  diagnostics (pyright): 1 new error\n    {TYPE_ERROR}\n"
        )),
        "{shown}"
    );
    assert!(
        shown.contains("  +y: str = 1\n  diagnostics (pyright): 1 error (all errors in the file)\n    n.py:1:10 error: Type \"Literal[1]\" is not assignable to declared type \"str\" [reportAssignmentType]\nDone."),
        "{shown}"
    );
    // The header in yellow, the error in red.
    let raw = String::from_utf8_lossy(&pty.raw()).into_owned();
    assert!(
        raw.contains("\x1b[33mdiagnostics (pyright): 1 new error\x1b[0m"),
        "{raw:?}"
    );
    assert!(
        raw.contains(&format!("\x1b[31m{TYPE_ERROR}\x1b[0m")),
        "{raw:?}"
    );
}
