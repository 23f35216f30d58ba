//! An MCP server for the tests, on rmcp's server side: over stdio (the default) or Streamable
//! HTTP (`--http`, which prints `listening URL` and serves until killed).
//!
//! Tools: `echo` (read-only), `fail` (an `isError` result), `structured`, `image`, `hang` (until
//! cancelled), `stubborn` (never answers), `exit` (the process exits mid-call), `add_tool` (adds `late` and sends
//! `tools/list_changed`), `env` (one variable of its environment), `pid`, `spawn_child` (a `sleep` in its group), `spawn_detached` (one in a group of its own). The list comes in
//! pages of three, so listing must follow `nextCursor`.
//!
//! When `MCP_TEST_EVENTS` names a Unix socket, the server reports what happens to it, one line
//! per connection: `started PID`, `call NAME`, `cancelled NAME`.
//! `--exit-at-start` writes to stderr and exits before the handshake. `--hostile` floods its
//! stderr, pages its tool list for ever (odd names, huge descriptions), and answers `flood`
//! with 5 MB of text.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// Tools on one page of `tools/list`.
const PAGE: usize = 3;

fn report(line: &str) {
    if let Some(path) = std::env::var_os("MCP_TEST_EVENTS")
        && let Ok(mut stream) = std::os::unix::net::UnixStream::connect(path)
    {
        use std::io::Write;
        let _ = writeln!(stream, "{line}");
    }
}

/// One page of `tools/list`, with the cursor of the next.
fn page(tools: Vec<Tool>, next: Option<usize>) -> ListToolsResult {
    ListToolsResult {
        tools,
        next_cursor: next.map(|n| n.to_string()),
        ..ListToolsResult::default()
    }
}

#[derive(Clone, Default)]
struct TestServer {
    late: Arc<AtomicBool>,
    hostile: bool,
}

fn schema(value: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

fn text_arg(props: &str) -> Value {
    json!({"type": "object", "properties": {props: {"type": "string"}}, "required": [props]})
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let empty = json!({"type": "object", "properties": {}});
        let mut tools = vec![
            Tool::new("echo", "Echoes its text back", schema(text_arg("text")))
                .annotate(ToolAnnotations::new().read_only(true)),
            Tool::new("fail", "Always fails", schema(text_arg("text"))),
            Tool::new(
                "structured",
                "Adds two numbers, as structured content",
                schema(
                    json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
                ),
            ),
            Tool::new("image", "Returns a small image", schema(empty.clone())),
            Tool::new(
                "hang",
                "Never answers until cancelled",
                schema(empty.clone()),
            ),
            Tool::new(
                "stubborn",
                "Never answers, even when cancelled",
                schema(empty.clone()),
            ),
            Tool::new("exit", "Exits the server mid-call", schema(empty.clone())),
            Tool::new("add_tool", "Adds the tool `late`", schema(empty.clone())),
            Tool::new(
                "env",
                "Shows one environment variable",
                schema(text_arg("name")),
            ),
            Tool::new("pid", "The server's process id", schema(empty.clone())),
            Tool::new(
                "spawn_child",
                "Starts `sleep 600` in the server's process group",
                schema(empty.clone()),
            ),
            Tool::new(
                "spawn_detached",
                "Starts `sleep 600` in a process group of its own",
                schema(empty.clone()),
            ),
        ];
        if self.late.load(Ordering::SeqCst) {
            tools.push(Tool::new("late", "Added at run time", schema(empty)));
        }
        tools
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("agentd-test-server", "1.0.0"))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        if self.hostile {
            let name = |i: usize| {
                if start + i == 0 {
                    "flood".to_string()
                } else {
                    format!("weird name ünï/{} {}", (start + i) % 7, "x".repeat(100))
                }
            };
            let tools = (0..10)
                .map(|i| {
                    Tool::new(
                        name(i),
                        "d".repeat(50_000),
                        schema(json!({"type": "object"})),
                    )
                })
                .collect();
            return Ok(page(tools, Some(start + 10)));
        }
        let tools = self.tools();
        let next = (start + PAGE < tools.len()).then_some(start + PAGE);
        Ok(page(
            tools.into_iter().skip(start).take(PAGE).collect(),
            next,
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        report(&format!("call {name}"));
        let args = request.arguments.unwrap_or_default();
        let text = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let result = match name.as_str() {
            "echo" => {
                CallToolResult::success(vec![ContentBlock::text(format!("echo: {}", text("text")))])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text(format!(
                "failed: {}",
                text("text")
            ))]),
            "structured" => {
                let a = args.get("a").and_then(Value::as_f64).unwrap_or(0.0);
                let b = args.get("b").and_then(Value::as_f64).unwrap_or(0.0);
                CallToolResult::structured(json!({"sum": a + b}))
            }
            "image" => CallToolResult::success(vec![
                ContentBlock::text("a picture"),
                ContentBlock::image("aGVsbG8gd29ybGQ=", "image/png"),
            ]),
            "hang" => {
                context.ct.cancelled().await;
                report("cancelled hang");
                CallToolResult::success(vec![ContentBlock::text("cancelled")])
            }
            "stubborn" => std::future::pending().await,
            "exit" => std::process::exit(3),
            "add_tool" => {
                self.late.store(true, Ordering::SeqCst);
                context
                    .peer
                    .notify_tool_list_changed()
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                CallToolResult::success(vec![ContentBlock::text("added `late`")])
            }
            "flood" => CallToolResult::success(vec![ContentBlock::text("y".repeat(5_000_000))]),
            "late" => CallToolResult::success(vec![ContentBlock::text("late tool ran")]),
            "env" => {
                let value = std::env::var(text("name")).unwrap_or_else(|_| "(unset)".to_string());
                CallToolResult::success(vec![ContentBlock::text(value)])
            }
            "pid" => {
                CallToolResult::success(vec![ContentBlock::text(std::process::id().to_string())])
            }
            "spawn_child" | "spawn_detached" => {
                let mut command = std::process::Command::new("sleep");
                if name == "spawn_detached" {
                    // A group of its own, as `setsid` would leave it.
                    std::os::unix::process::CommandExt::process_group(&mut command, 0);
                }
                let child = command
                    .arg("600")
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                CallToolResult::success(vec![ContentBlock::text(child.id().to_string())])
            }
            other => {
                return Err(ErrorData::invalid_params(format!("no tool {other}"), None));
            }
        };
        Ok(result.into())
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--exit-at-start") {
        eprintln!("test server: cannot open its database (on purpose)");
        std::process::exit(2);
    }
    report(&format!("started {}", std::process::id()));
    let hostile = args.iter().any(|a| a == "--hostile");
    if hostile {
        use std::io::Write;
        let _ = std::io::stderr().write_all(&vec![b'!'; 1_000_000]);
    }
    if args.iter().any(|a| a == "--http") {
        serve_http().await;
        return;
    }
    let server = TestServer {
        hostile,
        ..TestServer::default()
    };
    match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(err) => eprintln!("test server: {err}"),
    }
}

async fn serve_http() {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let service = StreamableHttpService::new(
        || Ok(TestServer::default()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_sse_keep_alive(None),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    println!("listening http://{address}/mcp");
    let service = hyper_util::service::TowerToHyperService::new(service);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        // Small responses go out at once (no Nagle wait for the client's delayed ACK).
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        tokio::spawn(async move {
            let _ =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
        });
    }
}
