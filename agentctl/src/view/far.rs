//! What the far end names (a session's id, its directory, a model, the request it waits on)
//! as the views print it: on one line, with nothing a terminal would obey, and capped. The
//! daemon may be on another machine (docs/architecture.md#another-machine-over-ssh), so none
//! of its names is trusted to be plain.

use agentctl::client::far_text::{MESSAGE_CHARS, NAME_CHARS, PATH_CHARS, one_line};
use protocol::SessionId;

/// A session's id as shown.
pub fn id(session: &SessionId) -> String {
    one_line(session.as_str(), NAME_CHARS)
}

/// A directory as shown.
pub fn path(path: &str) -> String {
    one_line(path, PATH_CHARS)
}

/// Any other text of the far end that stays on one line (a model, a provider, what a
/// permission request asks, why the connection ended).
pub fn line(text: &str) -> String {
    one_line(text, MESSAGE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_names_obey_nothing_and_stay_on_one_line() {
        let hostile = "a\x1b]52;c;cHduZWQ=\x07\x1b]0;t\x07\x1b[2J\u{202e}\u{9b}\nb";
        for shown in [id(&SessionId(hostile.into())), path(hostile), line(hostile)] {
            assert!(
                !shown.chars().any(|c| c.is_control() || c == '\u{202e}'),
                "{shown:?}"
            );
        }
        assert_eq!(path(&"d".repeat(10_000)).chars().count(), PATH_CHARS + 1);
    }
}
