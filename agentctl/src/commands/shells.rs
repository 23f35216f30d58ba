//! `agentctl shells`: a session's background shells (started by its agent with `bash` and
//! `"background": true`), running and ended, with their commands and last lines; `--kill N`
//! ends one and its processes.

use agentctl::client::paths::Paths;
use protocol::{Reply, Request, SessionId, ShellInfo};

use super::{request, unexpected};
use crate::style::{one_line, printable};
use crate::{Failure, connect, format};

/// `agentctl shells ID [--kill N] [--json]`.
pub async fn shells(
    paths: &Paths,
    id: String,
    kill: Option<u32>,
    json: bool,
) -> Result<u8, Failure> {
    let client = connect::connect(paths, "shells").await?;
    let session = SessionId(id);
    if let Some(shell) = kill {
        let ask = Request::KillShell {
            session: session.clone(),
            shell,
        };
        match request(&client, ask).await? {
            Reply::Done => {}
            other => return Err(unexpected(other)),
        }
        if !json {
            outln!("shell {shell} of session {session} was killed with its processes");
            return Ok(0);
        }
    }
    let list = match request(
        &client,
        Request::Shells {
            session: session.clone(),
        },
    )
    .await?
    {
        Reply::Shells(list) => list,
        other => return Err(unexpected(other)),
    };
    if json {
        let rows: Vec<serde_json::Value> = list.iter().map(shell_json).collect();
        outln!("{}", serde_json::to_string_pretty(&rows)?);
    } else if list.is_empty() {
        outln!("session {session} has no background shells");
    } else {
        for line in lines(&list, format::now_ms()) {
            outln!("{line}");
        }
    }
    Ok(0)
}

/// One shell with stable field names.
fn shell_json(shell: &ShellInfo) -> serde_json::Value {
    serde_json::json!({
        "shell": shell.shell,
        "command": shell.command,
        "started_ms": shell.started_ms,
        "running": shell.end.is_none(),
        "end": shell.end.as_ref().map(crate::json::shell_end_value),
        "tail": shell.tail,
        "bytes": shell.bytes,
    })
}

/// Each shell as a line (number, state, age, bytes, command) and its last lines under it.
fn lines(list: &[ShellInfo], now_ms: u64) -> Vec<String> {
    let mut lines = Vec::new();
    for shell in list {
        let state = shell
            .end
            .as_ref()
            .map_or("running".to_string(), ToString::to_string);
        lines.push(format!(
            "shell {} · {state} · started {} · {} · {}",
            shell.shell,
            format::ago(shell.started_ms, now_ms),
            format::bytes(shell.bytes),
            one_line(&shell.command)
        ));
        for line in printable(&shell.tail).lines() {
            lines.push(format!("  │ {line}"));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use protocol::{ShellEnd, ShellInfo};

    use super::lines;

    #[test]
    fn each_shell_has_a_line_and_its_last_lines_under_it() {
        let list = [
            ShellInfo {
                shell: 1,
                command: "python3 -m http.server 8000".into(),
                started_ms: 0,
                end: None,
                tail: "Serving HTTP\n\x1b[2Jhello".into(),
                bytes: 2048,
            },
            ShellInfo {
                shell: 2,
                command: "make\nall".into(),
                started_ms: 0,
                end: Some(ShellEnd::Exited { code: 0 }),
                tail: String::new(),
                bytes: 0,
            },
        ];
        assert_eq!(
            lines(&list, 120_000),
            [
                "shell 1 · running · started 2m ago · 2.0 KiB · python3 -m http.server 8000",
                "  │ Serving HTTP",
                "  │ \u{fffd}[2Jhello",
                "shell 2 · exited with code 0 · started 2m ago · 0 B · make\u{fffd}all",
            ]
        );
    }
}
