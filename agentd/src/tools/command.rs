//! Starting a command the way `bash` runs it, in the foreground or in the background
//! (docs/architecture.md#tools): `bash -c` in the session directory with the session's
//! environment, in its own process group, recorded for the next daemon after a crash, its
//! stdout and stderr merged on one pipe; in auto mode under the sandbox helper, with the
//! sandbox prepared before and looked at after. Both `bash` and background shells start their
//! commands here, so the two cannot drift apart.

use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::ToolContext;
use super::processes::Recorded;
use crate::sandbox::{Guard, Policy};

/// How long output may keep arriving after the group was killed (from a process that left it).
pub(crate) const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// A command that runs: its leader, its group, its record and its output.
pub(crate) struct Started {
    /// The group's leader (`bash`, or the sandbox helper that becomes it).
    pub(crate) child: tokio::process::Child,
    /// The group, killed when it is dropped.
    pub(crate) group: ProcessGroup,
    /// The record the next daemon would kill it by; removed when dropped, after the group.
    pub(crate) recorded: Option<Recorded>,
    /// The read end of its stdout and stderr.
    pub(crate) output: tokio::net::unix::pipe::Receiver,
}

/// Prepares the call's sandbox, if it runs in one: the whole policy and the guard to look
/// at what the command left once it is over. `Err` says why the command was not run.
pub(crate) async fn confine(ctx: &ToolContext) -> Result<Option<(Policy, Guard)>, String> {
    let Some(sandbox) = &ctx.sandbox else {
        return Ok(None);
    };
    let sandbox = sandbox.clone();
    match tokio::task::spawn_blocking(move || sandbox.prepare()).await {
        Ok(Ok(prepared)) => Ok(Some(prepared)),
        Ok(Err(why)) => Err(format!("the command was not run: {why}")),
        Err(_) => Err("the command was not run: the sandbox could not be prepared".to_string()),
    }
}

/// What the sandbox's guard found once a command's processes are all gone (notes for the
/// result); nothing without a sandbox.
pub(crate) async fn after(guard: Option<Guard>) -> Vec<String> {
    match guard {
        Some(guard) => tokio::task::spawn_blocking(move || guard.after())
            .await
            .unwrap_or_default(),
        None => Vec::new(),
    }
}

/// What a failed sandboxed command's output suggests it met: a hidden path, a limit, the
/// sandbox's walls.
pub(crate) fn failure_notes(
    ctx: &ToolContext,
    policy: &Policy,
    command: &str,
    output: &str,
) -> Vec<String> {
    [
        ctx.hidden.note(command, output),
        policy.limits.note(output),
        crate::sandbox::blocked(output).then(|| crate::sandbox::BLOCKED_NOTE.to_string()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Starts `command` (confined by `sandbox` when given) in its own process group, recorded
/// before it starts. The call must have committed to its effect already.
pub(crate) fn start(
    command: &str,
    ctx: &ToolContext,
    sandbox: Option<&Policy>,
) -> std::io::Result<Started> {
    let (reader, writer) = std::io::pipe()?;
    // Recorded before it starts: a daemon killed right after the start still leaves a trace.
    let pending = ctx.processes.prepare(command);
    let child = {
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
        killed: std::sync::atomic::AtomicBool::new(false),
    };
    let recorded = pgid.map(|pgid| pending.started(pgid));
    let output = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    Ok(Started {
        child,
        group,
        recorded,
        output,
    })
}

/// Reads `output` to its end, handing each piece to `sink`.
pub(crate) async fn pump(
    mut output: tokio::net::unix::pipe::Receiver,
    mut sink: impl FnMut(&[u8]),
) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = output.read(&mut buf).await {
        if n == 0 {
            break;
        }
        sink(buf.get(..n).unwrap_or_default());
    }
}

/// The signal that ended a process, if one did.
pub(crate) fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(status)
}

/// A process group, killed with SIGKILL when the command ends for any reason.
pub(crate) struct ProcessGroup {
    pgid: Option<i32>,
    /// What the command's processes carry, also the ones that left the group (`setsid`); none
    /// for a sandboxed command, whose PID namespace ends them all.
    marker: Option<String>,
    killed: std::sync::atomic::AtomicBool,
}

impl ProcessGroup {
    /// Kills every process of the group (and, the first time, those that left it).
    pub(crate) fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // SAFETY: killpg has no memory-safety preconditions; a group that is gone is ESRCH.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
        if !self.killed.swap(true, std::sync::atomic::Ordering::AcqRel)
            && let Some(marker) = &self.marker
        {
            super::processes::kill_marked(marker);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if !self.killed.load(std::sync::atomic::Ordering::Acquire) {
            self.kill();
        }
    }
}
