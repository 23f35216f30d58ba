//! A language server is the project's code, so what it sends is hostile: a message that claims
//! a hundred terabytes, a flood of diagnostics for files elsewhere, a repository with a server
//! root in every directory. The daemon stays up and small, and answers; a server the
//! configuration turns off is stopped. The server here is a small LSP server in Python with
//! one misbehaviour per mode.

use serde_json::{Value, json};
use tests::language_servers::{LSP_STDIO_PY, exited};
use tests::model_server::anthropic;
use tests::{TestEnv, rss, tool_results};

/// The server (after [`LSP_STDIO_PY`]): `evil.py MODE`. `hugelen` answers `initialize` with a message claiming 10^14
/// bytes; `noread` answers `initialize` and then never reads again; `flood` first publishes 1000 diagnostics for each of 300 files outside the project,
/// then one for the opened file; `fine` publishes one diagnostic per opened or changed file.
const EVIL: &str = r#"
import json, sys

mode = sys.argv[1]

def publish(uri, version, items):
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
          "params": {"uri": uri, "version": version, "diagnostics": items}})

def item(message):
    return {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
            "severity": 1, "source": "evil", "message": message}

while True:
    message = read()
    method = message.get("method")
    if method == "initialize":
        if mode == "noread":
            send({"jsonrpc": "2.0", "id": message["id"],
                  "result": {"capabilities": {"textDocumentSync": 1}}})
            import time
            # Long enough for the test; it goes by itself when a killed daemon could not stop it.
            time.sleep(30)
            sys.exit(0)
        elif mode == "hugelen":
            sys.stdout.buffer.write(b"Content-Length: 100000000000000\r\n\r\n{")
            sys.stdout.buffer.flush()
        else:
            send({"jsonrpc": "2.0", "id": message["id"],
                  "result": {"capabilities": {"textDocumentSync": 1}}})
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        document = message["params"]["textDocument"]
        if mode == "flood":
            many = [item("x" * 200 + str(i)) for i in range(1000)]
            for n in range(300):
                publish("file:///elsewhere/f%d.py" % n, None, many)
        publish(document["uri"], document.get("version"), [item("evil: seen")])
    elif method == "exit":
        sys.exit(0)
    elif "id" in message:
        send({"jsonrpc": "2.0", "id": message["id"], "result": None})
"#;

/// The server's program.
fn evil() -> String {
    format!("{LSP_STDIO_PY}{EVIL}")
}

/// The configuration of the `evil` server in `mode`, for `.evil` files, rooted at `evil.py`.
fn config(mode: &str) -> String {
    format!(
        "retry_base_ms = 5\nretry_max_ms = 20\n\n[lsp]\nwait_ms = 15000\n\n[lsp.evil]\ncommand = [\"python3\", \"evil.py\", \"{mode}\"]\nlanguages = [\"evil\"]\nroot_markers = [\"evil.py\"]\n"
    )
}

/// A `write` of `path` holding one line.
fn write(path: &str) -> tests::model_server::Scripted {
    anthropic::tool("write", json!({"path": path, "content": "hello\n"}))
}

/// A project with the server in `mode` and a model that writes `x.evil`; `None` (the test
/// skips) without a sandbox.
async fn writing_x(mode: &str) -> Option<TestEnv> {
    let env = TestEnv::builder()
        .config(&config(mode))
        .file("evil.py", &evil())
        .model(vec![write("x.evil"), anthropic::text("Done.")])
        .start()
        .await;
    env.daemon.sandbox_or_skip().then_some(env)
}

/// Starts `builder` with a model that makes the calls of `reply` in one turn and runs them;
/// `None` (the test skips) without a sandbox.
async fn reads(builder: tests::TestEnvBuilder, reply: anthropic::Reply) -> Option<TestEnv> {
    let mut env = builder
        .model(vec![reply.build(), anthropic::text("Read.")])
        .start()
        .await;
    if !env.daemon.sandbox_or_skip() {
        return None;
    }
    env.run("read them").await;
    Some(env)
}

