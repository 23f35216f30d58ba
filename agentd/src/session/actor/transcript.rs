//! The session's transcript for hooks (`transcript_path`, docs/architecture.md#hooks): its
//! history as JSON lines in the shape Claude Code's transcripts have (a `type`, and a
//! `message` with `role` and `content`), written when a hook is about to run.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::SessionActor;
use crate::conversation::{Block, Message as HistoryMessage};

impl SessionActor {
    /// Writes the session's transcript for hooks and returns its path.
    pub(super) fn write_transcript(&self) -> PathBuf {
        let transcript = self.durable.transcript_path();
        if let Err(err) = write(&transcript, self.history.messages()) {
            tracing::warn!(session = %self.shown.id(), "cannot write the transcript for hooks: {err}");
        }
        transcript
    }
}

/// Writes `history` to `path` as JSON lines (a new file renamed over the old one).
fn write(path: &std::path::Path, history: &[HistoryMessage]) -> std::io::Result<()> {
    let temp = path.with_extension("jsonl.new");
    let _ = std::fs::remove_file(&temp);
    let mut file = std::io::BufWriter::new(
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?,
    );
    for message in history {
        serde_json::to_writer(&mut file, &line(message))?;
        file.write_all(b"\n")?;
    }
    file.into_inner().map_err(|e| e.into_error())?;
    std::fs::rename(&temp, path)
}

/// One message as a transcript line.
fn line(message: &HistoryMessage) -> Value {
    match message {
        HistoryMessage::User { text, .. } | HistoryMessage::Notice { text } => {
            json!({"type": "user", "message": {"role": "user", "content": text}})
        }
        HistoryMessage::Summary { text } => json!({"type": "summary", "summary": text}),
        HistoryMessage::Assistant(reply) => {
            let content: Vec<Value> = reply
                .content
                .iter()
                .map(|block| match block {
                    Block::Text { text } => json!({"type": "text", "text": text}),
                    Block::Thinking { thinking, .. } => {
                        json!({"type": "thinking", "thinking": thinking})
                    }
                    Block::RedactedThinking { .. } => json!({"type": "redacted_thinking"}),
                    Block::ProviderItem { .. } => json!({"type": "provider_item"}),
                    Block::ToolCall(call) => json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": call.args_json().unwrap_or(Value::Null),
                    }),
                })
                .collect();
            json!({"type": "assistant", "message": {"role": "assistant", "content": content}})
        }
        HistoryMessage::ToolResults { results } => {
            let content: Vec<Value> = results
                .iter()
                .map(|r| {
                    json!({"type": "tool_result", "tool_use_id": r.call_id, "content": r.output, "is_error": r.is_error})
                })
                .collect();
            json!({"type": "user", "message": {"role": "user", "content": content}})
        }
    }
}
