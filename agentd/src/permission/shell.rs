//! Reading a command line as bash would, for the permission rules
//! (docs/architecture.md#permissions-and-modes): every simple command it runs (in lists, pipelines,
//! subshells, `$(...)`, backticks, process substitutions, function bodies, conditions and loops),
//! every redirection, and every assignment that stands alone. The grammar is tree-sitter's bash
//! grammar, the parser Codex uses for the same job; a line it cannot parse whole is reported as
//! such, never guessed at.

use tree_sitter::{Node, Parser};

/// One word of a command after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Word {
    /// Known text: quotes and escapes removed, nothing left to expand.
    Literal(String),
    /// Known text with unquoted glob characters, which the shell may expand to file names.
    Pattern(String),
    /// Text the shell computes when it runs (`$VAR`, `$(...)`, `$'...'`, braces): its source.
    Dynamic(String),
}

impl Word {
    /// The word's text when the shell takes it literally.
    pub(crate) fn literal(&self) -> Option<&str> {
        match self {
            Word::Literal(text) => Some(text),
            _ => None,
        }
    }

    /// The text as it stands: the value of a known word, the source of a computed one.
    pub(crate) fn text(&self) -> &str {
        match self {
            Word::Literal(text) | Word::Pattern(text) | Word::Dynamic(text) => text,
        }
    }

    /// Whether the shell computes this word when it runs.
    pub(crate) fn is_dynamic(&self) -> bool {
        matches!(self, Word::Dynamic(_))
    }
}

/// A simple command: assignments before it, then its words (the program and its arguments).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimpleCommand {
    /// `NAME=value` words before the program, as written.
    pub(crate) assignments: Vec<String>,
    /// The program, then its arguments.
    pub(crate) words: Vec<Word>,
}

/// A redirection of a command's input or output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    /// The file.
    pub(crate) target: Word,
    /// Whether the file is written (`>`, `>>`, `&>`, `>|`, `<>`), not only read.
    pub(crate) writes: bool,
}

/// Everything a command line would run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CommandLine {
    /// Every simple command, in the order they appear.
    pub(crate) commands: Vec<SimpleCommand>,
    /// Every redirection to or from a file (descriptor duplications like `2>&1` are not files).
    pub(crate) redirects: Vec<Redirect>,
    /// Assignments that stand alone (`PATH=...; cmd`): they change what later commands do.
    pub(crate) assignments: Vec<String>,
    /// The variables of `for` and `select` loops: each is set, like an assignment, for the body.
    pub(crate) loop_variables: Vec<String>,
    /// Constructs whose effect the rules cannot see (docs/architecture.md#permissions-and-modes:
    /// arithmetic that may hold code, functions defined on the line): why each is opaque.
    pub(crate) opaque: Vec<String>,
}

/// The parser could not read the line whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the command line could not be parsed as a whole")]
pub(crate) struct Unparsable;

/// The longest command line read; a longer one is not parsed (it asks).
const MAX_LINE: usize = 64 * 1024;

/// Parses `line` as bash.
pub(crate) fn parse(line: &str) -> Result<CommandLine, Unparsable> {
    if line.len() > MAX_LINE {
        return Err(Unparsable);
    }
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .map_err(|_| Unparsable)?;
    let tree = parser.parse(line, None).ok_or(Unparsable)?;
    let root = tree.root_node();
    if root.has_error() {
        return Err(Unparsable);
    }
    let source = line.as_bytes();
    let mut found = CommandLine::default();
    // An explicit stack: a line of deeply nested subshells must not overflow ours. Each node
    // goes with the test (`[[ … ]]` or `[ … ]`) it is inside, if any.
    let mut stack = vec![(root, Test::None)];
    while let Some((node, test)) = stack.pop() {
        match node.kind() {
            "command" => found.commands.push(simple_command(node, source)),
            "declaration_command" | "unset_command" => {
                found.commands.push(declaration(node, source));
            }
            "file_redirect" => {
                if let Some(redirect) = file_redirect(node, source) {
                    found.redirects.push(redirect);
                }
            }
            "variable_assignment" if !is_prefix_assignment(node) => {
                found.assignments.push(text(node, source).to_string());
            }
            "for_statement" => {
                let variable = node.child_by_field_name("variable");
                found
                    .loop_variables
                    .extend(variable.map(|v| text(v, source).to_string()));
            }
            _ => {}
        }
        if let Some(why) = opaque_construct(node, source, test) {
            found.opaque.push(why);
        }
        let test = match node.kind() {
            "test_command" if text(node, source).starts_with("[[") => Test::Double,
            "test_command" => Test::Single,
            _ => test,
        };
        // Later commands are found inside these nodes too (substitutions in arguments,
        // bodies of compound commands); pushed in reverse so they come out in order.
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev().map(|child| (child, test)));
    }
    Ok(found)
}

