//! `agentctl mcp list`: the MCP servers of config.toml, and what each instance is doing.

use agentctl::client::paths::Paths;
use protocol::{McpServerInfo, Reply, Request};

use super::{request, unexpected};
use crate::{Failure, connect, format};

/// Lists the configured MCP servers as a table or a JSON array.
pub async fn list(paths: &Paths, json: bool) -> Result<u8, Failure> {
    let client = connect::connect(paths, "mcp list").await?;
    let servers = match request(&client, Request::McpList).await? {
        Reply::McpServers(servers) => servers,
        other => return Err(unexpected(other)),
    };
    if json {
        let rows: Vec<serde_json::Value> = servers.iter().map(server_json).collect();
        outln!("{}", serde_json::to_string_pretty(&rows)?);
    } else if servers.is_empty() {
        outln!(
            "no MCP servers; add a [mcp_servers.NAME] entry to config.toml (`agentctl config path`)"
        );
    } else {
        out!("{}", table(&servers));
    }
    Ok(0)
}

fn server_json(s: &McpServerInfo) -> serde_json::Value {
    serde_json::json!({
        "name": s.name,
        "transport": s.transport,
        "scope": s.scope,
        "session": s.session.as_ref().map(|id| id.as_str()),
        "state": s.state,
        "pid": s.pid,
        "tools": s.tools,
        "last_error": s.last_error,
    })
}

/// The servers as a table (also part of `daemon status`).
pub fn table(servers: &[McpServerInfo]) -> String {
    let rows: Vec<Vec<String>> = servers
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.transport.clone(),
                match &s.session {
                    Some(id) => format!("{} {id}", s.scope),
                    None => s.scope.clone(),
                },
                s.state.clone(),
                s.pid.map_or_else(|| "-".to_string(), |p| p.to_string()),
                s.tools.to_string(),
                s.last_error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    format::table(
        &[
            "NAME",
            "TRANSPORT",
            "SCOPE",
            "STATE",
            "PID",
            "TOOLS",
            "LAST ERROR",
        ],
        &rows,
    )
}
