//! Tool calls written as text by a small model are often JSON with the code's own quotes left
//! unescaped (`"content": "def f():\n    """Doc."""\n"`), raw newlines in strings, or stray
//! backslashes. This repairs such text into JSON when it can tell where each string ends: a
//! key ends at a quote followed by `:`; a value at a quote followed by the end, by `,` and the
//! next `"key":`, or by closing brackets and nothing else. Any other quote inside a string is
//! taken as part of it.

/// The longest key taken as the next key of an object.
const MAX_KEY: usize = 64;

/// `text` repaired into JSON text, or `None` when it has no string to repair or does not
/// start like an object or an array.
pub(crate) fn repair(text: &str) -> Option<String> {
    let chars: Vec<char> = text.trim().chars().collect();
    if !matches!(chars.first(), Some('{' | '[')) {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 16);
    // Whether a string is open, and whether it is a key.
    let mut open: Option<bool> = None;
    // What the last structural character was, to tell a key from a value.
    let mut last = ' ';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match open {
            None => {
                if c == '"' {
                    open = Some(matches!(last, '{' | ','));
                } else if !c.is_whitespace() {
                    last = c;
                }
                out.push(c);
            }
            Some(key) => match c {
                '\\' => match chars.get(i + 1) {
                    Some(&next @ ('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' | 'u')) => {
                        out.push('\\');
                        out.push(next);
                        i += 1;
                    }
                    _ => out.push_str("\\\\"),
                },
                '"' if ends_string(&chars, i + 1, key) => {
                    open = None;
                    last = '"';
                    out.push('"');
                }
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => {}
                c => out.push(c),
            },
        }
        i += 1;
    }
    (open.is_none() && out != text.trim()).then_some(out)
}

/// Whether a quote before `at` ends the string: a key's when `:` follows; a value's when the
/// text ends, or the next key follows a comma, or only closing brackets (and then the end or
/// a comma) follow.
fn ends_string(chars: &[char], at: usize, key: bool) -> bool {
    let next = skip_space(chars, at);
    if key {
        return chars.get(next) == Some(&':');
    }
    match chars.get(next) {
        None => true,
        Some(',') => next_key(chars, next + 1),
        Some('}' | ']') => {
            let mut j = next;
            while matches!(chars.get(j), Some('}' | ']')) {
                j = skip_space(chars, j + 1);
            }
            match chars.get(j) {
                None => true,
                Some(',') => {
                    let after = skip_space(chars, j + 1);
                    matches!(chars.get(after), Some('{' | '[')) || next_key(chars, j + 1)
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether `"name":` starts at `at` (after spaces).
fn next_key(chars: &[char], at: usize) -> bool {
    let start = skip_space(chars, at);
    if chars.get(start) != Some(&'"') {
        return false;
    }
    let name: String = chars
        .iter()
        .skip(start + 1)
        .take(MAX_KEY + 1)
        .take_while(|c| c.is_alphanumeric() || **c == '_' || **c == '-')
        .collect();
    let close = start + 1 + name.chars().count();
    !name.is_empty()
        && chars.get(close) == Some(&'"')
        && chars.get(skip_space(chars, close + 1)) == Some(&':')
}

fn skip_space(chars: &[char], mut at: usize) -> usize {
    while chars.get(at).is_some_and(|c| c.is_whitespace()) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn parsed(text: &str) -> Value {
        serde_json::from_str(&repair(text).expect("repaired")).expect("valid JSON")
    }

    #[test]
    fn unescaped_docstring_quotes_are_kept_in_the_string() {
        let text = r#"{"name": "write", "arguments": {"path": "solution.py", "content": "def f(x):\n    """ Doc "quoted", here. """\n    return {"a": x}\n"}}"#;
        assert_eq!(
            parsed(text),
            json!({"name": "write", "arguments": {"path": "solution.py",
                "content": "def f(x):\n    \"\"\" Doc \"quoted\", here. \"\"\"\n    return {\"a\": x}\n"}})
        );
    }

    #[test]
    fn raw_newlines_tabs_and_stray_backslashes_are_escaped() {
        let text = "{\"name\": \"bash\", \"arguments\": {\"command\": \"grep -E 'a\\d' x\n\tls\"}}";
        assert_eq!(
            parsed(text)["arguments"]["command"],
            "grep -E 'a\\d' x\n\tls"
        );
    }

    #[test]
    fn arrays_of_calls_and_valid_json_are_left_alone_or_repaired_in_place() {
        let text = r#"[{"name": "read", "arguments": {"path": "a "b".txt"}}, {"name": "read", "arguments": {"path": "c"}}]"#;
        let value = parsed(text);
        assert_eq!(value[0]["arguments"]["path"], "a \"b\".txt");
        assert_eq!(value[1]["arguments"]["path"], "c");
        assert!(repair(r#"{"a": "b"}"#).is_none(), "nothing to repair");
        assert!(repair("not json").is_none());
        assert!(repair(r#"{"a": "never closed"#).is_none());
    }
}
