//! Tab completion of slash commands in chat: the built-in ones, and the command files of the
//! session's project and of the user (SPEC §16) with their description and argument hint.

use reedline::{Completer, CompletionResult, Span, Suggestion};

/// The slash commands of the command files of `cwd`'s project and of the user; none when the
/// daemon cannot say.
pub(super) async fn project_commands(
    client: &agentctl::client::Client,
    cwd: &str,
) -> Vec<protocol::CommandInfo> {
    let request = protocol::Request::Extensions {
        cwd: cwd.to_string(),
    };
    match client.request(request).await {
        Ok(protocol::Reply::Extensions(found)) => found.commands,
        _ => Vec::new(),
    }
}

/// Completes `/NAME` at the start of the line.
pub(super) struct SlashCompleter {
    /// Each command as typed (`/greet`), with what the menu says of it.
    entries: Vec<(String, Option<String>)>,
}

impl SlashCompleter {
    /// The built-in commands, then `commands` (their names without the slash).
    pub(super) fn new(builtin: &[&str], commands: &[protocol::CommandInfo]) -> SlashCompleter {
        let mut entries: Vec<(String, Option<String>)> =
            builtin.iter().map(|c| (c.to_string(), None)).collect();
        for command in commands {
            let name = format!("/{}", command.name);
            // A built-in command wins on a clash.
            if entries.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let mut about = crate::style::one_line(&command.description).into_owned();
            if let Some(hint) = &command.argument_hint {
                about = format!("{} {about}", crate::style::one_line(hint));
            }
            entries.push((name, Some(about)));
        }
        SlashCompleter { entries }
    }
}

impl Completer for SlashCompleter {
    fn complete(&mut self, line: &str, pos: usize) -> CompletionResult {
        CompletionResult::fresh(self.matching(line, pos))
    }
}

impl SlashCompleter {
    /// The commands that complete what is typed before `pos`.
    fn matching(&self, line: &str, pos: usize) -> Vec<Suggestion> {
        let typed = line.get(..pos).unwrap_or(line);
        if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
            return Vec::new();
        }
        self.entries
            .iter()
            .filter(|(name, _)| name.starts_with(typed))
            .map(|(name, about)| Suggestion {
                value: name.clone(),
                description: about.clone(),
                span: Span::new(0, pos),
                append_whitespace: true,
                ..Suggestion::default()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_commands_complete_with_their_description_and_builtins_win() {
        let commands = vec![
            protocol::CommandInfo {
                name: "greet".into(),
                description: "Greets someone.".into(),
                argument_hint: Some("NAME".into()),
            },
            protocol::CommandInfo {
                name: "help".into(),
                description: "shadowed".into(),
                argument_hint: None,
            },
        ];
        let completer = SlashCompleter::new(&["/help", "/steer"], &commands);
        let found = completer.matching("/gr", 3);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].value, "/greet");
        assert_eq!(
            found[0].description.as_deref(),
            Some("NAME Greets someone.")
        );
        let help = completer.matching("/he", 3);
        assert_eq!(help.len(), 1);
        assert_eq!(help[0].description, None);
        assert!(completer.matching("hello /gr", 9).is_empty());
    }
}
