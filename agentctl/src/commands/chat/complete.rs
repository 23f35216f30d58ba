//! What Tab completes in chat, and what `/help` lists: the same table. Slash commands (the
//! built-in ones, then the command files of the session's project and of the user with their
//! description and argument hint), the values of `/mode`, `/model` and `/resume`, and
//! `@path` mentions (files and directories under the session's directory, ignore-aware).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::editor::{Candidate, Completion};

/// The built-in slash commands: name, arguments, what it does.
pub(super) const SLASH_COMMANDS: &[(&str, &str, &str)] = &[
    ("/help", "", "what Tab completes, and the keys"),
    (
        "/steer",
        "TEXT",
        "steer the running run at its next turn (Alt+Enter too)",
    ),
    ("/queue", "TEXT", "queue a follow-up"),
    (
        "/cancel",
        "",
        "cancel the run; queued messages come back (Esc too)",
    ),
    (
        "/allow",
        "[N]",
        "allow the pending permission request (or request N)",
    ),
    ("/deny", "[N]", "deny it"),
    ("/always", "[N]", "always allow it"),
    (
        "/mode",
        "[MODE]",
        "show or set the mode: default, accept-edits, auto, plan, bypass",
    ),
    (
        "/model",
        "[NAME]",
        "list the models the provider serves, or use NAME from the next run",
    ),
    (
        "/cost",
        "",
        "tokens and cost of the last run and of the session, per model",
    ),
    ("/clear", "", "a fresh session here, with the same settings"),
    (
        "/init",
        "",
        "the agent writes or updates AGENTS.md for this project",
    ),
    ("/compact", "", "compact the history now"),
    (
        "/diff",
        "[N] [--stat]",
        "what the last run (or run N) changed",
    ),
    (
        "/rewind",
        "[N] [yes]",
        "show, then with `yes` do, the undo of the last run (or run N on)",
    ),
    (
        "/resume",
        "on|off",
        "whether a run the daemon stops during goes on in the next daemon",
    ),
    ("/sessions", "", "list sessions"),
    (
        "/detach",
        "",
        "leave; the session and its run go on (Ctrl+D too)",
    ),
    ("/quit", "", "the same as /detach"),
    ("/exit", "", "the same as /detach"),
];

/// The modes `/mode` takes.
const MODES: &[&str] = &["default", "accept-edits", "auto", "plan", "bypass"];

/// The most paths offered for one `@` word.
const MAX_PATHS: usize = 200;

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

/// Completes what is typed in chat.
pub(super) struct Completer {
    /// Each command as typed (`/greet`), with what the menu says of it.
    commands: Vec<(String, String)>,
    /// The session's directory, where `@path` starts.
    cwd: PathBuf,
    /// The models the provider serves, once asked (`/model`).
    pub(super) models: Arc<Mutex<Vec<String>>>,
}

impl Completer {
    /// The built-in commands, then `commands` (their names without the slash).
    pub(super) fn new(commands: &[protocol::CommandInfo], cwd: &Path) -> Completer {
        let mut entries: Vec<(String, String)> = SLASH_COMMANDS
            .iter()
            .map(|(name, args, about)| {
                let about = if args.is_empty() {
                    about.to_string()
                } else {
                    format!("{args}  {about}")
                };
                (name.to_string(), about)
            })
            .collect();
        for command in commands {
            // A name is typed and shown: nothing in it may be obeyed by the terminal.
            let name = format!("/{}", crate::view::far::line(&command.name));
            // A built-in command wins on a clash.
            if entries.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let mut about = crate::style::one_line(&command.description).into_owned();
            if let Some(hint) = &command.argument_hint {
                about = format!("{}  {about}", crate::style::one_line(hint));
            }
            entries.push((name, about));
        }
        Completer {
            commands: entries,
            cwd: cwd.to_path_buf(),
            models: Arc::default(),
        }
    }

    /// Whether `name` (`/greet`) is a command of the project's or the user's command files.
    pub(super) fn is_file_command(&self, name: &str) -> bool {
        !SLASH_COMMANDS.iter().any(|(n, ..)| *n == name)
            && self.commands.iter().any(|(n, _)| n == name)
    }

    /// `/help`: every command Tab completes, with what it does.
    pub(super) fn help(&self) -> Vec<String> {
        let wide = self
            .commands
            .iter()
            .map(|(n, _)| n.len())
            .max()
            .unwrap_or(0);
        let mut lines: Vec<String> = self
            .commands
            .iter()
            .map(|(name, about)| format!("{name:<wide$}  {about}"))
            .collect();
        lines.extend(KEYS.lines().map(str::to_string));
        lines
    }

    /// The completions of the word that ends at the end of `head` (the text before the
    /// cursor); `None` when nothing completes there.
    pub(super) fn complete(&self, head: &str) -> Option<Completion> {
        // A space escaped with a backslash is part of an `@` path.
        let from = crate::mentions::word_start(head);
        let word = &head[from..];
        let fixed = |values: &[&str]| {
            values
                .iter()
                .filter(|v| v.starts_with(word))
                .map(|v| Candidate {
                    value: v.to_string(),
                    about: None,
                    space_after: true,
                })
                .collect::<Vec<_>>()
        };
        let candidates = if let Some(path) = word.strip_prefix('@') {
            self.paths(path)
        } else if from == 0 && word.starts_with('/') {
            self.commands
                .iter()
                .filter(|(name, _)| name.starts_with(word))
                .map(|(name, about)| Candidate {
                    value: name.clone(),
                    about: Some(about.clone()),
                    space_after: true,
                })
                .collect()
        } else {
            let before: Vec<&str> = head[..from].split_whitespace().collect();
            match before.as_slice() {
                ["/mode"] => fixed(MODES),
                ["/resume"] => fixed(&["on", "off"]),
                ["/model"] => {
                    let models = self.models.lock().unwrap_or_else(|e| e.into_inner());
                    let names: Vec<&str> = models.iter().map(String::as_str).collect();
                    fixed(&names)
                }
                _ => return None,
            }
        };
        Some(Completion { from, candidates })
    }

