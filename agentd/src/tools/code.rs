//! `code`: questions to the language server of a file (docs/architecture.md#tools): where a
//! name is defined, where it is used, its type and docs, the symbols of a file or of the
//! workspace. The model names the symbol on a line and the tool finds its column, since models
//! miscount columns. Offered only when a server covers the session's files.

use std::path::Path;

use lsp_types::request::{
    DocumentSymbolRequest, GotoDefinition, HoverRequest, References, WorkspaceSymbolRequest,
};
use lsp_types::{
    DocumentSymbolParams, GotoDefinitionParams, HoverParams, PartialResultParams, Position,
    ReferenceContext, ReferenceParams, TextDocumentIdentifier, TextDocumentPositionParams, Url,
    WorkDoneProgressParams, WorkspaceSymbolParams,
};
use serde::Deserialize;
use serde_json::json;

use super::code_answer::{self, Answer};
use super::{ToolContext, ToolOutput, display, resolve};
use crate::lsp::FileText;
use crate::lsp::query::Asking;
use crate::tool_spec::ToolSpec;

/// The largest file the tool asks about.
/// Lines around the named one searched for a symbol that is not on it.
const NEARBY_LINES: usize = 5;

/// The model's description of `code`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "code".into(),
        description: "Ask the language server about code. `definition`: where the symbol is \
                      defined; `references`: where it is used; `hover`: its type and docs; \
                      `document_symbols`: the symbols of the file; `workspace_symbols`: symbols \
                      matching `query` in the project. Give `path`, `line` (1-based) and `symbol` \
                      (the name as written on that line); `column` only to pick one of several \
                      uses of the name on the line. Answers list path:line:col and the line."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": ["definition", "references", "hover", "document_symbols", "workspace_symbols"], "description": "What to ask."},
                "path": {"type": "string", "description": "The file (for workspace_symbols: any file of the language)."},
                "line": {"type": "integer", "minimum": 1, "description": "The line the symbol is on (1-based)."},
                "symbol": {"type": "string", "description": "The name on that line to ask about."},
                "column": {"type": "integer", "minimum": 1, "description": "The symbol's column (1-based characters), to choose among several uses on the line."},
                "query": {"type": "string", "description": "For workspace_symbols: the name or part of it."}
            },
            "required": ["operation"]
        }),
    }
}

/// What the model asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Operation {
    /// Where the symbol is defined.
    Definition,
    /// Where it is used.
    References,
    /// Its type and docs.
    Hover,
    /// The file's symbols.
    DocumentSymbols,
    /// The project's symbols matching a query.
    WorkspaceSymbols,
}

/// The arguments of `code`.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {
    operation: Operation,
    path: Option<String>,
    line: Option<usize>,
    symbol: Option<String>,
    column: Option<usize>,
    query: Option<String>,
}

/// Asks the server and answers as text.
pub(crate) async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    match ask(args, &ctx).await {
        Ok(text) => ToolOutput::ok(text),
        Err(message) => ToolOutput::error(message),
    }
}

/// The answer, or an error for the model.
async fn ask(args: Args, ctx: &ToolContext) -> Result<String, String> {
    let Some(hub) = ctx.lsp.clone() else {
        return Err("no language servers in this session; use grep".to_string());
    };
    let path = match (&args.path, args.operation) {
        (Some(path), _) => resolve(&ctx.cwd, path),
        (None, Operation::WorkspaceSymbols) => hub
            .covered_file(&ctx.cwd, &ctx.env)
            .ok_or("no language server covers the files here; use grep")?,
        (None, _) => return Err("give `path`: the file to ask about".to_string()),
    };
    let shown = display(&ctx.cwd, &path);
    if !hub.serves(&path, &ctx.env) {
        return Err(format!("no language server covers {shown}; use grep"));
    }
    if let Some(why) = ctx.hidden.refusal(&path) {
        return Err(format!("refused: {why}"));
    }
    let text = read_text(&path, ctx)
        .await
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    let asking = {
        let file = FileText {
            path: &path,
            text: &text,
            cwd: &ctx.cwd,
            env: &ctx.env,
        };
        tokio::select! {
            asking = hub.asking(file) => asking?,
            () = ctx.cancel.cancelled() => return Err("cancelled".to_string()),
        }
    };
    let uri = Url::from_file_path(&path).map_err(|()| format!("{shown} is not a file path"))?;
    let answer = tokio::select! {
        answer = question(&asking, &args, uri, &text, &shown) => answer?,
        () = ctx.cancel.cancelled() => return Err("cancelled".to_string()),
    };
    Ok(code_answer::describe(answer, &asking, &shown, ctx).await)
}

