//! Tools the agent can call (docs/architecture.md#tools), the pool of executors that runs them, and
//! the batching of one reply's calls by concurrency safety.

pub(crate) mod bash;
pub(crate) mod bash_output;
pub(crate) mod batch;
pub(crate) mod code;
mod code_answer;
pub(crate) mod command;
pub(crate) mod config;
mod diagnostics;
pub(crate) mod edit;
mod edit_match;
pub(crate) mod fetch;
mod first_read;
pub(crate) mod gate;
pub(crate) mod glob;
pub(crate) mod grep;
pub(crate) mod kill_shell;
mod lsp_disk;
pub(crate) mod near_text;
pub(crate) mod output;
pub(crate) mod pool;
pub mod processes;
pub(crate) mod progress;
pub(crate) mod read;
mod read_image;
mod replace_file;
pub(crate) mod shells;
pub(crate) mod todo;
pub(crate) mod walk;
pub(crate) mod web_search;
pub(crate) mod write;

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use protocol::PermissionClass;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::tool_spec::ToolSpec;
use gate::EffectGate;
pub(crate) use output::cap;
pub(crate) use pool::{ToolOutput, ToolPool};
pub(crate) use replace_file::write_whole;

/// The most bytes a tool result may hold; longer output keeps its head and tail.
pub(crate) const MAX_OUTPUT_BYTES: usize = 30_000;
/// The most bytes of a `read` result: whole source files are worth more room.
pub(crate) const MAX_READ_BYTES: usize = 100_000;
/// Room beyond a tool's limit for the lines a tool adds around capped output (an exit code, a
/// heading); more than this means the tool did not cap its output, and it is capped here.
const OUTPUT_MARGIN: usize = 1024;

/// The built-in tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    /// Read a file.
    Read,
    /// Write a whole file.
    Write,
    /// Replace text in a file.
    Edit,
    /// Run a shell command.
    Bash,
    /// Search file contents.
    Grep,
    /// Find files by name.
    Glob,
    /// Get a web page as text.
    Fetch,
    /// Search the web (offered only when a search provider is configured).
    WebSearch,
    /// Replace the model's plan.
    Todo,
    /// Read what a background shell printed since the last look.
    BashOutput,
    /// End a background shell.
    KillShell,
    /// Ask the language server about code (offered only when a server covers the session's
    /// files).
    Code,
}

impl Tool {
    /// Every tool, in the order the model is told of them.
    pub(crate) const ALL: [Tool; 12] = [
        Tool::Read,
        Tool::Write,
        Tool::Edit,
        Tool::Bash,
        Tool::BashOutput,
        Tool::KillShell,
        Tool::Grep,
        Tool::Glob,
        Tool::Code,
        Tool::Fetch,
        Tool::WebSearch,
        Tool::Todo,
    ];

    /// The tool called `name`, if there is one.
    pub(crate) fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// The name the model calls it by.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tool::Read => "read",
            Tool::Write => "write",
            Tool::Edit => "edit",
            Tool::Bash => "bash",
            Tool::Grep => "grep",
            Tool::Glob => "glob",
            Tool::Fetch => "fetch",
            Tool::WebSearch => "web_search",
            Tool::Todo => "todo",
            Tool::BashOutput => "bash_output",
            Tool::KillShell => "kill_shell",
            Tool::Code => "code",
        }
    }

    /// Whether calls of this tool may run in parallel with each other.
    pub(crate) fn concurrency_safe(self) -> bool {
        matches!(
            self,
            Tool::Read
                | Tool::Grep
                | Tool::Glob
                | Tool::Code
                | Tool::Fetch
                | Tool::WebSearch
                | Tool::BashOutput
        )
    }

    /// What kind of effect the tool has.
    pub(crate) fn class(self) -> PermissionClass {
        match self {
            Tool::Read
            | Tool::Grep
            | Tool::Glob
            | Tool::Todo
            | Tool::BashOutput
            | Tool::KillShell
            | Tool::Code => PermissionClass::Read,
            Tool::Write | Tool::Edit => PermissionClass::Write,
            Tool::Bash => PermissionClass::Command,
            Tool::Fetch | Tool::WebSearch => PermissionClass::Network,
        }
    }

    /// The most bytes a result of this tool holds.
    pub(crate) fn output_limit(self) -> usize {
        match self {
            Tool::Read => MAX_READ_BYTES,
            _ => MAX_OUTPUT_BYTES,
        }
    }

    /// What the model is told of the tool.
    pub(crate) fn spec(self) -> ToolSpec {
        match self {
            Tool::Read => read::spec(),
            Tool::Write => write::spec(),
            Tool::Edit => edit::spec(),
            Tool::Bash => bash::spec(),
            Tool::Grep => grep::spec(),
            Tool::Glob => glob::spec(),
            Tool::Fetch => fetch::spec(),
            Tool::WebSearch => web_search::spec(),
            Tool::Todo => todo::spec(),
            Tool::BashOutput => bash_output::spec(),
            Tool::KillShell => kill_shell::spec(),
            Tool::Code => code::spec(),
        }
    }
}

