//! A reply's text as it streams to a terminal: each piece is shown as it comes, and once its
//! line ends that line is replaced by its markdown rendering ([`crate::markdown`]). Only the
//! open line is ever redrawn. Without colors the text passes through as it is.

use crate::markdown::Markdown;

/// The reply text of one view.
pub struct ReplyText {
    /// The renderer, when the view renders markdown (colors on).
    markdown: Option<Markdown>,
    /// The open line as shown so far, raw.
    open: String,
}

impl ReplyText {
    /// Reply text rendered as markdown when `render`, passed through otherwise.
    pub fn new(render: bool) -> ReplyText {
        ReplyText {
            markdown: render.then(Markdown::default),
            open: String::new(),
        }
    }

    /// What to write to a terminal `cols` wide for the next piece of text: the piece itself,
    /// and for every line it ends, the raw line erased and its rendering in its place.
    pub fn push(&mut self, text: &str, cols: usize) -> String {
        let Some(markdown) = &mut self.markdown else {
            return text.to_string();
        };
        let mut out = String::new();
        for (i, piece) in text.split('\n').enumerate() {
            if i > 0 {
                let line = std::mem::take(&mut self.open);
                out.push_str(&erase(&line, cols));
                if let Some(rendered) = markdown.line(&line) {
                    out.push_str(&rendered);
                    out.push('\n');
                }
            }
            out.push_str(piece);
            self.open.push_str(piece);
        }
        out
    }

    /// Ends the reply: the open line, if any, is rendered and closed with a newline.
    pub fn finish(&mut self, cols: usize) -> String {
        let out = if self.open.is_empty() {
            String::new()
        } else {
            self.push("\n", cols)
        };
        if let Some(markdown) = &mut self.markdown {
            markdown.reset();
        }
        out
    }

    /// Forgets the reply's state (an open code block) without writing anything: the next
    /// reply starts afresh.
    pub fn reset(&mut self) {
        self.open.clear();
        if let Some(markdown) = &mut self.markdown {
            markdown.reset();
        }
    }

    /// The rendering of one whole line (for a line editor, which shows whole lines only);
    /// `None` when it shows nothing.
    pub fn line(&mut self, line: &str) -> Option<String> {
        match &mut self.markdown {
            Some(markdown) => markdown.line(line),
            None => Some(line.to_string()),
        }
    }

    /// Whether a line is open (shown raw, not ended yet).
    pub fn is_open(&self) -> bool {
        !self.open.is_empty()
    }
}

/// Moves back over `line` as written on a terminal `cols` wide (it may have wrapped) and clears
/// from there.
fn erase(line: &str, cols: usize) -> String {
    let width = line.chars().count();
    let rows = if width == 0 {
        1
    } else {
        (width - 1) / cols.max(1) + 1
    };
    if rows > 1 {
        format!("\x1b[{}A\r\x1b[J", rows - 1)
    } else {
        "\r\x1b[J".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_show_at_once_and_their_line_is_replaced_when_it_ends() {
        let mut reply = ReplyText::new(true);
        assert_eq!(reply.push("Some **bo", 80), "Some **bo");
        let out = reply.push("ld** text\n```", 80);
        assert!(out.starts_with("ld** text\r\x1b[J"), "{out:?}");
        assert!(out.contains("Some \x1b[0m\x1b[1mbold"), "{out:?}");
        assert!(out.ends_with("```"), "{out:?}");
        // A fence line is erased and shows nothing.
        let out = reply.push("rust\nlet x = 1;\n```\n", 80);
        assert!(!out.contains("```\n"), "{out:?}");
        assert!(out.contains("\x1b[38;2;"), "{out:?}");
        assert!(!reply.is_open());
    }

    #[test]
    fn a_wrapped_line_is_erased_from_its_first_row_and_plain_text_passes_through() {
        let mut reply = ReplyText::new(true);
        let long = "x".repeat(25);
        reply.push(&long, 10);
        assert!(reply.finish(10).starts_with("\x1b[2A\r\x1b[J"));
        let mut plain = ReplyText::new(false);
        assert_eq!(plain.push("**a**\n", 80), "**a**\n");
        assert_eq!(plain.line("**a**").unwrap(), "**a**");
    }
}