    /// `@` completions: the entries of the directory named so far that start with the rest,
    /// as `@dir/name` (directories end with `/` and take no space after them; spaces escaped
    /// with a backslash). What the project's ignore files leave out is left out, and hidden
    /// entries unless a `.` is typed.
    fn paths(&self, typed: &str) -> Vec<Candidate> {
        let typed = crate::mentions::unescape(typed);
        let (dir, prefix) = match typed.rfind('/') {
            Some(i) => (&typed[..=i], &typed[i + 1..]),
            None => ("", typed.as_str()),
        };
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let base = crate::mentions::resolve(dir, &self.cwd, home.as_deref());
        let walk = ignore::WalkBuilder::new(&base)
            .max_depth(Some(1))
            .hidden(!prefix.starts_with('.'))
            .require_git(false)
            .build();
        let mut found: Vec<Candidate> = walk
            .flatten()
            .filter(|entry| entry.depth() == 1)
            .filter_map(|entry| {
                let name = entry.file_name().to_str()?.to_string();
                if !name.starts_with(prefix) || name == ".git" {
                    return None;
                }
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                let slash = if is_dir { "/" } else { "" };
                Some(Candidate {
                    value: format!(
                        "@{}{slash}",
                        crate::mentions::escape(&format!("{dir}{name}"))
                    ),
                    about: None,
                    space_after: !is_dir,
                })
            })
            .take(MAX_PATHS)
            .collect();
        found.sort_by(|a, b| a.value.cmp(&b.value));
        found
    }
}

/// The keys, after the commands in `/help`.
const KEYS: &str = "
Enter sends a message (queued as a follow-up while a run is going); Alt+Enter steers with it.
A \\ at the end of a line (or Shift+Enter where the terminal tells it) goes on on the next line.
@path attaches that file to the message; Tab completes commands, their values and paths.
Esc cancels the run (queued messages come back into the input); Up and Down recall messages.
y / n / a allow, deny or always allow the pending permission request.
Ctrl+D, or Ctrl+C twice, leaves; the session and its run go on.";

#[cfg(test)]
mod tests {
    use super::*;

    fn completer(dir: &Path) -> Completer {
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
        Completer::new(&commands, dir)
    }

    fn values(completion: Option<Completion>) -> Vec<String> {
        completion
            .map(|c| c.candidates.into_iter().map(|c| c.value).collect())
            .unwrap_or_default()
    }

    #[test]
    fn commands_complete_with_their_description_and_builtins_win() {
        let completer = completer(Path::new("/nonexistent"));
        let found = completer.complete("/gr").unwrap();
        assert_eq!(found.candidates.len(), 1);
        assert_eq!(found.candidates[0].value, "/greet");
        assert_eq!(
            found.candidates[0].about.as_deref(),
            Some("NAME  Greets someone.")
        );
        assert_eq!(values(completer.complete("/he")), vec!["/help"]);
        assert!(completer.complete("hello /gr").is_none());
        assert_eq!(values(completer.complete("/mode pla")), vec!["plan"]);
        assert!(completer.is_file_command("/greet"));
        assert!(!completer.is_file_command("/help"));
    }

    #[test]
    fn help_lists_exactly_what_tab_completes() {
        let completer = completer(Path::new("/nonexistent"));
        let help = completer.help().join("\n");
        for name in values(completer.complete("/")) {
            assert!(
                help.contains(&format!("{name} ")),
                "{name} missing from /help"
            );
        }
    }

    #[test]
    fn paths_complete_files_and_directories_but_not_ignored_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("README.md"), "x").unwrap();
        std::fs::write(dir.path().join("READY.txt"), "x").unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "x").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target\n").unwrap();
        std::fs::create_dir(dir.path().join("target")).unwrap();
        let completer = completer(dir.path());
        assert_eq!(
            values(completer.complete("see @REA")),
            vec!["@README.md", "@READY.txt"]
        );
        assert_eq!(values(completer.complete("@s")), vec!["@src/"]);
        assert_eq!(values(completer.complete("@src/m")), vec!["@src/main.rs"]);
        assert!(values(completer.complete("@t")).is_empty());
    }

    #[test]
    fn paths_with_spaces_complete_escaped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("My Shots")).unwrap();
        std::fs::write(dir.path().join("My Shots/shot 1.png"), "x").unwrap();
        let completer = completer(dir.path());
        assert_eq!(values(completer.complete("see @My")), vec![r"@My\ Shots/"]);
        let found = completer.complete(r"see @My\ Shots/sh").unwrap();
        assert_eq!(found.from, "see ".len());
        assert_eq!(values(Some(found)), vec![r"@My\ Shots/shot\ 1.png"]);
    }
}
