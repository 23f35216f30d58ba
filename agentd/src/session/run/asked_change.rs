//! Whether a user's message asks for a change (to files, or by running something), so that a
//! run that completes without changing a file or running a command is not reported as done.
//! Read from the words: a request ("fix…", "add…", "can you update…") asks for a change; a
//! question ("how do I fix…?", "tell me…") or an explicit "don't change anything" does not.

/// Verbs that ask for a change when they lead a request.
const CHANGE_VERBS: &[&str] = &[
    "add",
    "append",
    "apply",
    "bump",
    "change",
    "clean",
    "complete",
    "convert",
    "correct",
    "create",
    "delete",
    "edit",
    "extract",
    "finish",
    "fix",
    "format",
    "generate",
    "implement",
    "improve",
    "insert",
    "install",
    "make",
    "merge",
    "migrate",
    "modify",
    "move",
    "optimise",
    "optimize",
    "patch",
    "port",
    "refactor",
    "remove",
    "rename",
    "replace",
    "resolve",
    "rewrite",
    "scaffold",
    "set",
    "solve",
    "split",
    "translate",
    "update",
    "upgrade",
    "write",
];

/// Words that open a question rather than a request.
const QUESTION_WORDS: &[&str] = &[
    "how",
    "what",
    "why",
    "where",
    "which",
    "who",
    "when",
    "is",
    "are",
    "does",
    "do",
    "should",
    "explain",
    "describe",
    "summarize",
    "summarise",
    "tell",
    "show",
    "list",
    "review",
];

/// Phrases that rule a change out.
const NO_CHANGE: &[&str] = &[
    "don't change",
    "do not change",
    "don't edit",
    "do not edit",
    "don't modify",
    "do not modify",
    "without changing",
    "without modifying",
    "no changes",
    "read-only",
    "read only",
];

/// Whether `message` asks for a change. Files attached to it (`<file …>` blocks) are not read.
pub(crate) fn asks_for_change(message: &str) -> bool {
    let text = without_attached_files(message).to_lowercase();
    if NO_CHANGE.iter().any(|p| text.contains(p)) {
        return false;
    }
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    if !words.iter().any(|w| CHANGE_VERBS.contains(w)) {
        return false;
    }
    // "How do I fix this?" asks; "Can you fix this?" and "Fix this." request.
    let question =
        text.trim_end().ends_with('?') && words.first().is_some_and(|w| QUESTION_WORDS.contains(w));
    let opens_with_question =
        words.first().is_some_and(|w| QUESTION_WORDS.contains(w)) && !question;
    !question && (!opens_with_question || leads_a_clause(&words))
}

/// Whether a change verb opens one of the message's clauses ("Read x and fix y", "then add…").
fn leads_a_clause(words: &[&str]) -> bool {
    words.windows(2).any(|pair| {
        matches!(pair[0], "and" | "then" | "please" | "also") && CHANGE_VERBS.contains(&pair[1])
    })
}

/// `message` without the `<file path="…">…</file>` blocks that `@path` mentions attach.
pub(super) fn without_attached_files(message: &str) -> String {
    let mut out = String::new();
    let mut rest = message;
    while let Some(start) = rest.find("<file path=") {
        out.push_str(rest.get(..start).unwrap_or_default());
        let opened = rest.get(start..).unwrap_or_default();
        match opened.find("</file>") {
            Some(end) => rest = opened.get(end + "</file>".len()..).unwrap_or_default(),
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_ask_and_questions_do_not() {
        for yes in [
            "fix the failing test",
            "solution.py has a function `f` whose body is not written yet. Implement it so that it does what its docstring says. Edit solution.py in place.",
            "Can you add a --verbose flag?",
            "please rename foo to bar",
            "Read main.rs and then update the version",
            "Show the config and fix the typo in it",
        ] {
            assert!(asks_for_change(yes), "{yes}");
        }
        for no in [
            "Read README.md and tell me the start command.",
            "How do I fix this error?",
            "What does this function do?",
            "explain the build, don't change anything",
            "go",
            "Summarize the changes since yesterday",
            "<file path=\"a.md\">fix everything</file> what is this file?",
        ] {
            assert!(!asks_for_change(no), "{no}");
        }
    }
}
