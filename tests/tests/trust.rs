//! `agentctl` trusts only its own daemon (docs/architecture.md#protocol): a socket directory
//! someone else owns or can write, or a process of another user behind the socket, gets a clear
//! refusal, and not a byte (API keys travel in requests) is sent.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use tests::{Daemon, binary};

/// Another user, for the tests that need one.
const OTHER_UID: u32 = 65534;

/// Whether this test process may act as another user; says why it skips otherwise.
fn root_or_skip(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped {test}: it needs root to create files and processes of another uid");
    }
    root
}

/// `agentctl sessions` with only `env` set for agentd (no home of the fixtures).
fn agentctl_sessions(env: &[(&str, &Path)]) -> std::process::Output {
    let mut command = Command::new(binary("agentctl"));
    command
        .arg("sessions")
        .env_remove("AGENTD_HOME")
        .env_remove("AGENTD_SOCKET")
        .env_remove("XDG_RUNTIME_DIR")
        .env("AGENTD_BIN", binary("agentd"))
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("agentctl runs")
}

/// Whether anyone connected to `listener` (non-blocking).
fn connected(listener: &std::os::unix::net::UnixListener) -> bool {
    listener.set_nonblocking(true).unwrap();
    listener.accept().is_ok()
}

#[test]
fn a_socket_directory_others_can_write_is_refused_before_a_byte_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let socket = dir.path().join("agentd.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let home = tempfile::tempdir().unwrap();
    let output = agentctl_sessions(&[("AGENTD_SOCKET", &socket), ("HOME", home.path())]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("writable by others (mode 777)") && stderr.contains("chmod 700"),
        "{stderr}"
    );
    assert!(!connected(&listener), "agentctl connected anyway");
}

#[test]
fn a_socket_directory_owned_by_another_user_is_refused_before_a_byte_is_sent() {
    if !root_or_skip("a_socket_directory_owned_by_another_user_is_refused") {
        return;
    }
    // With XDG_RUNTIME_DIR unset the socket is $TMPDIR/agentd-$UID/agentd.sock; another user
    // created that directory first and listens in it.
    let tmp = tempfile::tempdir().unwrap();
    let squatted = tmp.path().join("agentd-0");
    std::fs::create_dir(&squatted).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(squatted.join("agentd.sock")).unwrap();
    std::os::unix::fs::chown(&squatted, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    std::fs::set_permissions(&squatted, std::fs::Permissions::from_mode(0o700)).unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let output = agentctl_sessions(&[("TMPDIR", tmp.path()), ("HOME", &home)]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "it is owned by uid {OTHER_UID}, not by you (uid 0)"
        )),
        "{stderr}"
    );
    assert!(!connected(&listener), "agentctl connected anyway");
    assert!(!home.join(".local").exists(), "a daemon was started");
}

#[test]
fn a_process_of_another_user_behind_the_socket_is_refused_before_a_byte_is_sent() {
    if !root_or_skip("a_process_of_another_user_behind_the_socket_is_refused") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("agentd.sock");
    let mut squatter = Command::new(binary("squatter"))
        .arg(&socket)
        .arg(OTHER_UID.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(squatter.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "listening");
    let home = tempfile::tempdir().unwrap();
    let output = agentctl_sessions(&[("AGENTD_SOCKET", &socket), ("HOME", home.path())]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("it runs as uid {OTHER_UID}, not as you (uid 0)")),
        "{stderr}"
    );
    assert_eq!(lines.next().unwrap().unwrap(), "received 0");
    squatter.wait().unwrap();
}

#[tokio::test]
async fn the_first_command_right_after_a_crash_reaches_a_daemon() {
    let daemon = Daemon::start();
    let mut pid = daemon.pid();
    for round in 0..10 {
        // Killed, and not waited for: the next command meets a daemon that is dying.
        tests::signal(pid, libc::SIGKILL);
        let output = daemon.home.run_agentctl(&["sessions"]);
        assert!(
            output.status.success(),
            "round {round}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let status = daemon.home.run_agentctl(&["daemon", "status"]);
        let text = String::from_utf8_lossy(&status.stdout).into_owned();
        pid = text
            .lines()
            .find_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
                ["pid", pid] => pid.parse().ok(),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no pid in {text}"));
    }
}
