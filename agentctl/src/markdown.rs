//! Markdown for the terminal, a line at a time as a reply streams: headings, emphasis, inline
//! code, links, lists and quotes through `pulldown-cmark` (each line's inline markup), and
//! fenced code blocks highlighted by `syntect` with its stock syntaxes and theme. The view shows
//! the open (unfinished) line as it comes and replaces it with its rendering once it ends, so a
//! long reply is never rendered twice.

use std::sync::OnceLock;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use syntect::easy::HighlightLines;
use syntect::highlighting::ThemeSet;
use syntect::parsing::SyntaxSet;

const BOLD: &str = "\x1b[1m";
const ITALIC: &str = "\x1b[3m";
const UNDERLINE: &str = "\x1b[4m";
const STRIKE: &str = "\x1b[9m";
const DIM: &str = "\x1b[2m";
const CODE: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// The syntaxes and theme, loaded once, when the first code block appears.
fn highlighting() -> &'static (SyntaxSet, ThemeSet) {
    static LOADED: OnceLock<(SyntaxSet, ThemeSet)> = OnceLock::new();
    LOADED.get_or_init(|| {
        (
            SyntaxSet::load_defaults_newlines(),
            ThemeSet::load_defaults(),
        )
    })
}

/// Renders a reply's lines in order; the state is the fenced code block the lines are in.
#[derive(Default)]
pub struct Markdown {
    fence: Option<Fence>,
}

struct Fence {
    marker: String,
    highlighter: Option<HighlightLines<'static>>,
}

impl Markdown {
    /// The terminal form of one complete line (without its newline); `None` for a line that
    /// shows nothing (a code fence).
    pub fn line(&mut self, line: &str) -> Option<String> {
        let trimmed = line.trim_start();
        if let Some(fence) = &mut self.fence {
            if trimmed.starts_with(fence.marker.as_str()) && trimmed.trim_end() == fence.marker {
                self.fence = None;
                return None;
            }
            return Some(code_line(fence, line));
        }
        if let Some(marker) = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m)) {
            let language = trimmed.trim_start_matches(marker).trim();
            self.fence = Some(Fence {
                marker: marker.to_string(),
                highlighter: highlighter_for(language),
            });
            return None;
        }
        Some(inline(line))
    }

    /// Forgets an open code block (the reply ended).
    pub fn reset(&mut self) {
        self.fence = None;
    }
}

fn highlighter_for(language: &str) -> Option<HighlightLines<'static>> {
    let language = language.split_whitespace().next().unwrap_or_default();
    if language.is_empty() {
        return None;
    }
    let (syntaxes, themes) = highlighting();
    let syntax = syntaxes
        .find_syntax_by_token(language)
        .or_else(|| syntaxes.find_syntax_by_extension(language))?;
    let theme = themes.themes.get("base16-ocean.dark")?;
    Some(HighlightLines::new(syntax, theme))
}

fn code_line(fence: &mut Fence, line: &str) -> String {
    let Some(highlighter) = &mut fence.highlighter else {
        return format!("  {CODE}{line}{RESET}");
    };
    let (syntaxes, _) = highlighting();
    let with_newline = format!("{line}\n");
    match highlighter.highlight_line(&with_newline, syntaxes) {
        Ok(ranges) => {
            let colored = syntect::util::as_24_bit_terminal_escaped(&ranges, false);
            format!("  {}{RESET}", colored.trim_end_matches('\n'))
        }
        Err(_) => format!("  {CODE}{line}{RESET}"),
    }
}

