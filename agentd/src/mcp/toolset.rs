//! The MCP tools one turn offers the model: each server's tools under their exposed names, with
//! their descriptions and schemas kept within bounds, and what the system prompt says of the
//! servers.

use std::borrow::Cow;
use std::collections::HashSet;

use rmcp::model::Tool as McpToolDef;
use serde_json::Value;

use super::config::McpServerConfig;
use super::names;
use crate::provider::ToolSpec;

/// The most tools taken from one server.
pub(crate) const MAX_TOOLS_PER_SERVER: usize = 200;
/// The most characters of a tool's description.
const MAX_DESCRIPTION: usize = 2_000;
/// The most bytes of a tool's input schema; a larger one is replaced by an open object.
const MAX_SCHEMA_BYTES: usize = 32_768;
/// The most bytes of descriptions and schemas one server adds to every model request.
const MAX_SERVER_BYTES: usize = 262_144;
/// The longest tool name taken; longer ones are left out.
const MAX_TOOL_NAME: usize = 128;

/// One MCP tool as the model sees it.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// Its name for the model (`mcp__<server>__<tool>`).
    pub(crate) name: String,
    /// The server's name in the config.
    pub(crate) server: String,
    /// The tool's name on the server.
    pub(crate) tool: String,
    /// What the model is told.
    pub(crate) spec: ToolSpec,
    /// Whether the server says the tool changes nothing (`readOnlyHint`).
    pub(crate) read_only: bool,
    /// Whether the server's `allow` list names it.
    pub(crate) allowed: bool,
}

/// A server as a turn found it.
#[derive(Debug, Clone)]
pub(crate) struct ServerState {
    /// Its name.
    pub(crate) name: String,
    /// Its tool count, or why it cannot be used.
    pub(crate) outcome: Result<usize, String>,
}

/// Every MCP tool of one turn.
#[derive(Debug, Clone, Default)]
pub struct Toolset {
    /// The tools, server by server.
    pub(crate) tools: Vec<McpTool>,
    /// The servers, in config order.
    pub(crate) servers: Vec<ServerState>,
}

impl Toolset {
    /// Adds `config`'s tools (or why there are none).
    pub(crate) fn add(
        &mut self,
        config: &McpServerConfig,
        tools: Result<&[McpToolDef], String>,
        taken: &mut HashSet<String>,
    ) {
        let tools = match tools {
            Ok(tools) => tools,
            Err(error) => {
                self.servers.push(ServerState {
                    name: config.name.clone(),
                    outcome: Err(error),
                });
                return;
            }
        };
        let mut count = 0;
        let mut bytes = 0;
        for def in tools.iter().take(MAX_TOOLS_PER_SERVER) {
            if def.name.len() > MAX_TOOL_NAME {
                continue;
            }
            let description: String = def
                .description
                .as_deref()
                .unwrap_or("")
                .chars()
                .take(MAX_DESCRIPTION)
                .collect();
            let description = format!(
                "{description} (tool `{}` of MCP server `{}`)",
                def.name, config.name
            );
            let input_schema = schema(def);
            bytes += description.len() + input_schema.to_string().len();
            if bytes > MAX_SERVER_BYTES {
                tracing::warn!(server = %config.name, "the MCP server's tools are too large to offer them all; the rest are left out");
                break;
            }
            let name = names::exposed(&config.name, &def.name, taken);
            self.tools.push(McpTool {
                name: name.clone(),
                server: config.name.clone(),
                tool: def.name.to_string(),
                spec: ToolSpec {
                    name: Cow::Owned(name),
                    description: Cow::Owned(description.trim_start().to_string()),
                    input_schema,
                },
                read_only: def
                    .annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false),
                allowed: config.allow.iter().any(|t| t.as_str() == def.name),
            });
            count += 1;
        }
        self.servers.push(ServerState {
            name: config.name.clone(),
            outcome: Ok(count),
        });
    }

    /// The tool the model calls `name`.
    pub fn get(&self, name: &str) -> Option<&McpTool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// What the system prompt says of the servers; `None` without any.
    pub(crate) fn prompt(&self) -> Option<String> {
        if self.servers.is_empty() {
            return None;
        }
        let mut text = String::from(
            "# MCP servers\nTools named `mcp__<server>__<tool>` come from these MCP servers:\n",
        );
        for server in &self.servers {
            match &server.outcome {
                Ok(count) => text.push_str(&format!(
                    "- {}: connected, {}\n",
                    server.name,
                    crate::tools::plural(*count, "tool")
                )),
                Err(_) => text.push_str(&format!(
                    "- {}: not available now (failed to start)\n",
                    server.name
                )),
            }
        }
        Some(text)
    }
}

/// The tool's input schema as providers take it: an object schema, not too large.
fn schema(def: &McpToolDef) -> Value {
    let schema = Value::Object((*def.input_schema).clone());
    let fits = serde_json::to_vec(&schema).map_or(0, |b| b.len()) <= MAX_SCHEMA_BYTES;
    if fits && schema.get("type").and_then(Value::as_str) == Some("object") {
        schema
    } else {
        serde_json::json!({"type": "object", "additionalProperties": true})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn config(allow: &[&str]) -> McpServerConfig {
        let entry = format!(
            "command = \"x\"\nallow = [{}]\n",
            allow
                .iter()
                .map(|a| format!("\"{a}\""))
                .collect::<Vec<_>>()
                .join(",")
        );
        super::super::config::parse_entry("srv", toml::from_str(&entry).unwrap(), &|_| None)
            .unwrap()
    }

    #[test]
    fn tools_keep_schema_hints_and_allow() {
        let schema: serde_json::Map<String, Value> = serde_json::from_value(
            serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        )
        .unwrap();
        let read = McpToolDef::new("get", "Gets", Arc::new(schema.clone()))
            .annotate(rmcp::model::ToolAnnotations::new().read_only(true));
        let huge: serde_json::Map<String, Value> = serde_json::from_value(
            serde_json::json!({"type": "object", "description": "x".repeat(100_000)}),
        )
        .unwrap();
        let write = McpToolDef::new("put", "Puts", Arc::new(huge));
        let mut set = Toolset::default();
        set.add(&config(&["put"]), Ok(&[read, write]), &mut HashSet::new());
        let get = set.get("mcp__srv__get").unwrap();
        assert!(get.read_only && !get.allowed);
        assert_eq!(get.spec.input_schema["properties"]["a"]["type"], "string");
        let put = set.get("mcp__srv__put").unwrap();
        assert!(!put.read_only && put.allowed);
        assert_eq!(put.spec.input_schema["type"], "object");
        assert!(put.spec.input_schema.get("description").is_none());
        assert!(set.prompt().unwrap().contains("srv: connected, 2 tools"));
    }
}
