//! How a change to a file looks on the terminal: git-style unified diff lines, colored (added
//! green, removed red, hunk headers cyan, file headers bold), and a tool's change cut to a few
//! lines with a note of the rest.

use serde_json::Value;

use crate::style::Style;

/// The most diff lines shown under an `edit` or `write` result.
pub const SHOWN_LINES: usize = 40;

/// One line of a unified diff, colored by its kind.
pub fn colored(line: &str, style: Style) -> String {
    let line = &*crate::style::printable(line);
    if line.starts_with("diff --git")
        || line.starts_with("index ")
        || line.starts_with("--- ")
        || line.starts_with("+++ ")
        || line.starts_with("new file")
        || line.starts_with("deleted file")
    {
        style.bold(line)
    } else if line.starts_with("@@") {
        style.cyan(line)
    } else if line.starts_with('+') {
        style.green(line)
    } else if line.starts_with('-') {
        style.red(line)
    } else {
        line.to_string()
    }
}

/// The diff lines to show under a successful `edit` or `write` call: the diff its result
/// carries (without the file header), or for a new file its first lines as added ones.
pub fn tool_change(name: &str, args: &str, output: &str, style: Style) -> Vec<String> {
    let diff: Vec<&str> = output
        .lines()
        .skip_while(|l| !l.starts_with("@@"))
        .collect();
    let lines: Vec<String> = if !diff.is_empty() {
        diff.iter().map(|l| l.to_string()).collect()
    } else if name == "write" && output.starts_with("Created") {
        let args: Value = serde_json::from_str(args).unwrap_or(Value::Null);
        let content = args["content"].as_str().unwrap_or_default();
        content.lines().map(|l| format!("+{l}")).collect()
    } else {
        return Vec::new();
    };
    let total = lines.len();
    let mut shown: Vec<String> = lines
        .iter()
        .take(SHOWN_LINES)
        .map(|l| format!("  {}", colored(l, style)))
        .collect();
    if total > SHOWN_LINES {
        shown.push(style.dim(&format!(
            "  … {} more lines (`agentctl diff` shows the run's changes)",
            total - SHOWN_LINES
        )));
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_shows_its_hunks_and_a_new_file_its_lines() {
        let plain = Style::plain();
        let output = "Edited a.rs\n--- a.rs\n+++ a.rs\n@@ -1 +1 @@\n-let x = 1;\n+let x = 2;\n";
        assert_eq!(
            tool_change("edit", "{}", output, plain),
            ["  @@ -1 +1 @@", "  -let x = 1;", "  +let x = 2;"]
        );
        let args = r#"{"path":"n.txt","content":"one\ntwo\n"}"#;
        let created = tool_change("write", args, "Created n.txt (2 lines, 8 bytes)", plain);
        assert_eq!(created, ["  +one", "  +two"]);
        let long: String = (0..100).map(|i| format!("+{i}\n")).collect();
        let cut = tool_change(
            "edit",
            "{}",
            &format!("Edited x\n@@ -0,0 +1,100 @@\n{long}"),
            plain,
        );
        assert_eq!(cut.len(), SHOWN_LINES + 1);
        assert!(cut.last().unwrap().contains("61 more lines"));
    }
}
