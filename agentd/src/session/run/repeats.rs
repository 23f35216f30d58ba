//! Calls a model repeats: the same call, with the same arguments, that gives the same result as
//! before (a read of a file that did not change, the same failing command) is answered with a
//! note that nothing changed and what to do instead. A long result is not sent again: the
//! earlier one is still in the conversation, until a compaction forgets it.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use crate::conversation::ToolCall;
use crate::tools::ToolOutput;

/// Results up to this many bytes are sent again, with the note after them.
const SHORT_RESULT: usize = 600;

/// What one call gave the last time it was made.
#[derive(Debug, Clone, Copy)]
struct Seen {
    turn: u32,
    result: u64,
}

/// The results of one run's calls, by call.
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    seen: Mutex<HashMap<(String, String), Seen>>,
    /// Calls of the current reply answered as unchanged repeats, and calls in all.
    batch: Mutex<(usize, usize)>,
}

impl Repeats {
    /// The output of `call` made in `turn`: `output` itself, or, when the same call gave the
    /// same output before, the note that says so (after the output when it is short).
    pub(crate) fn answer(&self, call: &ToolCall, turn: u32, output: ToolOutput) -> ToolOutput {
        let key = (call.name.clone(), normalized(&call.name, &call.args));
        let result = digest(&output);
        let before = self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, Seen { turn, result });
        let mut batch = self.batch.lock().unwrap_or_else(|e| e.into_inner());
        batch.1 += 1;
        let Some(before) = before.filter(|b| b.result == result) else {
            return output;
        };
        batch.0 += 1;
        let note = note(&call.name, before.turn);
        let text = if output.output.len() <= SHORT_RESULT {
            format!("{}\n\n({note})", output.output)
        } else {
            format!("({note} The result is the one shown there.)")
        };
        ToolOutput {
            output: text,
            is_error: output.is_error,
            images: Vec::new(),
        }
    }

    /// Starts counting a new reply's calls.
    pub(crate) fn new_reply(&self) {
        *self.batch.lock().unwrap_or_else(|e| e.into_inner()) = (0, 0);
    }

    /// Whether every call of the current reply gave what it gave before.
    pub(crate) fn all_unchanged(&self) -> bool {
        let (same, all) = *self.batch.lock().unwrap_or_else(|e| e.into_inner());
        all > 0 && same == all
    }

    /// Forgets every result: the conversation was compacted, so the earlier results are gone.
    pub(crate) fn forget(&self) {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// What the model is told of a repeated call: that nothing changed, and what to do instead.
fn note(tool: &str, turn: u32) -> String {
    let instead = match tool {
        "read" => {
            "You already have this file's content: use it to take the next step (change it with \
             edit or write) or to answer the user. Do not read it again."
        }
        "bash" => {
            "Running it again gives the same output: change something first, or use this output \
             to answer the user."
        }
        _ => "Do not call it again: use that result to take the next step or to answer the user.",
    };
    let when = if turn == 0 {
        "before your first reply".to_string()
    } else {
        format!("in turn {turn}")
    };
    format!(
        "Nothing changed: this is the same {tool} call made {when}, with the same result. {instead}"
    )
}

/// Arguments compared by value, so key order, spacing and a `read`'s default window spelt out
/// do not hide a repeat.
fn normalized(tool: &str, args: &str) -> String {
    if tool != "read" {
        return crate::health::normalized_args(args);
    }
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(args) else {
        return args.to_string();
    };
    if let Some(object) = value.as_object_mut() {
        if object.get("offset").and_then(|v| v.as_u64()) == Some(1) {
            object.remove("offset");
        }
        let limit = crate::tools::read::DEFAULT_LIMIT as u64;
        if object.get("limit").and_then(|v| v.as_u64()) == Some(limit) {
            object.remove("limit");
        }
    }
    value.to_string()
}

fn digest(output: &ToolOutput) -> u64 {
    let mut hasher = DefaultHasher::new();
    output.is_error.hash(&mut hasher);
    output.output.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(args: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: "read".into(),
            args: args.into(),
        }
    }

    #[test]
    fn the_same_call_with_the_same_result_is_answered_with_a_note() {
        let repeats = Repeats::default();
        let long = "x".repeat(SHORT_RESULT + 1);
        let first = repeats.answer(&call(r#"{"path":"a"}"#), 1, ToolOutput::ok(long.clone()));
        assert_eq!(first.output, long);
        repeats.new_reply();
        let again = repeats.answer(&call(r#"{ "path": "a" }"#), 2, ToolOutput::ok(long.clone()));
        assert!(
            again.output.starts_with("(Nothing changed"),
            "{}",
            again.output
        );
        assert!(again.output.contains("turn 1"));
        assert!(!again.output.contains(&long));
        assert!(repeats.all_unchanged());
        // A changed result is sent whole.
        repeats.new_reply();
        let changed = repeats.answer(&call(r#"{"path":"a"}"#), 3, ToolOutput::ok("new"));
        assert_eq!(changed.output, "new");
        assert!(!repeats.all_unchanged());
        // A short one keeps its text before the note; after a compaction nothing is known.
        let short = repeats.answer(&call(r#"{"path":"a"}"#), 4, ToolOutput::error("new"));
        assert_eq!(short.output, "new", "an error differs from a success");
        let short = repeats.answer(&call(r#"{"path":"a"}"#), 5, ToolOutput::error("new"));
        assert!(short.output.starts_with("new\n\n(Nothing changed"));
        assert!(short.is_error);
        repeats.forget();
        let forgotten = repeats.answer(&call(r#"{"path":"a"}"#), 6, ToolOutput::error("new"));
        assert_eq!(forgotten.output, "new");
    }
}