/// The test a node is inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Test {
    None,
    /// `[ … ]`, `test …`
    Single,
    /// `[[ … ]]`
    Double,
}

/// Why a syntax node hides what it runs, if it does. Bash evaluates arithmetic (`$(( ))`,
/// `(( ))`, `for ((;;))`, `[[ a -eq b ]]`, array subscripts, `${x:offset}`) recursively: a
/// variable or a quoted string there can hold `a[$(command)]`, which runs the command; so do
/// `${!name}` (the name may hold a subscript) and `${x@P}` (prompt expansion).
fn opaque_construct(node: Node, source: &[u8], test: Test) -> Option<String> {
    let raw = text(node, source);
    match node.kind() {
        "function_definition" => Some("it defines a function".into()),
        "c_style_for_statement" => Some("an arithmetic `for ((…))` loop".into()),
        "arithmetic_expansion" if !plain_arithmetic(raw) => {
            Some(format!("arithmetic `{raw}` that is not only numbers"))
        }
        "compound_statement" if raw.starts_with("((") && !plain_arithmetic(raw) => {
            Some(format!("arithmetic `{raw}` that is not only numbers"))
        }
        "subscript" => {
            let index = node.child_by_field_name("index").map(|i| text(i, source));
            (!index.is_some_and(plain_subscript))
                .then(|| format!("an array subscript `{raw}` that is not a number"))
        }
        "expansion" => expansion_opaque(raw),
        "binary_expression" if test == Test::Double => {
            let operator = node
                .child_by_field_name("operator")
                .map(|o| text(o, source))
                .unwrap_or_default();
            let arithmetic = matches!(operator, "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge");
            let plain = ["left", "right"].iter().all(|side| {
                node.child_by_field_name(side)
                    .is_some_and(|o| o.kind() == "number")
            });
            (arithmetic && !plain)
                .then(|| format!("`[[ {raw} ]]` compares as arithmetic what is not a number"))
        }
        "unary_expression" if test != Test::None => {
            let operator = node
                .child_by_field_name("operator")
                .map(|o| text(o, source))
                .unwrap_or_default();
            (matches!(operator, "-v" | "-R") && raw.contains('['))
                .then(|| format!("the test `{raw}` evaluates an array subscript"))
        }
        _ => None,
    }
}

/// Why a parameter expansion `${…}` evaluates code, if it does.
fn expansion_opaque(raw: &str) -> Option<String> {
    let inner = raw.strip_prefix("${")?.strip_suffix('}')?;
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    if let Some(name) = inner.strip_prefix('!') {
        // `${!prefix*}` and `${!array[@]}` list names; any other `${!x}` reads the variable x
        // names, and that name may hold a subscript.
        let listing = name
            .strip_suffix(['*', '@'])
            .is_some_and(|n| n.chars().all(word))
            || name
                .strip_suffix("[@]")
                .or_else(|| name.strip_suffix("[*]"))
                .is_some_and(|n| n.chars().all(word));
        return (!listing).then(|| format!("`{raw}` reads a variable by a name it computes"));
    }
    let inner = inner.strip_prefix('#').unwrap_or(inner);
    let name_len = if inner.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        inner.find(|c: char| !word(c)).unwrap_or(inner.len())
    } else {
        inner.chars().next().map_or(0, char::len_utf8)
    };
    let mut rest = inner.get(name_len..).unwrap_or_default();
    // A subscript is looked at as a node of its own.
    if rest.starts_with('[') {
        rest = rest.split_once(']').map_or("", |(_, after)| after);
    }
    if let Some(op) = rest.strip_prefix('@') {
        return op
            .starts_with('P')
            .then(|| format!("`{raw}` expands a prompt, which runs substitutions"));
    }
    let offsets = rest.strip_prefix(':')?;
    if offsets.starts_with(['-', '=', '?', '+']) {
        return None;
    }
    (!plain_arithmetic(offsets)).then(|| format!("`{raw}` evaluates its offset as arithmetic"))
}

/// Arithmetic of numbers and operators only: nothing bash would look up or expand.
fn plain_arithmetic(raw: &str) -> bool {
    let inner = raw
        .trim_start_matches('$')
        .trim_start_matches("((")
        .trim_start_matches('[')
        .trim_end_matches("))")
        .trim_end_matches(']');
    inner
        .chars()
        .all(|c| c.is_ascii_digit() || c.is_whitespace() || "+-*/%()<>=!&|^~?:,".contains(c))
}

