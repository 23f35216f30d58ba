//! `agentctl hooks list`, `skills list` and `commands list`: the hooks in force, and the skills
//! and slash commands of the current directory's project and of the user.

use agentctl::client::paths::Paths;
use protocol::{Extensions, Reply, Request};

use super::{request, unexpected};
use crate::style::one_line;
use crate::{Failure, connect, format};

/// Which list to print.
#[derive(Debug, Clone, Copy)]
pub enum Which {
    /// The hooks of config.toml.
    Hooks,
    /// The skills.
    Skills,
    /// The slash commands.
    Commands,
}

/// Prints one list as a table or a JSON array.
pub async fn list(paths: &Paths, which: Which, json: bool) -> Result<u8, Failure> {
    let cwd = super::here::current_dir()?;
    let client = connect::connect(paths, "list").await?;
    let found = match request(
        &client,
        Request::Extensions {
            cwd: cwd.to_string_lossy().into_owned(),
        },
    )
    .await?
    {
        Reply::Extensions(found) => found,
        other => return Err(unexpected(other)),
    };
    let (header, rows, none, values): (&[&str], Vec<Vec<String>>, &str, serde_json::Value) =
        table(&found, which);
    if json {
        outln!(
            "{}",
            crate::json::escape_obeyed(serde_json::to_string_pretty(&values)?)
        );
    } else if rows.is_empty() {
        outln!("{none}");
    } else {
        out!("{}", format::table(header, &rows));
    }
    Ok(0)
}

type Table = (
    &'static [&'static str],
    Vec<Vec<String>>,
    &'static str,
    serde_json::Value,
);

fn table(found: &Extensions, which: Which) -> Table {
    let text = |s: &str| one_line(s).into_owned();
    match which {
        Which::Hooks => (
            &["EVENT", "MATCHER", "COMMAND", "TIMEOUT", "ON ERROR"],
            found
                .hooks
                .iter()
                .map(|h| {
                    vec![
                        h.event.clone(),
                        text(h.matcher.as_deref().unwrap_or("*")),
                        text(&h.command),
                        format!("{} s", h.timeout_secs),
                        h.on_error.clone(),
                    ]
                })
                .collect(),
            "no hooks; add [[hooks.EVENT]] entries to config.toml (`agentctl config path`)",
            serde_json::json!(
                found
                    .hooks
                    .iter()
                    .map(|h| serde_json::json!({
                        "event": h.event, "matcher": h.matcher, "command": h.command,
                        "timeout_secs": h.timeout_secs, "on_error": h.on_error,
                    }))
                    .collect::<Vec<_>>()
            ),
        ),
        Which::Skills => (
            &["NAME", "DESCRIPTION", "PATH"],
            found
                .skills
                .iter()
                .map(|s| vec![text(&s.name), text(&s.description), text(&s.path)])
                .collect(),
            "no skills; add .agents/skills/NAME/SKILL.md here or skills/NAME/SKILL.md in the config directory",
            serde_json::json!(
                found
                    .skills
                    .iter()
                    .map(|s| serde_json::json!({
                        "name": s.name, "description": s.description, "path": s.path,
                    }))
                    .collect::<Vec<_>>()
            ),
        ),
        Which::Commands => (
            &["COMMAND", "ARGUMENTS", "DESCRIPTION"],
            found
                .commands
                .iter()
                .map(|c| {
                    vec![
                        format!("/{}", c.name),
                        text(c.argument_hint.as_deref().unwrap_or_default()),
                        text(&c.description),
                    ]
                })
                .collect(),
            "no commands; add .agents/commands/NAME.md here or commands/NAME.md in the config directory",
            serde_json::json!(found.commands.iter().map(|c| serde_json::json!({
                "name": c.name, "description": c.description, "argument_hint": c.argument_hint,
            })).collect::<Vec<_>>()),
        ),
    }
}
