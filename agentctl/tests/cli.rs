//! The `agentctl` binary's own command line. (Having an integration test here also makes
//! `cargo test --workspace` build the binary that the end-to-end tests in `tests/` run.)

use std::process::Command;

#[test]
fn help_lists_the_commands() {
    let output = Command::new(env!("CARGO_BIN_EXE_agentctl"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for command in ["daemon", "sessions", "new", "rm"] {
        assert!(text.contains(command), "{command} missing from:\n{text}");
    }
}

#[test]
fn a_usage_error_exits_with_code_2() {
    let output = Command::new(env!("CARGO_BIN_EXE_agentctl"))
        .arg("no-such-command")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}