/// One line's block prefix (heading, list item, quote, rule) and inline markup.
fn inline(line: &str) -> String {
    let mut out = String::new();
    // Styles open now, re-applied after each reset.
    let mut open: Vec<&str> = Vec::new();
    let mut links: Vec<String> = Vec::new();
    let mut ordered: Option<u64> = None;
    let restyle = |out: &mut String, open: &[&str]| {
        out.push_str(RESET);
        for style in open {
            out.push_str(style);
        }
    };
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(line, options) {
        match event {
            Event::Start(Tag::Heading { .. }) => {
                open.push(BOLD);
                open.push(UNDERLINE);
                restyle(&mut out, &open);
            }
            Event::Start(Tag::Strong) => {
                open.push(BOLD);
                restyle(&mut out, &open);
            }
            Event::Start(Tag::Emphasis) => {
                open.push(ITALIC);
                restyle(&mut out, &open);
            }
            Event::Start(Tag::Strikethrough) => {
                open.push(STRIKE);
                restyle(&mut out, &open);
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                links.push(dest_url.to_string());
                open.push(UNDERLINE);
                restyle(&mut out, &open);
            }
            Event::Start(Tag::BlockQuote(_)) => out.push_str(&format!("{DIM}│{RESET} ")),
            // An ordered item keeps its number.
            Event::Start(Tag::List(first)) => ordered = first,
            Event::Start(Tag::Item) => match ordered {
                Some(n) => out.push_str(&format!("  {n}. ")),
                None => out.push_str("  • "),
            },
            Event::End(TagEnd::Heading(_)) => {
                open.pop();
                open.pop();
                restyle(&mut out, &open);
            }
            Event::End(TagEnd::Strong | TagEnd::Emphasis | TagEnd::Strikethrough) => {
                open.pop();
                restyle(&mut out, &open);
            }
            Event::End(TagEnd::Link) => {
                open.pop();
                restyle(&mut out, &open);
                if let Some(url) = links.pop() {
                    out.push_str(&format!(" {DIM}({url}){RESET}"));
                    restyle(&mut out, &open);
                }
            }
            Event::Code(code) => {
                out.push_str(CODE);
                out.push_str(&code);
                restyle(&mut out, &open);
            }
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => out.push_str(&text),
            Event::TaskListMarker(done) => out.push_str(if done { "[x] " } else { "[ ] " }),
            Event::Rule => out.push_str(&format!("{DIM}{}{RESET}", "─".repeat(40))),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            _ => {}
        }
    }
    if out.contains('\x1b') {
        out.push_str(RESET);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> String {
        let mut out = String::new();
        let mut escape = false;
        for c in text.chars() {
            match (escape, c) {
                (false, '\x1b') => escape = true,
                (true, 'm') => escape = false,
                (true, _) => {}
                (false, c) => out.push(c),
            }
        }
        out
    }

    #[test]
    fn inline_markup_loses_its_marks_and_gains_styles() {
        let mut md = Markdown::default();
        let line = md
            .line("Use **bold**, *it* and `code` [here](https://x.dev)")
            .unwrap();
        assert_eq!(plain(&line), "Use bold, it and code here (https://x.dev)");
        assert!(line.contains(&format!("{BOLD}bold")));
        assert!(line.contains(&format!("{CODE}code")));
        assert_eq!(plain(&md.line("## Title").unwrap()), "Title");
        assert_eq!(plain(&md.line("- item").unwrap()), "  • item");
        assert_eq!(plain(&md.line("3. third").unwrap()), "  3. third");
        assert_eq!(plain(&md.line("> quoted").unwrap()), "│ quoted");
        assert_eq!(md.line("plain words").unwrap(), "plain words");
    }

    #[test]
    fn a_fenced_block_is_highlighted_without_its_fences() {
        let mut md = Markdown::default();
        assert_eq!(md.line("```rust"), None);
        let code = md.line("fn main() { let x = 1; }").unwrap();
        assert!(code.contains("\x1b[38;2;"), "24-bit colors: {code:?}");
        assert_eq!(plain(&code), "  fn main() { let x = 1; }");
        // Markup inside code stays as it is.
        assert_eq!(
            plain(&md.line("let s = \"**x**\";").unwrap()),
            "  let s = \"**x**\";"
        );
        assert_eq!(md.line("```"), None);
        assert_eq!(md.line("**after**").map(|l| plain(&l)).unwrap(), "after");
    }
}
