//! Running one hook: `sh -c COMMAND` in the session directory, in a process group of its own,
//! with the session's filtered environment plus `AGENTD_SESSION_ID`, its JSON input on stdin.
//! What it prints is kept up to [`MAX_KEPT`] bytes a stream (the rest is read and dropped, so
//! it never blocks on a full pipe); at its timeout, or when the run is cancelled, the whole
//! group is killed.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// Bytes of a hook's stdout, and of its stderr, kept.
pub(crate) const MAX_KEPT: usize = 64 * 1024;

/// How one hook ran.
#[derive(Debug, Clone, Default)]
pub(crate) struct HookRun {
    /// Its exit code; `None` when it was killed or could not start.
    pub(crate) exit: Option<i32>,
    /// What it printed (at most [`MAX_KEPT`] bytes).
    pub(crate) stdout: String,
    /// What it printed on stderr (at most [`MAX_KEPT`] bytes).
    pub(crate) stderr: String,
    /// How long it ran.
    pub(crate) duration: Duration,
    /// Why it did not finish by itself: timed out, cancelled, or could not start.
    pub(crate) failure: Option<String>,
}

/// Runs `command` with `input` on its stdin.
pub(crate) async fn run(
    command: &str,
    input: &[u8],
    cwd: &Path,
    env: &[(String, String)],
    timeout: Duration,
    cancel: &CancellationToken,
) -> HookRun {
    let started = Instant::now();
    let mut child = match tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(err) => {
            return HookRun {
                failure: Some(format!("cannot start `sh`: {err}")),
                duration: started.elapsed(),
                ..HookRun::default()
            };
        }
    };
    let group = child.id().map(|pid| pid as i32);
    let kill = || {
        if let Some(group) = group {
            // SAFETY: killpg has no memory-safety preconditions; the group is the hook's own.
            unsafe { libc::killpg(group, libc::SIGKILL) };
        }
    };
    let mut stdin = child.stdin.take();
    let input = input.to_vec();
    let writer = async move {
        if let Some(stdin) = stdin.as_mut() {
            // A hook that does not read its input is not an error.
            let _ = stdin.write_all(&input).await;
        }
        drop(stdin);
    };
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let work = async {
        let (_, out, err, status) = tokio::join!(
            writer,
            read_capped(stdout),
            read_capped(stderr),
            child.wait()
        );
        (out, err, status.ok())
    };
    let deadline = tokio::time::sleep(timeout);
    let outcome = tokio::select! {
        done = work => Ok(done),
        () = deadline => Err(format!("timed out after {} s and was killed", timeout.as_secs())),
        () = cancel.cancelled() => Err("the run was cancelled; the hook was killed".to_string()),
    };
    // Whatever it left behind goes with it.
    kill();
    match outcome {
        Ok((stdout, stderr, status)) => HookRun {
            exit: status.and_then(|s| s.code()),
            stdout,
            stderr,
            duration: started.elapsed(),
            failure: None,
        },
        Err(failure) => HookRun {
            duration: started.elapsed(),
            failure: Some(failure),
            ..HookRun::default()
        },
    }
}

/// Reads `pipe` to its end, keeping the first [`MAX_KEPT`] bytes.
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_KEPT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn sh(command: &str, timeout: u64) -> HookRun {
        let dir = tempfile::tempdir().unwrap();
        let env = vec![(
            "PATH".to_string(),
            std::env::var("PATH").unwrap_or_default(),
        )];
        run(
            command,
            b"{\"x\":1}",
            dir.path(),
            &env,
            Duration::from_secs(timeout),
            &CancellationToken::new(),
        )
        .await
    }

    #[tokio::test]
    async fn input_goes_in_and_output_comes_back_capped() {
        let echo = sh("cat; echo err >&2; exit 3", 10).await;
        assert_eq!(echo.exit, Some(3));
        assert_eq!(echo.stdout, "{\"x\":1}");
        assert_eq!(echo.stderr, "err\n");
        let big = sh("head -c 10000000 /dev/zero | tr '\\0' a", 30).await;
        assert_eq!(big.exit, Some(0));
        assert_eq!(big.stdout.len(), MAX_KEPT);
    }

    #[tokio::test]
    async fn a_hook_that_hangs_is_killed_with_what_it_started() {
        let hung = sh("sleep 30 & sleep 30", 1).await;
        assert!(hung.failure.unwrap().contains("timed out"));
        assert!(hung.duration < Duration::from_secs(10));
    }
}
