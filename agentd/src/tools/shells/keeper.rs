//! Starting a background shell (`bash` with `"background": true`) and the task that keeps it
//! until it ends: the command starts as `bash` starts one (same process group, records and
//! sandbox), its output goes to the shell's ring, and when it exits, is killed or times out,
//! the whole group is killed, the sandbox's guard looks at what it left, and the session is
//! told how it ended. Cancelling the run that started it does not end it.

use std::sync::Arc;
use std::time::Duration;

use protocol::ShellEnd;

use super::registry::{Shell, Shells};
use crate::sandbox::{Guard, Policy};
use crate::tools::command::{self, Started};
use crate::tools::{ToolContext, ToolOutput};

/// The longest timeout a background shell may ask for.
const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// Starts `command` as a background shell of the session (ended after `timeout` if given);
/// the result gives its number at once.
pub(crate) async fn start(
    command: String,
    timeout: Option<Duration>,
    ctx: ToolContext,
) -> ToolOutput {
    let shells = ctx.shells.clone();
    let (number, shell) = match shells.reserve(&command) {
        Ok(reserved) => reserved,
        Err(why) => return ToolOutput::error(why),
    };
    // The sandbox is prepared as for any command, and kept for the shell's life.
    let (policy, guard) = match command::confine(&ctx).await {
        Ok(confined) => confined.unzip(),
        Err(why) => {
            shells.unreserve(number);
            return ToolOutput::error(why);
        }
    };
    // From here the command's effects are real.
    if !ctx.gate.commit() {
        shells.unreserve(number);
        return ToolOutput::error("[interrupted: the run was cancelled before the shell started]");
    }
    let started = match command::start(&command, &ctx, policy.as_ref()) {
        Ok(started) => started,
        Err(err) => {
            shells.unreserve(number);
            return ToolOutput::error(format!("cannot start the command: {err}"));
        }
    };
    shells.announce(number, &command);
    let keeper = Keeper {
        number,
        shell,
        shells,
        command: command.clone(),
        policy,
        guard,
        timeout: timeout.map(|t| t.min(MAX_TIMEOUT)),
        ctx,
    };
    tokio::spawn(keeper.keep(started));
    ToolOutput::ok(format!(
        "started shell {number} in the background: {command}\n\
         It keeps running after this call. Use bash_output {{\"id\":{number}}} to read what it \
         prints and whether it still runs (\"wait_ms\" waits for output), and kill_shell \
         {{\"id\":{number}}} to end it."
    ))
}

/// What the task that keeps a shell needs.
struct Keeper {
    /// The shell's number.
    number: u32,
    /// Its output and state.
    shell: Arc<Shell>,
    /// The session's shells, told when it ends.
    shells: Shells,
    /// Its command line.
    command: String,
    /// The sandbox it runs in, if any.
    policy: Option<Policy>,
    /// What was there before it started, looked at when it ends.
    guard: Option<Guard>,
    /// When it is ended, if ever.
    timeout: Option<Duration>,
    /// The call that started it (its environment, the hidden paths).
    ctx: ToolContext,
}

impl Keeper {
    /// Keeps the shell until it ends, then cleans up and tells the session.
    async fn keep(self, started: Started) {
        let Started {
            mut child,
            group,
            recorded,
            output,
        } = started;
        let reader = {
            let shell = self.shell.clone();
            tokio::spawn(command::pump(output, move |piece| shell.push(piece)))
        };
        let expired = async {
            match self.timeout {
                Some(after) => tokio::time::sleep(after).await,
                None => std::future::pending().await,
            }
        };
        let end = tokio::select! {
            status = child.wait() => match status {
                Ok(status) => match (status.code(), command::signal_of(&status)) {
                    (Some(code), _) => ShellEnd::Exited { code },
                    (None, Some(signal)) => ShellEnd::Signalled { signal },
                    (None, None) => ShellEnd::Killed,
                },
                Err(_) => ShellEnd::Killed,
            },
            () = self.shell.kill.cancelled() => ShellEnd::Killed,
            () = expired => {
                let after = self.timeout.unwrap_or_default().as_millis();
                self.shell.push(format!("\n[timed out after {after} ms; the shell and its processes were killed]\n").as_bytes());
                ShellEnd::Killed
            }
        };
        // Whatever it left running in its group goes with it.
        group.kill();
        let _ = child.wait().await;
        let mut reader = reader;
        if tokio::time::timeout(command::DRAIN_GRACE, &mut reader)
            .await
            .is_err()
        {
            reader.abort();
        }
        drop(recorded);
        let mut notes = command::after(self.guard).await;
        let failed = matches!(end, ShellEnd::Exited { code } if code != 0)
            || matches!(end, ShellEnd::Signalled { .. });
        if let Some(policy) = self.policy.as_ref().filter(|_| failed) {
            let tail = self.shell.tail();
            notes.extend(command::failure_notes(
                &self.ctx,
                policy,
                &self.command,
                &tail,
            ));
        }
        for note in notes {
            self.shell.push(format!("\n{note}\n").as_bytes());
        }
        tracing::debug!(shell = self.number, command = %self.command, ?end, "background shell ended");
        self.shells.finish(self.number, &self.shell, end);
    }
}
