//! The `@path` words of a message, as the paths they name: `@notes.txt`, `@"my notes.txt"`,
//! `@'my notes.txt'` and `@my\ notes.txt` (what dragging a file into a terminal types).

/// Characters that end a sentence rather than a path when they end an unquoted `@word`.
const TRAILING: [char; 10] = [',', '.', ';', ':', '!', '?', ')', '"', '\'', ']'];

/// The paths the `@` words of `text` name, in order, their quotes and escapes removed. A word
/// is a mention when it starts with `@` (so `me@example.com` is none); an unquoted path ends
/// at the first whitespace that no backslash escapes, without the punctuation that ends a
/// sentence; a quote that is never closed is no quote.
pub fn mentioned(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = next_mention(rest) {
        let after = &rest[at + 1..];
        let (path, used) = match after.chars().next() {
            Some(quote @ ('"' | '\'')) => quoted(&after[1..], quote).unwrap_or_else(|| bare(after)),
            _ => bare(after),
        };
        if !path.is_empty() {
            found.push(path);
        }
        rest = &after[used..];
    }
    found
}

/// `path` as an unquoted `@` word names it: whitespace and backslashes escaped with a
/// backslash (what chat's Tab completion inserts).
pub fn escape(path: &str) -> String {
    let mut word = String::with_capacity(path.len());
    for c in path.chars() {
        if c.is_whitespace() || c == '\\' {
            word.push('\\');
        }
        word.push(c);
    }
    word
}

/// `word` with its backslash escapes taken as the characters they escape.
pub fn unescape(word: &str) -> String {
    let mut path = String::with_capacity(word.len());
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => path.extend(chars.next()),
            c => path.push(c),
        }
    }
    path
}

/// Where the word that ends at the end of `head` begins: after the last whitespace that no
/// backslash escapes.
pub fn word_start(head: &str) -> usize {
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in head.char_indices() {
        if c.is_whitespace() && !escaped {
            start = i + c.len_utf8();
        }
        escaped = c == '\\' && !escaped;
    }
    start
}

/// Where the next word that starts with `@` begins in `text`.
fn next_mention(text: &str) -> Option<usize> {
    let mut word_start = true;
    for (i, c) in text.char_indices() {
        if c == '@' && word_start {
            return Some(i);
        }
        word_start = c.is_whitespace();
    }
    None
}

/// The path between a quote and its closing `quote` at the start of `text` (the text after the
/// opening quote), and how much of `text` it takes; `None` when the quote is not closed.
fn quoted(text: &str, quote: char) -> Option<(String, usize)> {
    let end = text.find(quote)?;
    Some((text[..end].to_string(), end + quote.len_utf8()))
}

/// The unquoted path at the start of `text`: up to the first whitespace no backslash escapes,
/// each escaped character taken as it is, the punctuation that ends a sentence left off; and
/// how much of `text` it takes.
fn bare(text: &str) -> (String, usize) {
    let mut path = String::new();
    // The path up to its last escaped character is kept whole.
    let mut kept = 0;
    let mut chars = text.char_indices();
    let mut used = text.len();
    while let Some((i, c)) = chars.next() {
        if c.is_whitespace() {
            used = i;
            break;
        }
        if c == '\\' {
            if let Some((_, escaped)) = chars.next() {
                path.push(escaped);
                kept = path.len();
            }
            continue;
        }
        path.push(c);
    }
    while path.len() > kept && path.ends_with(TRAILING) {
        path.pop();
    }
    (path, used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_lose_the_punctuation_that_ends_a_sentence() {
        assert_eq!(
            mentioned("see @notes.txt, and @src/main.rs. mail me@example.com or @"),
            vec!["notes.txt", "src/main.rs"]
        );
        assert_eq!(mentioned("(look at @a.png)"), vec!["a.png"]);
    }

    #[test]
    fn quoted_paths_keep_their_spaces() {
        assert_eq!(
            mentioned(r#"compare @"shot one.png" with @'shot two.png', please"#),
            vec!["shot one.png", "shot two.png"]
        );
        assert_eq!(mentioned(r#"@"  padded .txt""#), vec!["  padded .txt"]);
    }

    #[test]
    fn backslash_escaped_spaces_are_part_of_the_path() {
        assert_eq!(
            mentioned(r"what is @Screenshot\ 2026-12-05\ at\ 10.00.00.png? and @a\ b\."),
            vec!["Screenshot 2026-12-05 at 10.00.00.png", "a b."]
        );
        assert_eq!(
            mentioned(r"@/Users/me/My\ \(old\)\ notes.txt"),
            vec!["/Users/me/My (old) notes.txt"]
        );
    }

    #[test]
    fn an_escaped_path_is_read_back_as_it_was() {
        let path = r"My Shots/a\b 1.png";
        let word = escape(path);
        assert_eq!(word, r"My\ Shots/a\\b\ 1.png");
        assert_eq!(unescape(&word), path);
        assert_eq!(mentioned(&format!("see @{word}")), vec![path]);
        let head = format!("see @{word}");
        assert_eq!(&head[word_start(&head)..], format!("@{word}"));
        assert_eq!(word_start(r"a b\ c"), 2);
        assert_eq!(word_start(r"a b\\ c"), r"a b\\ ".len());
    }

    #[test]
    fn an_unclosed_quote_is_part_of_a_plain_word() {
        assert_eq!(
            mentioned(r#"@"unclosed.txt and @later.txt"#),
            vec!["\"unclosed.txt", "later.txt"]
        );
        assert_eq!(mentioned("it's @'s"), vec!["'s"]);
    }
}