/// A subscript bash does not evaluate as code: a number, `@` or `*`.
pub(crate) fn plain_subscript(index: &str) -> bool {
    index == "@" || index == "*" || (!index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()))
}

fn text<'a>(node: Node, source: &'a [u8]) -> &'a str {
    node.utf8_text(source).unwrap_or_default()
}

fn is_prefix_assignment(node: Node) -> bool {
    node.parent().is_some_and(|p| p.kind() == "command")
}

fn simple_command(node: Node, source: &[u8]) -> SimpleCommand {
    let mut assignments = Vec::new();
    let mut words = Vec::new();
    let mut cursor = node.walk();
    for (i, child) in node.children(&mut cursor).enumerate() {
        match node.field_name_for_child(i as u32) {
            Some("name") | Some("argument") => words.push(word(child, source)),
            Some("redirect") => {}
            _ if child.kind() == "variable_assignment" => {
                assignments.push(text(child, source).to_string());
            }
            _ => {}
        }
    }
    SimpleCommand { assignments, words }
}

/// `export`, `declare`, `local`, `readonly`, `typeset`, `unset`: the keyword, then its words.
fn declaration(node: Node, source: &[u8]) -> SimpleCommand {
    let mut cursor = node.walk();
    let words = node
        .children(&mut cursor)
        .map(|child| match child.kind() {
            "variable_assignment" | "variable_name" => {
                Word::Literal(text(child, source).to_string())
            }
            _ if !child.is_named() => Word::Literal(text(child, source).to_string()),
            _ => word(child, source),
        })
        .collect();
    SimpleCommand {
        assignments: Vec::new(),
        words,
    }
}

fn file_redirect(node: Node, source: &[u8]) -> Option<Redirect> {
    let target = node.child_by_field_name("destination")?;
    let mut cursor = node.walk();
    let operator = node
        .children(&mut cursor)
        .find(|c| !c.is_named())
        .map(|c| text(c, source).to_string())
        .unwrap_or_default();
    let target = word(target, source);
    // `>&2`, `2>&1`, `<&-`: descriptors, not files.
    let descriptor = target
        .literal()
        .is_some_and(|t| t == "-" || (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())));
    if matches!(operator.as_str(), ">&" | "<&" | ">&-" | "<&-") && descriptor {
        return None;
    }
    let writes = operator.contains('>') || operator == "<>";
    Some(Redirect { target, writes })
}

/// The value of one word node after quote removal.
fn word(node: Node, source: &[u8]) -> Word {
    let raw = text(node, source);
    match node.kind() {
        "command_name" => match node.named_child(0) {
            Some(inner) => word(inner, source),
            None => Word::Dynamic(raw.to_string()),
        },
        "word" => {
            let value = unescape(raw, |_| true);
            if has_unquoted_glob(raw) {
                Word::Pattern(value)
            } else {
                Word::Literal(value)
            }
        }
        "number" => Word::Literal(raw.to_string()),
        "raw_string" => Word::Literal(
            raw.strip_prefix('\'')
                .and_then(|r| r.strip_suffix('\''))
                .unwrap_or(raw)
                .to_string(),
        ),
        "string" => {
            let mut cursor = node.walk();
            let plain = node
                .named_children(&mut cursor)
                .all(|c| c.kind() == "string_content");
            if plain {
                let inner = raw
                    .strip_prefix('"')
                    .and_then(|r| r.strip_suffix('"'))
                    .unwrap_or(raw);
                Word::Literal(unescape(inner, |c| {
                    matches!(c, '$' | '`' | '"' | '\\' | '\n')
                }))
            } else {
                Word::Dynamic(raw.to_string())
            }
        }
        "concatenation" => {
            let mut cursor = node.walk();
            let parts: Vec<Word> = node
                .named_children(&mut cursor)
                .map(|c| word(c, source))
                .collect();
            if parts.iter().any(Word::is_dynamic) {
                return Word::Dynamic(raw.to_string());
            }
            let joined: String = parts.iter().map(Word::text).collect();
            if parts.iter().any(|p| matches!(p, Word::Pattern(_))) {
                Word::Pattern(joined)
            } else {
                Word::Literal(joined)
            }
        }
        _ => Word::Dynamic(raw.to_string()),
    }
}

