//! HTML turned into markdown for the model, with `htmd` (html5ever underneath)
//! (docs/architecture.md#web-access). Pages are hostile: the parser gets at most
//! [`MAX_TAGS`] tags (memory), scripts and styles are dropped, and a page nested deeper than
//! [`MAX_DEPTH`] is not walked (the converter recurses) but handed back as its HTML. The work
//! runs on a thread of its own with a stack that is ample for that depth, off the runtime.

use std::rc::Rc;

/// The most tags handed to the parser; the page is cut before the next one.
pub(crate) const MAX_TAGS: usize = 100_000;
/// The deepest nesting of elements that is converted.
pub(crate) const MAX_DEPTH: usize = 1_000;
/// The conversion thread's stack: the converter's recursion over [`MAX_DEPTH`] levels needs
/// far less, in every build.
const STACK_BYTES: usize = 64 << 20;
/// Elements whose content is not text for a reader.
const DROPPED: [&str; 9] = [
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed",
];

/// What became of a page's HTML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Converted {
    /// The markdown (or the HTML itself, when it could not be converted).
    pub(crate) text: String,
    /// What the model should know about how it was made, if anything.
    pub(crate) note: Option<String>,
}

/// Conversions running at once in the daemon. A thread outlives the call that gave up waiting
/// for it (a timeout): the others wait here, so no page makes the work grow without bound.
static CONVERSIONS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// Elements that hold no others, or whose end a parser infers: they do not deepen the nesting.
const FLAT: [&str; 35] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param", "keygen", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup",
    "thead", "tbody", "tfoot", "colgroup", "caption", "rb", "rt", "rtc", "rp", "html", "head",
];

/// Converts `html` on a thread of its own; the result, or why there is none.
pub(crate) async fn to_markdown(html: String) -> Result<Converted, String> {
    // A page nested too deep is known before the parser, whose work on it grows faster than
    // its size, ever sees it.
    if nesting(&html) > MAX_DEPTH {
        return Ok(too_deep(html));
    }
    let permit = CONVERSIONS
        .acquire()
        .await
        .map_err(|_| "the HTML conversion is not available".to_string())?;
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("html-to-markdown".to_string())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let _ = done.send(convert(&html));
            drop(permit);
        })
        .map_err(|e| format!("cannot start the HTML conversion: {e}"))?;
    result
        .await
        .map_err(|_| "the HTML conversion failed".to_string())
}

/// Converts `html` to markdown (see the module's description).
pub(crate) fn convert(html: &str) -> Converted {
    let (html, cut) = within_tags(html);
    let mut note = cut.then(|| {
        format!("the page has more than {MAX_TAGS} tags: only the part before them is converted")
    });
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(DROPPED.to_vec())
        .build();
    let tree = match converter.html_to_tree(html) {
        Ok(tree) => tree,
        Err(err) => {
            return Converted {
                text: html.to_string(),
                note: Some(format!(
                    "the HTML could not be parsed ({err}); shown as it is"
                )),
            };
        }
    };
    if depth(&tree) > MAX_DEPTH {
        return too_deep(html.to_string());
    }
    let text = converter.tree_to_markdown(&tree);
    if text.trim().is_empty() && !html.trim().is_empty() {
        note.get_or_insert_with(|| {
            "the page has no text outside scripts and styles (it may be built by JavaScript)"
                .to_string()
        });
    }
    Converted { text, note }
}

/// A page nested deeper than [`MAX_DEPTH`], handed back as its HTML.
fn too_deep(html: String) -> Converted {
    Converted {
        text: html,
        note: Some(format!(
            "the page nests elements more than {MAX_DEPTH} deep; shown as HTML"
        )),
    }
}

/// How deep `html` nests its elements, as its tags say (a quick estimate from open and end
/// tags, leaving out elements that hold nothing or whose end is inferred); it stops counting
/// past [`MAX_DEPTH`].
fn nesting(html: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for (at, _) in html.match_indices('<') {
        let rest = html.get(at + 1..).unwrap_or_default();
        let (closing, rest) = match rest.strip_prefix('/') {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let name_len = rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '-')
            .unwrap_or(rest.len());
        let name = rest.get(..name_len).unwrap_or_default();
        if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue;
        }
        if closing {
            depth = depth.saturating_sub(1);
            continue;
        }
        let self_closing = rest
            .get(name_len..)
            .and_then(|tail| {
                tail.find('>')
                    .map(|end| tail.get(..end).unwrap_or_default())
            })
            .is_some_and(|tag| tag.ends_with('/'));
        if self_closing || FLAT.iter().any(|flat| flat.eq_ignore_ascii_case(name)) {
            continue;
        }
        depth += 1;
        deepest = deepest.max(depth);
        if deepest > MAX_DEPTH {
            break;
        }
    }
    deepest
}

