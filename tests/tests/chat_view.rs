//! The chat view draws a streamed reply the way a person should read it: each finished line
//! once, in order, with nothing of the unfinished line or the status line left behind; the
//! same lines `attach` shows for the same session, at 80 and 120 columns and across a resize.

use tests::Daemon;
use tests::model_server::{Gate, ModelServer, Pace, anthropic};
use tests::pty::Pty;

/// A markdown reply with a heading, a list, a code fence and lines wider than the terminal.
const REPLY: &str = "## Heading\n\nHere is a list:\n- one item that is long enough to wrap \
past the right edge of an eighty column terminal, and then some more words after that\n- two \
items are a list\n\n```python\nprint(1)\n```\nThe end, with a last line that is long enough \
to wrap past the edge of a terminal that is a hundred and twenty columns wide, so it wraps \
there as well.";

/// The reply cut into the small pieces a model streams, `size` characters each.
fn pieces(size: usize) -> Vec<String> {
    let chars: Vec<char> = REPLY.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The lines from the user's message to the run's footer, as a person reads them.
fn conversation(lines: &[String]) -> Vec<String> {
    let start = lines
        .iter()
        .position(|l| l.starts_with("you › show me"))
        .unwrap_or_else(|| panic!("no user message in:\n{}", lines.join("\n")));
    let end = lines
        .iter()
        .position(|l| l.starts_with("— completed"))
        .unwrap_or_else(|| panic!("no footer in:\n{}", lines.join("\n")));
    lines[start..=end].to_vec()
}

/// The session id chat announced.
fn session_of(lines: &[String]) -> String {
    lines
        .iter()
        .find_map(|l| l.strip_prefix("session "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("chat names its session")
        .to_string()
}

/// `attach` of `session` on a terminal of `size`, read once its replay has shown the footer.
fn attached(daemon: &Daemon, server: &ModelServer, session: &str, size: (u16, u16)) -> Vec<String> {
    let cwd = tempfile::tempdir().unwrap();
    let args = ["--color", "always", "attach", session];
    let pty = Pty::agentctl(&daemon.home, server, cwd.path(), &args, size);
    pty.expect("completed");
    pty.expect("[idle");
    let lines = conversation(&pty.transcript(size.0, size.1));
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
    lines
}

/// Lets the paced reply go one piece at a time, each drawn before the next comes, as a
/// model streaming at its own pace is.
fn stream_piece_by_piece(pty: &Pty, pace: &Pace) {
    // The message's start and its text block's start draw nothing of the reply.
    pace.allow(2);
    for _ in pieces(7) {
        let drawn = pty.raw().len();
        pace.allow(1);
        assert!(!pty.output_after(drawn).is_empty(), "a piece was not drawn");
    }
    pace.allow(100);
}

async fn streamed_reply_reads_as_attach_shows_it(size: (u16, u16)) {
    let project = tempfile::tempdir().unwrap();
    let pace = Pace::new();
    let server = ModelServer::start(vec![anthropic::deltas(&pieces(7)).paced(&pace)]).await;
    let daemon = Daemon::start();
    let args = ["--color", "always", "chat"];
    let pty = Pty::agentctl(&daemon.home, &server, project.path(), &args, size);
    pty.expect("[idle");
    pty.send("show me\r");
    pty.expect("you › show me");
    stream_piece_by_piece(&pty, &pace);
    pty.expect("completed");
    pty.expect("[idle");
    let lines = pty.transcript(size.0, size.1);
    let chat = conversation(&lines);
    let session = session_of(&lines);
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));

    let attach = attached(&daemon, &server, &session, size);
    assert_eq!(chat, attach, "chat and attach differ at {size:?}");
    // Every line of the reply is there once, in order, and no stray piece is.
    let text = chat.join("\n");
    for line in ["Heading", "Here is a list:", "print(1)", "The end, with"] {
        assert_eq!(text.matches(line).count(), 1, "{line:?} in:\n{text}");
    }
    assert!(!text.contains("```"), "a fence line is drawn:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_markdown_reply_reads_in_chat_as_attach_shows_it_at_80_columns() {
    streamed_reply_reads_as_attach_shows_it((24, 80)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_markdown_reply_reads_in_chat_as_attach_shows_it_at_120_columns() {
    streamed_reply_reads_as_attach_shows_it((35, 120)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resize_in_the_middle_of_a_reply_leaves_nothing_behind() {
    let project = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    // Held after the stream's two opening events and the first six pieces ("## Heading\n\n
    // Here is a list:\n- one it…"), in the middle of the list's first line.
    let script = anthropic::deltas(&pieces(7)).hold_after(2 + 6, &gate);
    let server = ModelServer::start(vec![script]).await;
    let daemon = Daemon::start();
    let args = ["--color", "always", "chat"];
    let pty = Pty::agentctl(&daemon.home, &server, project.path(), &args, (24, 80));
    pty.expect("[idle");
    pty.send("show me\r");
    pty.expect("Here is a list:");
    pty.expect("- one");
    pty.resize(30, 120);
    gate.release();
    pty.expect("completed");
    pty.expect("[idle");
    let lines = pty.transcript(24, 80);
    let chat = conversation(&lines);
    let session = session_of(&lines);
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));

    let attach = attached(&daemon, &server, &session, (30, 120));
    assert_eq!(chat, attach, "chat across a resize and attach differ");
    // The status line and the input line are drawn only at the bottom, once.
    let status_rows = lines.iter().filter(|l| l.starts_with("[idle")).count();
    assert_eq!(status_rows, 1, "{}", lines.join("\n"));
}
