//! Names a command made are shown, never obeyed: a file whose name holds escape sequences
//! (a terminal title, a screen clear) appears in `agentctl rewind` and `agentctl diff` on a
//! terminal with those characters shown as `�`.

use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::pty::Pty;
use tests::{Daemon, agentctl_output};

/// The escape sequences the file name carries.
const TITLE: &[u8] = b"\x1b]0;pwned\x07";
const CLEAR: &[u8] = b"\x1b[2J";

#[tokio::test]
async fn rewind_and_diff_show_escapes_in_file_names_instead_of_obeying_them() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::write(p.join("plain.txt"), "plain\n").unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool(
            "bash",
            json!({"command": "touch \"$(printf 'evil\\033]0;pwned\\007\\033[2J.txt')\""}),
        ),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start();
    let out = agentctl_output(&daemon, &server, p, &["run", "--yes", "make it"]).await;
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    let made = std::fs::read_dir(p)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("evil"));
    assert!(made, "the command made the file");
    let id = {
        let list = agentctl_output(&daemon, &server, p, &["sessions", "--json"]).await;
        let value: serde_json::Value = serde_json::from_str(list.stdout.trim()).unwrap();
        value[0]["id"].as_str().unwrap().to_string()
    };
    for args in [
        vec!["diff", id.as_str(), "--stat"],
        vec!["rewind", id.as_str(), "--yes"],
    ] {
        let pty = Pty::agentctl(&daemon.home, &server, p, &args, (24, 100));
        assert_eq!(pty.wait(), Some(0), "{args:?}: {}", pty.screen(24, 100));
        let raw = pty.raw();
        for sequence in [TITLE, CLEAR] {
            assert!(
                !raw.windows(sequence.len()).any(|w| w == sequence),
                "{args:?} wrote the file name's escape sequence {sequence:?} to the terminal"
            );
        }
        assert!(
            String::from_utf8_lossy(&raw).contains("evil\u{fffd}]0;pwned\u{fffd}\u{fffd}[2J.txt"),
            "{args:?}: {}",
            pty.screen(24, 100)
        );
    }
}
