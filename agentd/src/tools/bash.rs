//! `bash`: run a command with `bash -c` in the session directory, in its own process group, with
//! a timeout and capped output. Cancel, timeout and the command's end all kill the whole group.

use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;
use tokio::io::AsyncReadExt;

use super::output::Capped;
use super::{MAX_OUTPUT_BYTES, ToolContext, ToolOutput};
use crate::tool_spec::ToolSpec;

/// The longest timeout a call may ask for.
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// How long output may keep arriving after the group was killed (from a process that left it).
const DRAIN_GRACE: Duration = Duration::from_secs(1);

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
                      \"sandbox\": false, and the user is asked first."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line."},
                "timeout_ms": {"type": "integer", "minimum": 1, "description": "Timeout in milliseconds (default 120000, max 600000)."},
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
}

enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut(Duration),
    Cancelled,
}

/// Runs the command.
pub(crate) async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let timeout = args
        .timeout_ms
        .map_or(ctx.bash_timeout, Duration::from_millis)
        .min(MAX_TIMEOUT);
    // The `.git` entries of a sandboxed call's directories are found just before it runs.
    let confined = match &ctx.sandbox {
        Some(sandbox) => {
            let sandbox = sandbox.clone();
            match tokio::task::spawn_blocking(move || sandbox.prepare()).await {
                Ok(Ok(prepared)) => Some(prepared),
                Ok(Err(why)) => {
                    return ToolOutput::error(format!("the command was not run: {why}"));
                }
                Err(_) => {
                    return ToolOutput::error(
                        "the command was not run: the sandbox could not be prepared",
                    );
                }
            }
        }
        None => None,
    };
    let (policy, guard) = confined.unzip();
    let ran = run_command(&args.command, &ctx, policy.as_ref(), timeout).await;
    // Whatever protected name the command created is looked at once all its processes are gone.
    let notes = match guard {
        Some(guard) => tokio::task::spawn_blocking(move || guard.after())
            .await
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let mut result = match ran {
        Ok((ending, output)) => {
            let mut result = report(ending, output);
            if let Some(policy) = policy.as_ref().filter(|_| result.is_error) {
                let notes = [
                    ctx.hidden.note(&args.command, &result.output),
                    policy.limits.note(&result.output),
                    crate::sandbox::blocked(&result.output)
                        .then(|| crate::sandbox::BLOCKED_NOTE.to_string()),
                ];
                for note in notes.into_iter().flatten() {
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
    let (reader, writer) = std::io::pipe()?;
    // Recorded before it starts: a daemon killed right after the start still leaves a trace.
    let pending = ctx.processes.prepare(command);
    let mut child = {
        let mut cmd = match (sandbox, crate::sandbox::helper()) {
            // Confined by the daemon's own binary, which then becomes bash.
            (Some(policy), Some(helper)) => {
                let mut cmd = tokio::process::Command::new(helper);
                cmd.args(policy.helper_args()).arg("bash");
                cmd
            }
            (Some(_), None) => {
                return Err(std::io::Error::other(
                    "the sandbox is not set up; the command was not run",
                ));
            }
            (None, _) => tokio::process::Command::new("bash"),
        };
        cmd.arg("-c")
            .arg(command)
            .current_dir(&ctx.cwd)
            .stdin(Stdio::null())
            .stdout(writer.try_clone()?)
            .stderr(writer)
            .env_clear()
            .env("PAGER", "cat")
            .env("GIT_PAGER", "cat")
            .envs(ctx.env.iter().map(|(k, v)| (k, v)))
            .env(pending.env().0, pending.env().1)
            .process_group(0)
            .kill_on_drop(true);
        if sandbox.is_some() {
            cmd.env("TMPDIR", crate::sandbox::policy::TMP_MOUNT);
        }
        // The command (and its copies of the pipe's write end) is dropped here, so the reader
        // sees the end of output once the group is gone.
        cmd.spawn()?
    };
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    let group = ProcessGroup {
        pgid,
        // A sandboxed command's processes all end with its PID namespace: no scan is needed.
        marker: sandbox.is_none().then(|| pending.marker().to_string()),
        killed: std::cell::Cell::new(false),
    };
    // Dropped after the group is killed (in reverse order of declaration).
    let _recorded = pgid.map(|pgid| pending.started(pgid));
    let mut receiver = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    let progress = ctx.progress.clone();
    let mut collect = tokio::spawn(async move {
        let mut output = Capped::new(MAX_OUTPUT_BYTES);
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = receiver.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let piece = buf.get(..n).unwrap_or_default();
            output.push(piece);
            if let Some(progress) = &progress {
                progress.push(piece);
            }
        }
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
    let output = match tokio::time::timeout(DRAIN_GRACE, &mut collect).await {
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
        Ending::Exited(status) => match (status.code(), signal_of(&status)) {
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

fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(status)
}

/// A process group, killed with SIGKILL when the call ends for any reason.
struct ProcessGroup {
    pgid: Option<i32>,
    /// What the command's processes carry, also the ones that left the group (`setsid`); none
    /// for a sandboxed command, whose PID namespace ends them all.
    marker: Option<String>,
    killed: std::cell::Cell<bool>,
}

impl ProcessGroup {
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // SAFETY: killpg has no memory-safety preconditions; a group that is gone is ESRCH.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
        if !self.killed.replace(true)
            && let Some(marker) = &self.marker
        {
            super::processes::kill_marked(marker);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if !self.killed.get() {
            self.kill();
        }
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
