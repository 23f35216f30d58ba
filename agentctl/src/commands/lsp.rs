//! `agentctl lsp list`: the language servers the daemon runs, one per project root and server.

use agentctl::client::paths::Paths;
use protocol::{LspServerInfo, Reply, Request};

use super::{request, unexpected};
use crate::{Failure, connect, format};

/// Lists the language server instances as a table or a JSON array.
pub async fn list(paths: &Paths, json: bool) -> Result<u8, Failure> {
    let client = connect::connect(paths, "lsp list").await?;
    let servers = match request(&client, Request::LspList).await? {
        Reply::LspServers(servers) => servers,
        other => return Err(unexpected(other)),
    };
    if json {
        let rows: Vec<serde_json::Value> = servers.iter().map(server_json).collect();
        outln!(
            "{}",
            crate::json::escape_obeyed(serde_json::to_string_pretty(&rows)?)
        );
    } else if servers.is_empty() {
        outln!(
            "no language servers running; one starts when a session reads or edits a file a server serves (`[lsp.NAME]` in config.toml, or pyright, rust-analyzer, gopls … on PATH)"
        );
    } else {
        out!("{}", table(&servers));
    }
    Ok(0)
}

/// One instance as JSON.
fn server_json(s: &LspServerInfo) -> serde_json::Value {
    serde_json::json!({
        "name": s.name,
        "root": s.root,
        "state": s.state,
        "pid": s.pid,
        "sessions": s.sessions.iter().map(|id| id.as_str()).collect::<Vec<_>>(),
        "languages": s.languages,
        "restarts": s.restarts,
        "last_error": s.last_error,
    })
}

/// The instances as a table.
fn table(servers: &[LspServerInfo]) -> String {
    let rows: Vec<Vec<String>> = servers
        .iter()
        .map(|s| {
            let sessions: Vec<&str> = s.sessions.iter().map(|id| id.as_str()).collect();
            vec![
                s.name.clone(),
                s.root.clone(),
                s.state.clone(),
                s.pid.map_or_else(|| "-".to_string(), |p| p.to_string()),
                if sessions.is_empty() {
                    "-".to_string()
                } else {
                    sessions.join(",")
                },
                s.restarts.to_string(),
                s.last_error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    format::table(
        &[
            "NAME",
            "ROOT",
            "STATE",
            "PID",
            "SESSIONS",
            "RESTARTS",
            "LAST ERROR",
        ],
        &rows,
    )
}