/// Asks the server `args.operation` about the file at `uri` holding `text`.
async fn question(
    asking: &Asking,
    args: &Args,
    uri: Url,
    text: &str,
    shown: &str,
) -> Result<Answer, String> {
    let document = TextDocumentIdentifier::new(uri);
    let progress = WorkDoneProgressParams::default();
    let partial = PartialResultParams::default();
    match args.operation {
        Operation::DocumentSymbols => {
            let params = DocumentSymbolParams {
                text_document: document,
                work_done_progress_params: progress,
                partial_result_params: partial,
            };
            Ok(Answer::Symbols(
                asking.ask::<DocumentSymbolRequest>(params).await?,
            ))
        }
        Operation::WorkspaceSymbols => {
            let query = args
                .query
                .clone()
                .or_else(|| args.symbol.clone())
                .ok_or("give `query`: the name (or part of it) to find")?;
            let params = WorkspaceSymbolParams {
                query,
                work_done_progress_params: progress,
                partial_result_params: partial,
            };
            Ok(Answer::Workspace(
                asking.ask::<WorkspaceSymbolRequest>(params).await?,
            ))
        }
        operation => {
            let (line, column) = position(text, args, shown)?;
            let line_text = text.lines().nth(line).unwrap_or_default();
            let at = TextDocumentPositionParams {
                text_document: document,
                position: Position::new(
                    u32::try_from(line).unwrap_or(u32::MAX),
                    asking.encoding().to_units(line_text, column),
                ),
            };
            match operation {
                Operation::Definition => {
                    let params = GotoDefinitionParams {
                        text_document_position_params: at,
                        work_done_progress_params: progress,
                        partial_result_params: partial,
                    };
                    Ok(Answer::Definition(
                        asking.ask::<GotoDefinition>(params).await?,
                    ))
                }
                Operation::References => {
                    let params = ReferenceParams {
                        text_document_position: at,
                        work_done_progress_params: progress,
                        partial_result_params: partial,
                        context: ReferenceContext {
                            include_declaration: true,
                        },
                    };
                    Ok(Answer::References(asking.ask::<References>(params).await?))
                }
                _ => {
                    let params = HoverParams {
                        text_document_position_params: at,
                        work_done_progress_params: progress,
                    };
                    Ok(Answer::Hover(asking.ask::<HoverRequest>(params).await?))
                }
            }
        }
    }
}