/// The specs of every tool.
pub(crate) fn specs() -> Vec<ToolSpec> {
    Tool::ALL.into_iter().map(Tool::spec).collect()
}

/// The specs of `tools`; `compact` ones (first sentence, no argument descriptions) for a
/// small model.
pub(crate) fn specs_for(tools: &[Tool], compact: bool) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|tool| {
            let spec = tool.spec();
            if compact { spec.compact() } else { spec }
        })
        .collect()
}

/// The error result for a call of a tool that does not exist; `offered` are the tools the
/// model has (the built-in ones its profile offers, `task`, its MCP servers').
pub(crate) fn unknown_tool<'a>(
    name: &str,
    offered: impl IntoIterator<Item = &'a str>,
) -> ToolOutput {
    let names: Vec<&str> = offered.into_iter().collect();
    ToolOutput::error(format!(
        "unknown tool `{name}`; the available tools are: {}",
        names.join(", ")
    ))
}

/// What a tool call may use besides its arguments.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session directory; relative paths resolve against it.
    pub(crate) cwd: PathBuf,
    /// Fires when the run is cancelled.
    pub(crate) cancel: CancellationToken,
    /// The default `bash` timeout.
    pub(crate) bash_timeout: Duration,
    /// The files the session read, for the stale-file guard.
    pub(crate) files: Arc<crate::stale_files::FileTracker>,
    /// Where the call's effect and a cancel meet: tools commit before they change anything.
    pub(crate) gate: Arc<EffectGate>,
    /// Where running commands are recorded, for the next daemon after a crash.
    pub(crate) processes: processes::ProcessRecords,
    /// The environment commands run with (docs/architecture.md#tools).
    pub(crate) env: Arc<Vec<(String, String)>>,
    /// The sandbox `bash` runs in (auto mode), if any.
    pub(crate) sandbox: Option<Box<crate::sandbox::Sandbox>>,
    /// What no tool may read, search or list (agentd's own files, credential stores).
    pub(crate) hidden: Arc<crate::sandbox::hidden::HiddenPaths>,
    /// The file a `write` or `edit` was allowed to write, resolved when it was checked; it is
    /// written there and nowhere else (`None`: the path is resolved when written).
    pub(crate) target: Option<PathBuf>,
    /// Where `bash` hands its output as it comes, for the views.
    pub(crate) progress: Option<progress::Progress>,
    /// The session's background shells (docs/architecture.md#background-shells).
    pub(crate) shells: shells::Shells,
    /// What `fetch` and `web_search` use: the daemon's cache and clients, the call's rules
    /// for the hosts it meets, the run's search service.
    pub(crate) web: crate::web::WebCall,
    /// Where `read` stores an image it gives the model, or why the model takes none.
    pub(crate) images: crate::images::ImageAccess,
    /// The language servers that check the files `write` and `edit` change and answer `code`
    /// (none: no check).
    pub(crate) lsp: Option<crate::lsp::LspHub>,
}

impl ToolContext {
    /// A context for a call in `cwd` that nothing cancels, with the default `bash` timeout and a
    /// tracker that watches nothing (tests and benchmarks).
    pub fn standalone(cwd: &Path) -> ToolContext {
        ToolContext {
            cwd: cwd.to_path_buf(),
            cancel: CancellationToken::new(),
            bash_timeout: Duration::from_secs(120),
            files: Arc::new(crate::stale_files::FileTracker::new(|_| {})),
            gate: Arc::default(),
            processes: processes::ProcessRecords::default(),
            env: Arc::new(
                crate::shell_env::ShellEnv::default().for_commands(&crate::shell_env::current()),
            ),
            sandbox: None,
            hidden: Arc::default(),
            target: None,
            progress: None,
            shells: shells::Shells::detached(),
            web: crate::web::WebCall::standalone(),
            images: Err("no session here stores images".to_string()),
            lsp: None,
        }
    }
}

