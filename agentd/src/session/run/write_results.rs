//! What a model is told after it changed a file. A small model, shown "Replaced solution.py
//! (18 lines, 591 bytes)", wrote that line over the file it had just got right. So each change's
//! summary line is remembered, a write whose whole content is one of them is refused (the file
//! keeps the work), and a small model's successful change says what to do next.

use std::sync::Mutex;

use crate::conversation::ToolCall;
use crate::tools::ToolOutput;

/// The summary lines of the run's changes so far.
#[derive(Debug, Default)]
pub(crate) struct WriteResults {
    summaries: Mutex<Vec<String>>,
}

/// What a small model reads after its change landed.
const NEXT_STEP: &str = "The file is saved with this change. Do not write it again unless \
                         something is still wrong; next, check it (run it with bash) or answer \
                         the user in a sentence or two.";

impl WriteResults {
    /// The refusal of a `write` whose content is the summary of an earlier change.
    pub(crate) fn echo(&self, call: &ToolCall) -> Option<ToolOutput> {
        if call.name != "write" {
            return None;
        }
        let args: serde_json::Value = serde_json::from_str(&call.args).ok()?;
        let content = args.get("content")?.as_str()?.trim();
        let summaries = self.summaries.lock().unwrap_or_else(|e| e.into_inner());
        summaries.iter().any(|s| s == content).then(|| {
            ToolOutput::error(
                "not written: that content is the result of your earlier change, not the file's \
                 text. The file already holds your change; answer the user instead.",
            )
        })
    }

    /// Remembers a change's summary line; for a small model, adds the next step after it.
    pub(crate) fn landed(&self, call: &ToolCall, output: ToolOutput, small: bool) -> ToolOutput {
        if !matches!(call.name.as_str(), "write" | "edit") || output.is_error {
            return output;
        }
        let summary = output
            .output
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        self.summaries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(summary.clone());
        if !small {
            return output;
        }
        let rest = output.output.get(summary.len()..).unwrap_or_default();
        ToolOutput::ok(format!("{summary}\n{NEXT_STEP}{rest}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(content: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: "write".into(),
            args: serde_json::json!({"path": "a.py", "content": content}).to_string(),
        }
    }

    #[test]
    fn a_write_of_an_earlier_result_is_refused_and_small_models_get_the_next_step() {
        let results = WriteResults::default();
        let done = results.landed(
            &write("x = 1\n"),
            ToolOutput::ok("Replaced a.py (1 line, 6 bytes)\n--- a.py\n+++ a.py\n"),
            true,
        );
        assert!(
            done.output
                .starts_with("Replaced a.py (1 line, 6 bytes)\nThe file is saved")
        );
        assert!(
            done.output.ends_with("\n--- a.py\n+++ a.py\n"),
            "{}",
            done.output
        );
        assert!(
            results
                .echo(&write("Replaced a.py (1 line, 6 bytes)"))
                .is_some()
        );
        assert!(results.echo(&write("x = 2\n")).is_none());
        let big = results.landed(
            &write("y"),
            ToolOutput::ok("Created b.py (1 line, 1 bytes)"),
            false,
        );
        assert_eq!(big.output, "Created b.py (1 line, 1 bytes)");
    }
}
