//! A tool call in one line: `read README.md`, `bash cargo test`, `github/search_issues …`.

use serde_json::Value;

/// How a tool's name is shown: `server/tool` for a tool of an MCP server (named
/// `mcp__<server>__<tool>` for the model), the name itself otherwise.
pub fn tool_label(name: &str) -> String {
    match name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    {
        Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
            format!("{server}/{tool}")
        }
        _ => name.to_string(),
    }
}

/// One line describing a tool call: `read README.md`, `bash cargo test`.
pub fn tool_summary(name: &str, args: &str) -> String {
    let value: Value = serde_json::from_str(args).unwrap_or(Value::Null);
    let field = |key: &str| value[key].as_str().unwrap_or_default().to_string();
    let detail = match name {
        "read" | "write" | "edit" => field("path"),
        "bash" => {
            let command = field("command");
            let first = command.lines().next().unwrap_or_default().to_string();
            let line = if command.lines().count() > 1 {
                format!("{first} …")
            } else {
                first
            };
            // A background shell reads as a shell's `&`.
            if value["background"] == Value::Bool(true) {
                format!("{line} &")
            } else {
                line
            }
        }
        "bash_output" | "kill_shell" => match &value["id"] {
            Value::Number(n) => format!("shell {n}"),
            Value::String(s) => format!("shell {s}"),
            _ => String::new(),
        },
        "grep" => {
            let path = field("path");
            if path.is_empty() {
                field("pattern")
            } else {
                format!("{} in {path}", field("pattern"))
            }
        }
        "glob" => field("pattern"),
        // `references add (util.py:1)`, `workspace_symbols Parser`.
        "code" => {
            let what = [field("symbol"), field("query")].join(" ");
            let place = match (field("path"), value["line"].as_u64()) {
                (path, _) if path.is_empty() => String::new(),
                (path, Some(line)) => format!(" ({path}:{line})"),
                (path, None) => format!(" ({path})"),
            };
            format!("{} {}{place}", field("operation"), what.trim())
        }
        "fetch" => field("url"),
        "web_search" => field("query"),
        // The plan itself is shown as its own block.
        "todo" => match value["items"].as_array() {
            Some(items) if items.is_empty() => "clear the plan".to_string(),
            Some(items) => {
                let done = items
                    .iter()
                    .filter(|i| matches!(i["status"].as_str(), Some("done" | "completed")))
                    .count();
                format!("{done}/{} done", items.len())
            }
            None => String::new(),
        },
        _ => args.to_string(),
    };
    let name = tool_label(name);
    let detail: String = if detail.chars().count() > 100 {
        detail.chars().take(100).collect::<String>() + "…"
    } else {
        detail
    };
    crate::style::one_line(format!("{name} {detail}").trim_end()).into_owned()
}

/// A duration as `850ms` or `1.2s`.
pub(super) fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::tool_summary;

    #[test]
    fn background_shells_read_as_a_shell_would_show_them() {
        let started = r#"{"command": "npm run dev", "background": true}"#;
        assert_eq!(tool_summary("bash", started), "bash npm run dev &");
        assert_eq!(
            tool_summary("bash_output", r#"{"id": 2}"#),
            "bash_output shell 2"
        );
        assert_eq!(
            tool_summary("kill_shell", r#"{"id": "2"}"#),
            "kill_shell shell 2"
        );
    }

    #[test]
    fn a_code_call_reads_as_what_it_asks_where() {
        let asked = r#"{"operation": "references", "path": "util.py", "line": 1, "symbol": "add"}"#;
        assert_eq!(
            tool_summary("code", asked),
            "code references add (util.py:1)"
        );
        let query = r#"{"operation": "workspace_symbols", "query": "Parser"}"#;
        assert_eq!(tool_summary("code", query), "code workspace_symbols Parser");
    }
}