/// Runs one call of `tool` with `args` (a JSON object). Every tool caps its own output as it
/// goes (with `output::Capped`); a result still over the limit is capped here, so no result
/// is ever larger.
pub async fn execute(tool: Tool, args: Value, ctx: ToolContext) -> ToolOutput {
    if let Some(refused) = hidden_target(tool, &args, &ctx) {
        return refused;
    }
    let mut output = match tool {
        Tool::Read => with_args(tool, args, |a| read::run(a, ctx)).await,
        Tool::Write => with_args(tool, args, |a| write::run(a, ctx)).await,
        Tool::Edit => with_args(tool, args, |a| edit::run(a, ctx)).await,
        Tool::Bash => with_args(tool, args, |a| bash::run(a, ctx)).await,
        Tool::Grep => with_args(tool, args, |a| grep::run(a, ctx)).await,
        Tool::Glob => with_args(tool, args, |a| glob::run(a, ctx)).await,
        Tool::Fetch => with_args(tool, args, |a| fetch::run(a, ctx)).await,
        Tool::WebSearch => with_args(tool, args, |a| web_search::run(a, ctx)).await,
        Tool::Todo => with_args(tool, args, |a| todo::run(a, ctx)).await,
        Tool::BashOutput => with_args(tool, args, |a| bash_output::run(a, ctx)).await,
        Tool::KillShell => with_args(tool, args, |a| kill_shell::run(a, ctx)).await,
        Tool::Code => with_args(tool, args, |a| code::run(a, ctx)).await,
    };
    if output.output.len() > tool.output_limit() + OUTPUT_MARGIN {
        tracing::warn!(
            tool = tool.name(),
            bytes = output.output.len(),
            "tool output over its limit"
        );
        output.output = cap(&output.output, tool.output_limit());
    }
    output
}

/// Reads at most `max` bytes of the regular file `path` for the agent (`Ok((bytes, true))` when
/// it has more): refused when the file it leads to, as opened, is hidden.
pub(crate) fn read_visible(
    path: &Path,
    hidden: &crate::sandbox::hidden::HiddenPaths,
    max: usize,
) -> Result<(Vec<u8>, bool), String> {
    let file = crate::regular_file::open(path).map_err(|e| e.to_string())?;
    hidden.check_opened(&file, &path.display().to_string())?;
    crate::regular_file::read_file_at_most(file, max).map_err(|e| read::describe(&e))
}

/// The refusal of a call that would read, search or list what the agent may not see.
fn hidden_target(tool: Tool, args: &Value, ctx: &ToolContext) -> Option<ToolOutput> {
    if !matches!(
        tool,
        Tool::Read | Tool::Edit | Tool::Grep | Tool::Glob | Tool::Code
    ) || ctx.hidden.is_empty()
    {
        return None;
    }
    let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
    let why = ctx.hidden.refusal(&resolve(&ctx.cwd, path))?;
    Some(ToolOutput::error(format!("refused: {why}")))
}

async fn with_args<A: DeserializeOwned, F: Future<Output = ToolOutput>>(
    tool: Tool,
    args: Value,
    run: impl FnOnce(A) -> F,
) -> ToolOutput {
    match serde_json::from_value::<A>(args) {
        Ok(args) => run(args).await,
        Err(err) => ToolOutput::error(format!("invalid arguments for {}: {err}", tool.name())),
    }
}

/// Resolves `path` against the session directory, without touching the file system:
/// `.` and `..` are folded so that the result can be compared with other paths.
pub(crate) fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let expanded = match path.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map_or_else(|| PathBuf::from(path), |h| PathBuf::from(h).join(rest)),
        None => PathBuf::from(path),
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `path` as the user should see it: relative to the session directory when inside it.
pub(crate) fn display(cwd: &Path, path: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// "1 line", "3 lines".
pub(crate) fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_against_the_session_directory() {
        let cwd = Path::new("/work/app");
        assert_eq!(
            resolve(cwd, "src/main.rs"),
            Path::new("/work/app/src/main.rs")
        );
        assert_eq!(resolve(cwd, "./a/../b"), Path::new("/work/app/b"));
        assert_eq!(resolve(cwd, "/etc/hosts"), Path::new("/etc/hosts"));
        assert_eq!(display(cwd, Path::new("/work/app/src/x.rs")), "src/x.rs");
        assert_eq!(display(cwd, Path::new("/etc/hosts")), "/etc/hosts");
    }
}
