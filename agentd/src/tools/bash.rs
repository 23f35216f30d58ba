//! `bash`: run a command with `bash -c` in the session directory, in its own process group, with
//! a timeout and capped output. Cancel, timeout and the command's end all kill the whole group.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;

use super::command;
use super::output::Capped;
use super::{MAX_OUTPUT_BYTES, ToolContext, ToolOutput};
use crate::tool_spec::ToolSpec;

/// The longest timeout a call may ask for.
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// The model's description of `bash`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "bash".into(),
        description: "Run a shell command with `bash -c` in the working directory. stdout and \
                      stderr are merged; long output keeps its start and end. Default timeout \
                      120000 ms, at most 600000. Background processes are stopped when the \
                      command ends. Prefer read, grep and glob for looking at files. In auto mode \
                      commands run in a sandbox that blocks writes outside the working directory \
                      and /tmp (private to each command and emptied after it), and the network, \
                      and bounds processes, memory and /tmp: for a command that needs more, set \
                      \"sandbox\": false, and the user is asked first. For a command that keeps \
                      running (a dev server, a watcher, a long build) set \"background\": true: \
                      it starts as a background shell and the call returns at once with its id; \
                      read what it prints with bash_output and end it with kill_shell. A \
                      background shell has no timeout unless timeout_ms is given, outlives the \
                      run, and ends when the session is deleted or the daemon stops."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line."},
                "timeout_ms": {"type": "integer", "minimum": 1, "description": "Timeout in milliseconds (default 120000, max 600000; a background shell has none unless given)."},
                "background": {"type": "boolean", "description": "true to start the command as a background shell and return at once (dev servers, watchers, long builds)."},
                "sandbox": {"type": "boolean", "description": "false to run outside auto mode's sandbox (network, writes elsewhere); the user is asked."}
            },
            "required": ["command"]
        }),
    }
}

/// The arguments of `bash`.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {
    /// The command line.
    pub(crate) command: String,
    timeout_ms: Option<u64>,
    /// `false` asks to run outside the sandbox; the permission check has decided already.
    #[serde(default, rename = "sandbox")]
    _sandbox: Option<bool>,
    /// `true` starts the command as a background shell of the session.
    #[serde(default)]
    background: Option<bool>,
}

/// How a foreground command's call ended.
enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut(Duration),
    Cancelled,
}

/// Runs the command; with `"background": true` starts it as a background shell of the
/// session and returns at once.
pub(crate) async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    if args.background == Some(true) {
        let timeout = args.timeout_ms.map(Duration::from_millis);
        return super::shells::start(args.command, timeout, ctx).await;
    }
    let timeout = args
        .timeout_ms
        .map_or(ctx.bash_timeout, Duration::from_millis)
        .min(MAX_TIMEOUT);
    // The `.git` entries of a sandboxed call's directories are found just before it runs.
    let (policy, guard) = match command::confine(&ctx).await {
        Ok(confined) => confined.unzip(),
        Err(why) => return ToolOutput::error(why),
    };
    let started = std::time::SystemTime::now();
    let ran = run_command(&args.command, &ctx, policy.as_ref(), timeout).await;
    super::lsp_disk::commands_ran(started, &ctx).await;
    // Whatever protected name the command created is looked at once all its processes are gone.
    let notes = command::after(guard).await;
    let mut result = match ran {
        Ok((ending, output)) => {
            let mut result = report(ending, output);
            if let Some(policy) = policy.as_ref().filter(|_| result.is_error) {
                let notes = command::failure_notes(&ctx, policy, &args.command, &result.output);
                for note in notes {
                    result.output.push('\n');
                    result.output.push_str(&note);
                }
            }
            result
        }
        Err(err) => ToolOutput::error(format!("cannot run the command: {err}")),
    };
    for note in notes {
        result.output.push('\n');
        result.output.push_str(&note);
    }
    result
}

