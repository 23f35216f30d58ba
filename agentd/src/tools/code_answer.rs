//! The `code` tool's answers as the model reads them: locations as `path:line:col  <line>`
//! relative to the session directory (references capped), hover as plain text (capped),
//! symbols as `kind name  path:line`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lsp_types::{
    DocumentSymbol, DocumentSymbolResponse, GotoDefinitionResponse, Hover, HoverContents, Location,
    MarkedString, OneOf, SymbolInformation, SymbolKind, WorkspaceSymbolResponse,
};

use super::{ToolContext, display};
use crate::lsp::encoding::Encoding;
use crate::lsp::query::Asking;

/// Locations listed at most.
pub(crate) const MAX_LOCATIONS: usize = 50;
/// Symbols listed at most.
const MAX_SYMBOLS: usize = 200;
/// Characters of hover text kept.
pub(crate) const MAX_HOVER_CHARS: usize = 2000;
/// Characters of a source line shown after a location.
const MAX_LINE_CHARS: usize = 200;
/// Bytes of a file read to show the lines of its locations.
const MAX_SOURCE_BYTES: usize = 4 << 20;

/// What the server answered.
pub(crate) enum Answer {
    /// Where a symbol is defined.
    Definition(Option<GotoDefinitionResponse>),
    /// Where it is used.
    References(Option<Vec<Location>>),
    /// Its type and docs.
    Hover(Option<Hover>),
    /// A file's symbols.
    Symbols(Option<DocumentSymbolResponse>),
    /// The project's symbols matching a query.
    Workspace(Option<WorkspaceSymbolResponse>),
}

/// A place as the model reads it: the file, 0-based line and server column.
struct Place {
    path: PathBuf,
    line: u32,
    units: u32,
}

/// The answer as text for the model; `shown` is the file asked about, as the model sees it.
pub(crate) async fn describe(
    answer: Answer,
    asking: &Asking,
    shown: &str,
    ctx: &ToolContext,
) -> String {
    let encoding = asking.encoding();
    match answer {
        Answer::Definition(found) => {
            let places = match found {
                Some(GotoDefinitionResponse::Scalar(l)) => places(vec![l]),
                Some(GotoDefinitionResponse::Array(ls)) => places(ls),
                Some(GotoDefinitionResponse::Link(links)) => links
                    .into_iter()
                    .filter_map(|l| {
                        Some(Place {
                            path: l.target_uri.to_file_path().ok()?,
                            line: l.target_selection_range.start.line,
                            units: l.target_selection_range.start.character,
                        })
                    })
                    .collect(),
                None => Vec::new(),
            };
            if places.is_empty() {
                return "no definition found (the server knows none for this name here)"
                    .to_string();
            }
            listed(&places, encoding, ctx).await
        }
        Answer::References(found) => {
            let places = places(found.unwrap_or_default());
            if places.is_empty() {
                return "no references found".to_string();
            }
            let mut text = format!("{} references\n", places.len());
            text.push_str(&listed(&places, encoding, ctx).await);
            text
        }
        Answer::Hover(found) => match found {
            Some(hover) => hover_text(&hover.contents),
            None => "nothing known about this name here".to_string(),
        },
        Answer::Symbols(found) => {
            let mut lines = Vec::new();
            match found {
                Some(DocumentSymbolResponse::Nested(symbols)) => {
                    nested(&symbols, 0, shown, &mut lines);
                }
                Some(DocumentSymbolResponse::Flat(symbols)) => {
                    lines.extend(symbols.iter().map(|s| flat(s, ctx)));
                }
                None => {}
            }
            capped_lines(lines, MAX_SYMBOLS, "no symbols in this file")
        }
        Answer::Workspace(found) => {
            let lines: Vec<String> = match found {
                Some(WorkspaceSymbolResponse::Flat(symbols)) => {
                    symbols.iter().map(|s| flat(s, ctx)).collect()
                }
                Some(WorkspaceSymbolResponse::Nested(symbols)) => symbols
                    .iter()
                    .map(|s| {
                        let place = match &s.location {
                            OneOf::Left(l) => at(&l.uri, Some(l.range.start.line), ctx),
                            OneOf::Right(w) => at(&w.uri, None, ctx),
                        };
                        format!("{} {}  {place}", kind(s.kind), s.name)
                    })
                    .collect(),
                None => Vec::new(),
            };
            capped_lines(lines, MAX_SYMBOLS, "no symbols match")
        }
    }
}

/// The file places of `locations`.
fn places(locations: Vec<Location>) -> Vec<Place> {
    locations
        .into_iter()
        .filter_map(|l| {
            Some(Place {
                path: l.uri.to_file_path().ok()?,
                line: l.range.start.line,
                units: l.range.start.character,
            })
        })
        .collect()
}

/// `places` as `path:line:col  <line>`, at most [`MAX_LOCATIONS`], then how many more.
async fn listed(places: &[Place], encoding: Encoding, ctx: &ToolContext) -> String {
    let mut sources: HashMap<PathBuf, Option<Vec<String>>> = HashMap::new();
    let mut out = Vec::new();
    for place in places.iter().take(MAX_LOCATIONS) {
        if !sources.contains_key(&place.path) {
            let lines = source_lines(&place.path, ctx).await;
            sources.insert(place.path.clone(), lines);
        }
        let line_text = sources
            .get(&place.path)
            .and_then(|lines| lines.as_ref())
            .and_then(|lines| lines.get(place.line as usize));
        out.push(location_line(
            &display(&ctx.cwd, &place.path),
            place,
            encoding,
            line_text,
        ));
    }
    if places.len() > MAX_LOCATIONS {
        out.push(format!("… and {} more", places.len() - MAX_LOCATIONS));
    }
    out.join("\n")
}