/// Removes the backslashes that escape a character `escapes` accepts; a backslash before a
/// newline joins the lines.
fn unescape(text: &str, escapes: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\n') => {}
            Some(next) if escapes(next) => out.push(next),
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    out
}

fn has_unquoted_glob(raw: &str) -> bool {
    let mut escaped = false;
    for c in raw.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs(line: &str) -> Vec<String> {
        parse(line)
            .unwrap()
            .commands
            .iter()
            .map(|c| {
                c.words
                    .first()
                    .map(|w| w.text().to_string())
                    .unwrap_or_default()
            })
            .collect()
    }

    #[test]
    fn every_simple_command_is_found_wherever_it_hides() {
        assert_eq!(programs("cargo test; touch X"), ["cargo", "touch"]);
        assert_eq!(programs("a && b || c | d & e"), ["a", "b", "c", "d", "e"]);
        assert_eq!(programs("cargo test $(touch X)"), ["cargo", "touch"]);
        assert_eq!(programs("cargo test `touch X`"), ["cargo", "touch"]);
        assert_eq!(programs("(cd x && rm y)"), ["cd", "rm"]);
        assert_eq!(programs("diff <(ls a) <(ls b)"), ["diff", "ls", "ls"]);
        assert_eq!(programs("cargo test\ntouch X"), ["cargo", "touch"]);
        assert_eq!(programs("if true; then rm x; fi"), ["true", "rm"]);
        assert_eq!(programs("for f in *; do rm $f; done"), ["rm"]);
        assert_eq!(programs("f() { rm -rf /; }; f"), ["rm", "f"]);
        assert_eq!(programs("echo \"$(rm x)\""), ["echo", "rm"]);
        assert_eq!(programs("X=$(rm x)"), ["rm"]);
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        let line = parse(r#""rm" 'a b' c\ d r\m "x\"y" $HOME pre"$X" *.rs"#).unwrap();
        let words = &line.commands[0].words;
        assert_eq!(words[0], Word::Literal("rm".into()));
        assert_eq!(words[1], Word::Literal("a b".into()));
        assert_eq!(words[2], Word::Literal("c d".into()));
        assert_eq!(words[3], Word::Literal("rm".into()));
        assert_eq!(words[4], Word::Literal("x\"y".into()));
        assert!(words[5].is_dynamic());
        assert!(words[6].is_dynamic());
        assert_eq!(words[7], Word::Pattern("*.rs".into()));
    }

    #[test]
    fn redirections_and_assignments_are_reported() {
        let line = parse("X=1; Y=2 cargo test > out.txt 2>&1 < in.txt >> /tmp/log").unwrap();
        assert_eq!(line.assignments, ["X=1"]);
        assert_eq!(line.commands[0].assignments, ["Y=2"]);
        let targets: Vec<(&str, bool)> = line
            .redirects
            .iter()
            .map(|r| (r.target.text(), r.writes))
            .collect();
        assert_eq!(
            targets,
            [("out.txt", true), ("in.txt", false), ("/tmp/log", true)]
        );
    }

    #[test]
    fn what_cannot_be_parsed_is_said() {
        assert_eq!(parse("echo \"unterminated"), Err(Unparsable));
        assert_eq!(parse("cargo test )"), Err(Unparsable));
    }

    #[test]
    fn expansions_that_evaluate_code_are_opaque() {
        for line in [
            "ls ${x@P}",
            "ls ${!x}",
            "ls ${PWD:x:1}",
            "ls ${x:+${PWD:x}}",
            "ls ${a[$i]}",
            "[[ $x -eq 1 ]]",
            "[ -v 'a[$(id)]' ]",
        ] {
            assert!(!parse(line).unwrap().opaque.is_empty(), "{line}");
        }
        for line in [
            "ls ${x}",
            "ls ${x:-d}",
            "ls ${x:1:2}",
            "ls ${#x}",
            "ls ${!a[@]}",
            "ls ${x@Q}",
            "[ $x -eq 1 ]",
            "[[ 1 -eq 1 ]]",
        ] {
            assert!(parse(line).unwrap().opaque.is_empty(), "{line}");
        }
    }

    #[test]
    fn a_long_chain_of_tests_is_read_in_linear_time() {
        let line = format!("[[ {} ]]", vec!["1 -eq 1"; 4000].join(" && "));
        // Once cubic, this took minutes and held the session's actor.
        assert!(parse(&line).is_ok());
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let line = format!("{}true{}", "(".repeat(5000), ")".repeat(5000));
        // Either answer is fine; not crashing is the point.
        let _ = parse(&line);
    }
}
