//! The `agentd` binary's own command line. (Having an integration test here also makes
//! `cargo test --workspace` build the binary that the end-to-end tests in `tests/` start.)

use std::process::Command;

#[test]
fn version_flag_prints_the_version() {
    let output = Command::new(env!("CARGO_BIN_EXE_agentd"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(text.trim(), format!("agentd {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn an_unusable_home_is_a_clear_error() {
    let file = tempfile::NamedTempFile::new().unwrap();
    // A home below a regular file cannot be created.
    let output = Command::new(env!("CARGO_BIN_EXE_agentd"))
        .env("AGENTD_HOME", file.path().join("home"))
        .env_remove("AGENTD_SOCKET")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(text.starts_with("agentd: cannot prepare"), "{text}");
}
