//! For a small model, the files the user's message names are read before its first reply, as
//! calls of `read` it can see in its history: it starts with what it would otherwise guess
//! (small models edit files they have not read), each file counts as read, and the calls show
//! it the tool format in its provider's own form. They run as any call does: announced to the
//! views, checked against the permissions, and refused for what the agent may not see.

use std::path::Path;

use protocol::ModelStopReason;

use super::{Gone, Run};
use crate::conversation::{AssistantReply, Block, Message, ToolCall};

/// The most files read this way.
const MAX_FILES: usize = 3;
/// Files larger than this are left for the model to read in parts.
const MAX_BYTES: u64 = 64 * 1024;
/// Characters of the task said again after the files.
const MAX_TASK_CHARS: usize = 2000;

impl Run {
    /// Reads the files `message` names, if the model is small and this is the run's start.
    pub(super) async fn read_named_files(&mut self, message: &str) -> Result<(), Gone> {
        let message = super::asked_change::without_attached_files(message);
        let paths = named_files(&message, self.setup.place.cwd());
        if paths.is_empty() {
            return Ok(());
        }
        let calls: Vec<ToolCall> = paths
            .iter()
            .enumerate()
            .map(|(i, path)| ToolCall {
                id: format!("call_start_{i}_{}", uuid::Uuid::new_v4().simple()),
                name: "read".to_string(),
                args: serde_json::json!({ "path": path }).to_string(),
            })
            .collect();
        let reply = AssistantReply {
            content: calls.iter().cloned().map(Block::ToolCall).collect(),
            stop_reason: ModelStopReason::ToolUse,
            usage: Default::default(),
        };
        self.push(Message::Assistant(reply), None).await?;
        let done = self.execute(&calls).await?;
        let mut results = self.answered(&calls, done).await;
        // The task again, after the files: a small model otherwise takes the file it just
        // read for what to write back.
        if let Some(last) = results.last_mut() {
            last.output.push_str(&format!(
                "\n(These files were read for you. Your task: {}\nDo it now: to change a file, \
                 write the whole file with the change made; to answer, reply in plain text.)",
                cut(message.trim(), MAX_TASK_CHARS)
            ));
        }
        self.push(Message::ToolResults { results }, None).await
    }
}

/// `text` cut to `max` characters, saying so.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", text.get(..at).unwrap_or_default()),
        None => text.to_string(),
    }
}

/// The files in `cwd` that `message` names by path (`solution.py`, `src/app.ts`), small enough
/// to read whole, in the order named, at most [`MAX_FILES`].
pub(crate) fn named_files(message: &str, cwd: &Path) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in message.split_whitespace() {
        let word = word
            .trim_matches(|c: char| "`'\"()[]{}<>,;:!?*".contains(c))
            .trim_end_matches('.');
        let word = word.strip_prefix('@').unwrap_or(word);
        let looks_like_path = (word.contains('.') || word.contains('/'))
            && !word.contains("://")
            && !word.starts_with('-')
            && word.len() <= 255;
        if !looks_like_path || found.iter().any(|f| f == word) {
            continue;
        }
        let path = crate::tools::resolve(cwd, word);
        if !path.starts_with(cwd) {
            continue;
        }
        let small_file =
            std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_BYTES);
        if small_file {
            found.push(word.to_string());
            if found.len() == MAX_FILES {
                break;
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_a_message_names_are_found_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::write(cwd.join("solution.py"), "x = 1\n").unwrap();
        std::fs::write(cwd.join("README.md"), "start\n").unwrap();
        std::fs::create_dir(cwd.join("src")).unwrap();
        std::fs::write(cwd.join("src/app.ts"), "let a;\n").unwrap();
        std::fs::write(cwd.join("big.txt"), "x".repeat(MAX_BYTES as usize + 1)).unwrap();
        let found = named_files(
            "Read `README.md`, then fix solution.py. See src/app.ts and big.txt, \
             https://x.io/a.py, missing.py, ../etc/passwd and src (a directory). solution.py again.",
            cwd,
        );
        assert_eq!(found, ["README.md", "solution.py", "src/app.ts"]);
        assert!(named_files("fix the failing test", cwd).is_empty());
    }
}