/// `agentctl lsp list --json`.
fn listed(env: &TestEnv) -> Vec<Value> {
    let out = env.daemon.home.run_agentctl(&["lsp", "list", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let rows: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    rows.as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_claiming_a_hundred_terabytes_ends_the_server_not_the_daemon() {
    let Some(mut env) = writing_x("hugelen").await else {
        return;
    };
    let events = env.run("write it").await;
    let results = tool_results(&events);
    assert!(results[0].2.starts_with("Created x.evil"), "{results:?}");
    assert!(!results[0].2.contains("diagnostics"), "{results:?}");
    let status = env.daemon.home.run_agentctl(&["daemon", "status"]);
    assert!(status.status.success(), "{status:?}");
    let log = std::fs::read_to_string(env.daemon.home.paths().log_file()).unwrap_or_default();
    assert!(
        log.contains(
            "language server output refused: the server sent a message of 100000000000000 bytes"
        ),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_diagnostics_for_files_elsewhere_is_not_kept() {
    let Some(mut env) = writing_x("flood").await else {
        return;
    };
    let before = rss(env.daemon.pid());
    let events = env.run("write it").await;
    let results = tool_results(&events);
    // The file's own diagnostic came after the flood: the flood was read by then.
    assert!(results[0].2.contains("evil: seen"), "{results:?}");
    let grown = rss(env.daemon.pid()).saturating_sub(before);
    // 300 000 diagnostics of 200 characters: about 100 MB when kept.
    assert!(grown < 40 << 20, "the daemon grew by {} MiB", grown >> 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_in_every_directory_starts_at_most_eight_servers() {
    let mut builder = TestEnv::builder().config(&config("fine"));
    let mut reply = anthropic::reply();
    for n in 0..12 {
        builder = builder
            .file(&format!("p{n}/evil.py"), &evil())
            .file(&format!("p{n}/a.evil"), "a\n");
        reply = reply.tool("read", json!({"path": format!("p{n}/a.evil")}));
    }
    let Some(env) = reads(builder, reply).await else {
        return;
    };
    // The starts go on in the background: wait until none is still starting.
    let deadline = std::time::Instant::now() + tests::WAIT;
    let rows = loop {
        let rows = listed(&env);
        if rows.iter().all(|r| r["state"] != "starting") || std::time::Instant::now() > deadline {
            break rows;
        }
        tokio::task::yield_now().await;
    };
    assert!(!rows.is_empty());
    assert!(rows.len() <= 8, "{} servers: {rows:?}", rows.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_the_configuration_turns_off_is_stopped() {
    let Some(mut env) = writing_x("fine").await else {
        return;
    };
    let events = env.run("write it").await;
    assert!(tool_results(&events)[0].2.contains("evil: seen"));
    let rows = listed(&env);
    let pid = rows[0]["pid"].as_u64().expect("a pid") as u32;
    let off = config("fine").replace("[lsp.evil]\n", "[lsp.evil]\nenabled = false\n");
    std::fs::write(env.daemon.home.paths().config_file(), off).expect("the configuration");
    assert!(exited(pid).await, "the turned-off server {pid} still runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_reading_is_stopped_before_its_backlog_grows() {
    // Twelve files of 3 MB read at once: 36 MB sent to a server that takes none of it.
    let content = "y\n".repeat(1_500_000);
    let mut builder = TestEnv::builder()
        .config(&config("noread"))
        .file("evil.py", &evil());
    let mut reply = anthropic::reply();
    for n in 0..12 {
        builder = builder.file(&format!("f{n}.evil"), &content);
        reply = reply.tool("read", json!({"path": format!("f{n}.evil"), "limit": 1}));
    }
    let Some(env) = reads(builder, reply).await else {
        return;
    };
    // The files are opened on the server in the background, after the reads.
    let deadline = std::time::Instant::now() + tests::WAIT;
    let wanted = "language server is not reading its input (32 MiB waiting); stopping it";
    let log = loop {
        let log = std::fs::read_to_string(env.daemon.home.paths().log_file()).unwrap_or_default();
        if log.contains(wanted) || std::time::Instant::now() > deadline {
            break log;
        }
        tokio::task::yield_now().await;
    };
    assert!(log.contains(wanted), "{log}");
}