/// One location: `path:line:col  <line>` (1-based, columns in characters).
fn location_line(
    shown: &str,
    place: &Place,
    encoding: Encoding,
    line_text: Option<&String>,
) -> String {
    match line_text {
        Some(text) => {
            let column = encoding.to_chars(text, place.units) + 1;
            let source: String = text.trim().chars().take(MAX_LINE_CHARS).collect();
            format!(
                "{shown}:{}:{column}  {source}",
                place.line.saturating_add(1)
            )
        }
        None => format!(
            "{shown}:{}:{}",
            place.line.saturating_add(1),
            place.units.saturating_add(1)
        ),
    }
}

/// The lines of `path`, when the agent may read it and it is text.
async fn source_lines(path: &Path, ctx: &ToolContext) -> Option<Vec<String>> {
    let (reading, hidden) = (path.to_path_buf(), ctx.hidden.clone());
    let read = tokio::task::spawn_blocking(move || {
        super::read_visible(&reading, &hidden, MAX_SOURCE_BYTES)
    })
    .await;
    let Ok(Ok((bytes, _))) = read else {
        return None;
    };
    Some(
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

/// Hover contents as plain text: code fences dropped, capped.
pub(crate) fn hover_text(contents: &HoverContents) -> String {
    let marked = |m: &MarkedString| match m {
        MarkedString::String(s) => s.clone(),
        MarkedString::LanguageString(l) => l.value.clone(),
    };
    let raw = match contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(ms) => ms.iter().map(marked).collect::<Vec<_>>().join("\n\n"),
        HoverContents::Markup(m) => m.value.clone(),
    };
    let text: Vec<&str> = raw
        .lines()
        .filter(|l| !l.trim_start().starts_with("```") && l.trim() != "---")
        .collect();
    let text = text.join("\n").trim().to_string();
    if text.is_empty() {
        return "nothing known about this name here".to_string();
    }
    let count = text.chars().count();
    if count <= MAX_HOVER_CHARS {
        return text;
    }
    let kept: String = text.chars().take(MAX_HOVER_CHARS).collect();
    format!("{kept}\n… ({} more characters)", count - MAX_HOVER_CHARS)
}

/// A symbol kind in lower case (`function`, `class`).
fn kind(kind: SymbolKind) -> String {
    format!("{kind:?}").to_lowercase()
}

/// `path:line` of a symbol's place (the path alone when the server gave no line).
fn at(uri: &lsp_types::Url, line: Option<u32>, ctx: &ToolContext) -> String {
    let shown = uri
        .to_file_path()
        .map_or_else(|()| uri.to_string(), |p| display(&ctx.cwd, &p));
    match line {
        Some(line) => format!("{shown}:{}", line.saturating_add(1)),
        None => shown,
    }
}

/// A flat symbol as `kind name  path:line`.
fn flat(symbol: &SymbolInformation, ctx: &ToolContext) -> String {
    let place = at(
        &symbol.location.uri,
        Some(symbol.location.range.start.line),
        ctx,
    );
    format!("{} {}  {place}", kind(symbol.kind), symbol.name)
}

/// Nested symbols of file `shown` as `kind name  path:line`, children indented.
fn nested(symbols: &[DocumentSymbol], depth: usize, shown: &str, out: &mut Vec<String>) {
    for symbol in symbols {
        out.push(format!(
            "{}{} {}  {shown}:{}",
            "  ".repeat(depth.min(8)),
            kind(symbol.kind),
            symbol.name,
            symbol.selection_range.start.line.saturating_add(1)
        ));
        if let Some(children) = &symbol.children {
            nested(children, depth + 1, shown, out);
        }
    }
}

/// `lines` joined, at most `max`, then how many more; `empty` when there are none.
fn capped_lines(lines: Vec<String>, max: usize, empty: &str) -> String {
    if lines.is_empty() {
        return empty.to_string();
    }
    let more = lines.len().saturating_sub(max);
    let mut out: Vec<String> = lines.into_iter().take(max).collect();
    if more > 0 {
        out.push(format!("… and {more} more"));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{MarkupContent, MarkupKind};

    #[test]
    fn locations_show_characters_and_the_trimmed_line() {
        let place = Place {
            path: PathBuf::from("/p/m.py"),
            line: 4,
            units: 3,
        };
        let line = "x = é(1)".to_string();
        assert_eq!(
            location_line("m.py", &place, Encoding::Utf8, Some(&line)),
            "m.py:5:4  x = é(1)"
        );
        assert_eq!(
            location_line("m.py", &place, Encoding::Utf16, None),
            "m.py:5:4"
        );
    }

    #[test]
    fn hover_drops_fences_and_is_capped() {
        let contents = HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: "```python\n(function) def add(a: int, b: int) -> int\n```\n---\nAdds.".into(),
        });
        assert_eq!(
            hover_text(&contents),
            "(function) def add(a: int, b: int) -> int\nAdds."
        );
        let long = HoverContents::Scalar(MarkedString::String("a".repeat(2500)));
        let text = hover_text(&long);
        assert!(text.ends_with("… (500 more characters)"), "{text}");
    }

    #[test]
    fn long_lists_say_how_many_more() {
        let lines: Vec<String> = (0..205).map(|n| n.to_string()).collect();
        let text = capped_lines(lines, MAX_SYMBOLS, "none");
        assert!(text.ends_with("199\n… and 5 more"), "{text}");
        assert_eq!(capped_lines(Vec::new(), 3, "none"), "none");
    }
}
