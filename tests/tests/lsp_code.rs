//! The `code` tool against a real pyright (tests/scripts/install-lsp.sh installs it; without it
//! these tests skip): definition, references, hover and symbols of a function reach the model
//! as `path:line:col` lines and text; the tool is offered only where a server covers the files;
//! `agentctl lsp list` and `daemon status` show the server.

use serde_json::{Value, json};
use tests::language_servers::{pyright_config, pyright_or_skip};
use tests::model_server::anthropic;
use tests::{TestEnv, tool_results};

/// The function, with a docstring.
const UTIL: &str =
    "def add(a: int, b: int) -> int:\n    \"\"\"Adds two numbers.\"\"\"\n    return a + b\n";
/// Its uses: imported on line 1, called on lines 4 and 5.
const MAIN: &str = "from util import add\n\n\ntotal = add(1, 2)\nprint(add(total, 3))\n";

/// A `code` call.
fn code(args: Value) -> tests::model_server::Scripted {
    anthropic::tool("code", args)
}

/// The text of the tool result the model received in request `index`.
fn received_result(env: &TestEnv, index: usize) -> String {
    let body = &env.server.received()[index].body;
    let messages = body["messages"].as_array().expect("messages");
    let content = &messages.last().expect("a last message")["content"][0]["content"];
    match content {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The names of the tools offered in request `index`.
fn offered(env: &TestEnv, index: usize) -> Vec<String> {
    env.server.received()[index].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn definition_references_and_hover_of_a_function_reach_the_model() {
    let Some(pyright) = pyright_or_skip() else {
        return;
    };
    let mut env = TestEnv::builder()
        .config(&pyright_config(&pyright, 15000, 600))
        .file("pyproject.toml", "")
        .file("util.py", UTIL)
        .file("main.py", MAIN)
        .model(vec![
            code(json!({"operation": "definition", "path": "main.py", "line": 4, "symbol": "add"})),
            code(json!({"operation": "references", "path": "util.py", "line": 1, "symbol": "add"})),
            code(json!({"operation": "hover", "path": "main.py", "line": 5, "symbol": "add"})),
            code(json!({"operation": "definition", "path": "main.py", "line": 2, "symbol": "add"})),
            code(json!({"operation": "definition", "path": "pyproject.toml", "line": 1, "symbol": "x"})),
            code(json!({"operation": "document_symbols", "path": "main.py"})),
            code(json!({"operation": "workspace_symbols", "query": "add"})),
            anthropic::text("Found it."),
        ])
        .start()
        .await;
    let events = env.run("where is add?").await;
    assert!(
        offered(&env, 0).contains(&"code".to_string()),
        "{:?}",
        offered(&env, 0)
    );
    let results = tool_results(&events);
    let definition = received_result(&env, 1);
    assert_eq!(
        definition, "util.py:1:5  def add(a: int, b: int) -> int:",
        "{results:?}"
    );
    let references = received_result(&env, 2);
    for expected in [
        "util.py:1:5  def add(a: int, b: int) -> int:",
        "main.py:1:18  from util import add",
        "main.py:4:9  total = add(1, 2)",
        "main.py:5:7  print(add(total, 3))",
    ] {
        assert!(
            references.contains(expected),
            "{expected} not in:\n{references}"
        );
    }
    assert!(references.starts_with("4 references\n"), "{references}");
    let hover = received_result(&env, 3);
    // pyright puts one parameter on a line.
    let signature: String = hover.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        signature.starts_with("(function) def add( a: int, b: int ) -> int Adds two numbers."),
        "{hover}"
    );
    assert!(!hover.contains("```"), "{hover}");
    // A name not on the line: the model is told what the line reads and where the name is.
    let (_, missed_is_error, missed) = &results[3];
    assert!(*missed_is_error);
    assert!(
        missed.contains(
            "`add` is not on line 2 of main.py: that line reads ``; it is on line 1, 4, 5 nearby"
        ),
        "{missed}"
    );
    let (_, other_is_error, other) = &results[4];
    assert!(*other_is_error);
    assert!(
        other.contains("no language server covers pyproject.toml; use grep"),
        "{other}"
    );
    let symbols = received_result(&env, 6);
    assert!(symbols.contains("variable total  main.py:4"), "{symbols}");
    let found = received_result(&env, 7);
    assert!(found.contains("function add  util.py:1"), "{found}");

    // The listing shows the server, its process, root and the session using it.
    let listed = env.daemon.home.run_agentctl(&["lsp", "list", "--json"]);
    assert!(listed.status.success(), "{listed:?}");
    let rows: Value = serde_json::from_slice(&listed.stdout).expect("JSON");
    let rows = rows.as_array().expect("an array");
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row["name"], "pyright");
    assert_eq!(row["state"], "ready");
    let project = env.project().canonicalize().expect("the project");
    assert_eq!(
        std::path::Path::new(row["root"].as_str().expect("a root")),
        project
    );
    let pid = row["pid"].as_u64().expect("a pid") as u32;
    assert_eq!(
        tests::language_servers::children_named(env.daemon.pid(), "pyright"),
        vec![pid]
    );
    assert_eq!(row["sessions"], json!([env.session.as_str()]));
    let table = env.daemon.home.run_agentctl(&["lsp", "list"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("pyright") && table.contains(&pid.to_string()),
        "{table}"
    );
    let status = env.daemon.home.run_agentctl(&["daemon", "status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("lsp       1 running"), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_without_files_a_server_covers_is_not_offered_the_tool() {
    let Some(pyright) = pyright_or_skip() else {
        return;
    };
    let mut env = TestEnv::builder()
        .config(&pyright_config(&pyright, 15000, 600))
        .file("notes.txt", "nothing to see\n")
        .model(vec![anthropic::text("Nothing here.")])
        .start()
        .await;
    env.run("look around").await;
    let tools = offered(&env, 0);
    assert!(tools.contains(&"grep".to_string()), "{tools:?}");
    assert!(!tools.contains(&"code".to_string()), "{tools:?}");
    let listed = env.daemon.home.run_agentctl(&["lsp", "list", "--json"]);
    assert_eq!(String::from_utf8_lossy(&listed.stdout).trim(), "[]");
    let status = env.daemon.home.run_agentctl(&["daemon", "status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("lsp       0 running"), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_to_the_daemons_own_process_files_shows_nothing_of_them() {
    let Some(pyright) = pyright_or_skip() else {
        return;
    };
    let mut env = TestEnv::builder()
        .config(&pyright_config(&pyright, 15000, 600))
        .daemon_env("CANARY_API_KEY", "sk-canary-4321")
        .file("pyproject.toml", "")
        .file("m.py", "import e\nprint(e)\n")
        .model(vec![
            code(json!({"operation": "hover", "path": "e.py", "line": 1, "symbol": "zzz"})),
            code(json!({"operation": "definition", "path": "m.py", "line": 1, "symbol": "e"})),
            anthropic::tool("read", json!({"path": "s.txt"})),
            anthropic::tool("grep", json!({"pattern": "canary", "path": "/proc/self"})),
            anthropic::text("Nothing."),
        ])
        .start()
        .await;
    // A repository's links into /proc: in the daemon, `self` is the daemon.
    std::os::unix::fs::symlink("/proc/self/environ", env.project().join("e.py")).expect("a link");
    std::os::unix::fs::symlink("/proc/self/status", env.project().join("s.txt")).expect("a link");
    let events = env.run("look").await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 4, "{results:?}");
    for (name, _, output) in &results {
        assert!(!output.contains("sk-canary"), "{name}: {output}");
        assert!(!output.contains("VmRSS"), "{name}: {output}");
    }
    assert!(results[0].1, "{:?}", results[0]);
    assert!(
        results[0].2.contains("kernel interface file"),
        "{:?}",
        results[0]
    );
    assert!(
        results[2].2.contains("kernel interface file"),
        "{:?}",
        results[2]
    );
    for request in env.server.received() {
        assert!(!request.body.to_string().contains("sk-canary"));
    }
}