/// `html` up to its [`MAX_TAGS`]th tag, and whether it was cut.
fn within_tags(html: &str) -> (&str, bool) {
    match html.match_indices('<').nth(MAX_TAGS) {
        Some((at, _)) => (html.get(..at).unwrap_or(html), true),
        None => (html, false),
    }
}

/// The deepest nesting under `root`, walked without recursion.
fn depth(root: &Rc<htmd::Node>) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root.clone(), 0usize)];
    while let Some((node, level)) = stack.pop() {
        deepest = deepest.max(level);
        if deepest > MAX_DEPTH {
            break;
        }
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), level + 1));
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_links_lists_and_code_become_markdown() {
        let html = "<html><head><title>T</title><style>p{color:red}</style></head><body>\
            <h1>Install</h1><p>Run <code>cargo add htmd</code> then see \
            <a href=\"https://docs.rs/htmd\">the docs</a>.</p>\
            <ul><li>one</li><li>two</li></ul>\
            <script>alert('hidden')</script><pre><code>fn main() {}</code></pre></body></html>";
        let converted = convert(html);
        let text = &converted.text;
        assert!(text.contains("# Install"), "{text}");
        assert!(text.contains("`cargo add htmd`"), "{text}");
        assert!(text.contains("[the docs](https://docs.rs/htmd)"), "{text}");
        assert!(text.contains("one") && text.contains("two"), "{text}");
        assert!(text.contains("```\nfn main() {}\n```"), "{text}");
        assert!(
            !text.contains("alert") && !text.contains("color:red"),
            "{text}"
        );
        assert_eq!(converted.note, None);
    }

    #[test]
    fn a_page_nested_too_deep_is_shown_as_html_and_nothing_overflows() {
        let html = "<div>".repeat(MAX_DEPTH + 50) + "deep";
        let converted = convert(&html);
        assert!(converted.note.unwrap().contains("deep"));
        assert!(converted.text.starts_with("<div>"));
    }

    #[tokio::test]
    async fn a_page_just_within_the_depth_converts_on_its_own_thread() {
        let html = "<div>".repeat(MAX_DEPTH - 10) + "deep text";
        let converted = to_markdown(html).await.unwrap();
        assert_eq!(converted.text, "deep text");
    }

    #[tokio::test]
    async fn a_page_nested_too_deep_never_reaches_the_parser() {
        // Parsing this takes the parser many seconds; the estimate refuses it at once.
        let html = "<html><body>".to_string() + &"<div>".repeat(90_000);
        let started = std::time::Instant::now();
        let converted = to_markdown(html).await.unwrap();
        assert!(converted.note.unwrap().contains("deep"));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn the_nesting_estimate_counts_what_deepens_a_page() {
        assert_eq!(nesting("<div><span>a</span><b>b</b></div>"), 2);
        // Void elements, inferred ends, self-closing tags and comments add nothing.
        let flat = "<ul>".to_string() + &"<li><p>x<br><img src=a/><x-y/><!-- c -->".repeat(5000);
        assert_eq!(nesting(&flat), 1);
        assert_eq!(nesting(&"<div>".repeat(MAX_DEPTH + 5)), MAX_DEPTH + 1);
        assert_eq!(nesting("a < b and 1<2 </>"), 0);
    }

    #[test]
    fn only_the_first_tags_reach_the_parser() {
        let html = "<p>x</p>".repeat(MAX_TAGS);
        let converted = convert(&html);
        assert!(converted.note.unwrap().contains("more than"));
        assert_eq!(converted.text.matches('x').count(), MAX_TAGS / 2);
    }

    #[test]
    fn a_page_made_by_scripts_says_so() {
        let converted = convert("<html><body><script>render()</script></body></html>");
        assert!(converted.note.unwrap().contains("JavaScript"));
    }
}