async fn run_command(
    command: &str,
    ctx: &ToolContext,
    sandbox: Option<&crate::sandbox::Policy>,
    timeout: Duration,
) -> std::io::Result<(Ending, String)> {
    // From here the command's effects are real: a cancel now kills it rather than skipping it.
    if !ctx.gate.commit() {
        return Ok((Ending::Cancelled, String::new()));
    }
    // Dropped in order: the leader, the group (killed), then its record.
    let command::Started {
        mut child,
        group,
        recorded: _recorded,
        output: receiver,
    } = command::start(command, ctx, sandbox)?;
    let progress = ctx.progress.clone();
    let mut collect = tokio::spawn(async move {
        let mut output = Capped::new(MAX_OUTPUT_BYTES);
        command::pump(receiver, |piece| {
            output.push(piece);
            if let Some(progress) = &progress {
                progress.push(piece);
            }
        })
        .await;
        output
    });

    let started = Instant::now();
    let ending = tokio::select! {
        status = child.wait() => Ending::Exited(status?),
        () = tokio::time::sleep(timeout) => Ending::TimedOut(timeout),
        () = ctx.cancel.cancelled() => Ending::Cancelled,
    };
    group.kill();
    if !matches!(ending, Ending::Exited(_)) {
        let _ = child.wait().await;
    }
    let output = match tokio::time::timeout(command::DRAIN_GRACE, &mut collect).await {
        Ok(Ok(output)) => output.finish(),
        _ => {
            collect.abort();
            "(output unavailable: a process that left the command's process group kept it open)"
                .to_string()
        }
    };
    tracing::debug!(
        command,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "bash finished"
    );
    Ok((ending, output))
}

fn report(ending: Ending, output: String) -> ToolOutput {
    let output = output.trim_end();
    let body = if output.is_empty() {
        "(no output)".to_string()
    } else {
        output.to_string()
    };
    match ending {
        Ending::Exited(status) => match (status.code(), command::signal_of(&status)) {
            (Some(0), _) => ToolOutput::ok(format!("{body}\n[exit code: 0]")),
            (Some(code), _) => ToolOutput::error(format!("{body}\n[exit code: {code}]")),
            (None, Some(signal)) => {
                ToolOutput::error(format!("{body}\n[killed by signal {signal}]"))
            }
            (None, None) => ToolOutput::error(format!("{body}\n[ended without an exit code]")),
        },
        Ending::TimedOut(after) => ToolOutput::error(format!(
            "{body}\n[timed out after {} ms; the command and its processes were killed]",
            after.as_millis()
        )),
        Ending::Cancelled => ToolOutput::error(format!(
            "{body}\n[interrupted: the run was cancelled and the command was killed]"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &std::path::Path) -> ToolContext {
        ToolContext::standalone(dir)
    }

    #[tokio::test]
    async fn output_and_exit_code_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let (ending, output) = run_command(
            "echo out; echo err >&2; exit 3",
            &ctx(dir.path()),
            None,
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        let result = report(ending, output);
        assert!(result.is_error);
        assert_eq!(result.output, "out\nerr\n[exit code: 3]");
    }

    #[tokio::test]
    async fn a_process_that_left_the_group_is_stopped_with_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let (_, output) = run_command(
            // Waits until the `sleep` has left the group, then ends.
            "setsid sleep 600 > /dev/null 2>&1 & p=$!; \
             until read -r -a f < /proc/$p/stat && [ \"${f[5]}\" = \"$p\" ]; do sleep 0.01; done; \
             echo $p",
            &ctx(dir.path()),
            None,
            Duration::from_secs(60),
        )
        .await
        .unwrap();
        let pid: i32 = output.trim().parse().unwrap();
        // A SIGKILL lands asynchronously: allow the kernel a moment to finish it.
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.get(..1));
            if state.is_none() || state == Some("Z") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the detached `sleep` ({pid}) still runs: {stat}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn background_processes_do_not_hold_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let (ending, output) = run_command(
            "sleep 30 & echo started",
            &ctx(dir.path()),
            None,
            Duration::from_secs(60),
        )
        .await
        .unwrap();
        assert!(matches!(ending, Ending::Exited(_)));
        assert_eq!(output, "started\n");
    }
}