/// Reads `path` as UTF-8 text for the tool (hidden files refused).
async fn read_text(path: &Path, ctx: &ToolContext) -> Result<String, String> {
    let (reading, hidden) = (path.to_path_buf(), ctx.hidden.clone());
    let (bytes, more) = tokio::task::spawn_blocking(move || {
        super::read_visible(&reading, &hidden, crate::lsp::MAX_FILE_BYTES)
    })
    .await
    .map_err(|e| e.to_string())??;
    if more {
        return Err(format!(
            "larger than {} MiB; use grep",
            crate::lsp::MAX_FILE_BYTES >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text; use grep".to_string())
}

/// The 0-based line and character column the model means: `line`, and the column of
/// `symbol` on it (the use nearest `column` when the name is there more than once), or
/// `column` alone.
pub(crate) fn position(text: &str, args: &Args, shown: &str) -> Result<(usize, usize), String> {
    let line = args
        .line
        .ok_or("give `line` (1-based) and `symbol`, the name on that line")?;
    let lines: Vec<&str> = text.lines().collect();
    let Some(line_text) = line.checked_sub(1).and_then(|l| lines.get(l)) else {
        return Err(format!(
            "{shown} has {} lines; there is no line {line}",
            lines.len()
        ));
    };
    let wanted = args.column.map(|c| c.saturating_sub(1));
    let Some(symbol) = args.symbol.as_deref().filter(|s| !s.trim().is_empty()) else {
        return match wanted {
            Some(column) => Ok((line - 1, column.min(line_text.chars().count()))),
            None => Err("give `symbol`: the name on that line to ask about".to_string()),
        };
    };
    let found = columns_of(line_text, symbol.trim());
    let best = found
        .iter()
        .copied()
        .min_by_key(|c| wanted.map_or(0, |w| c.abs_diff(w)));
    if let Some(column) = best {
        return Ok((line - 1, column));
    }
    let shown_line: String = line_text.trim().chars().take(200).collect();
    let mut message =
        format!("`{symbol}` is not on line {line} of {shown}: that line reads `{shown_line}`");
    let near: Vec<String> = (line.saturating_sub(NEARBY_LINES)..=line + NEARBY_LINES)
        .filter(|&n| n >= 1 && n != line)
        .filter(|&n| {
            lines
                .get(n - 1)
                .is_some_and(|l| !columns_of(l, symbol.trim()).is_empty())
        })
        .map(|n| n.to_string())
        .collect();
    if !near.is_empty() {
        message.push_str(&format!("; it is on line {} nearby", near.join(", ")));
    }
    Err(message)
}

/// The character columns (0-based) where `symbol` starts on `line` as a whole name (not part
/// of a longer one); where it appears only inside longer names, those places.
pub(crate) fn columns_of(line: &str, symbol: &str) -> Vec<usize> {
    let chars: Vec<char> = line.chars().collect();
    let wanted: Vec<char> = symbol.chars().collect();
    if wanted.is_empty() || wanted.len() > chars.len() {
        return Vec::new();
    }
    let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric() || *c == '_');
    let mut whole = Vec::new();
    let mut inside = Vec::new();
    for start in 0..=chars.len() - wanted.len() {
        if chars[start..start + wanted.len()] != wanted[..] {
            continue;
        }
        let before = start.checked_sub(1).and_then(|b| chars.get(b));
        let after = chars.get(start + wanted.len());
        let bounded_start = !word(wanted.first()) || !word(before);
        let bounded_end = !word(wanted.last()) || !word(after);
        if bounded_start && bounded_end {
            whole.push(start);
        } else {
            inside.push(start);
        }
    }
    if whole.is_empty() { inside } else { whole }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: usize, symbol: Option<&str>, column: Option<usize>) -> Args {
        Args {
            operation: Operation::Definition,
            path: None,
            line: Some(line),
            symbol: symbol.map(str::to_string),
            column,
            query: None,
        }
    }

    #[test]
    fn a_symbol_is_found_as_a_whole_name() {
        assert_eq!(columns_of("print(add(x, 2))", "add"), vec![6]);
        assert_eq!(columns_of("x = padding + add", "add"), vec![14]);
        assert_eq!(columns_of("é = add(é)", "é"), vec![0, 8]);
        // Only inside a longer name: those places.
        assert_eq!(columns_of("adder()", "add"), vec![0]);
        assert!(columns_of("nothing", "add").is_empty());
        assert!(columns_of("", "add").is_empty());
    }

    #[test]
    fn the_column_picks_among_several_uses_and_misses_are_explained() {
        let text = "def add(a, b):\n    return a + b\n\nx = add(add(1, 2), 3)\n";
        assert_eq!(
            position(text, &args(1, Some("add"), None), "m.py"),
            Ok((0, 4))
        );
        assert_eq!(
            position(text, &args(4, Some("add"), None), "m.py"),
            Ok((3, 4))
        );
        assert_eq!(
            position(text, &args(4, Some("add"), Some(9)), "m.py"),
            Ok((3, 8))
        );
        assert_eq!(
            position(text, &args(2, None, Some(12)), "m.py"),
            Ok((1, 11))
        );
        let missing = position(text, &args(2, Some("add"), None), "m.py").unwrap_err();
        assert_eq!(
            missing,
            "`add` is not on line 2 of m.py: that line reads `return a + b`; it is on line 1, 4 nearby"
        );
        let beyond = position(text, &args(9, Some("add"), None), "m.py").unwrap_err();
        assert!(beyond.contains("has 4 lines"), "{beyond}");
        let neither = position(text, &args(1, None, None), "m.py").unwrap_err();
        assert!(neither.contains("give `symbol`"), "{neither}");
    }
}
