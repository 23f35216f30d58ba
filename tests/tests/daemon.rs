//! The daemon's life: started on demand, alone on its socket, stopped cleanly.

use std::os::unix::fs::PermissionsExt;

use protocol::{Reply, Request};
use tests::{Daemon, Home};

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn any_agentctl_command_starts_the_daemon_on_demand() {
    let home = Home::new();
    let paths = home.paths();
    assert!(!paths.socket.exists());

    let listed = home.run_agentctl(&["sessions"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(
        stdout(&listed).contains("no sessions"),
        "{}",
        stdout(&listed)
    );
    assert!(
        paths.socket.exists(),
        "the daemon listens after the command"
    );

    let status = home.run_agentctl(&["daemon", "status"]);
    assert!(status.status.success(), "{}", stderr(&status));
    let pid = std::fs::read_to_string(paths.pid_file()).unwrap();
    assert!(stdout(&status).contains(&format!("pid       {}", pid.trim())));

    let stopped = home.run_agentctl(&["daemon", "stop"]);
    assert!(stopped.status.success(), "{}", stderr(&stopped));
    assert!(!paths.socket.exists(), "stop removes the socket");
    assert!(!paths.pid_file().exists(), "stop removes the pid file");
}

#[test]
fn daemon_start_reports_an_already_running_daemon() {
    let daemon = Daemon::start();
    let again = daemon.home.run_agentctl(&["daemon", "start"]);
    assert!(again.status.success());
    assert!(
        stdout(&again).contains(&format!("already running (pid {})", daemon.pid())),
        "{}",
        stdout(&again)
    );
}

#[test]
fn status_without_a_daemon_says_so_and_starts_nothing() {
    let home = Home::new();
    let status = home.run_agentctl(&["daemon", "status"]);
    assert_eq!(status.status.code(), Some(1));
    assert!(stdout(&status).contains("agentd is not running"));
    assert!(!home.paths().socket.exists());
}

#[tokio::test]
async fn a_second_daemon_on_the_same_socket_is_refused() {
    let daemon = Daemon::start();
    let second = daemon.home.agentd().output().unwrap();
    assert!(!second.status.success());
    let message = stderr(&second);
    assert!(
        message.contains(&format!("already running (pid {})", daemon.pid())),
        "{message}"
    );
    // The first daemon still serves.
    let client = daemon.client().await;
    assert!(matches!(
        client.request(Request::Status).await.unwrap(),
        Reply::Status(status) if status.pid == daemon.pid()
    ));
}

#[tokio::test]
async fn a_stale_socket_and_pid_file_are_replaced() {
    let home = Home::new();
    let paths = home.paths();
    // A socket file nobody listens on, as a daemon killed with SIGKILL leaves behind.
    drop(std::os::unix::net::UnixListener::bind(&paths.socket).unwrap());
    std::fs::write(paths.pid_file(), "999999\n").unwrap();
    assert!(paths.socket.exists());

    let daemon = Daemon::start_in(home);
    let client = daemon.client().await;
    assert_eq!(client.welcome().pid, daemon.pid());
    let pid = std::fs::read_to_string(daemon.paths().pid_file()).unwrap();
    assert_eq!(pid.trim(), daemon.pid().to_string());
}

#[tokio::test]
async fn shutdown_request_stops_the_daemon_and_removes_its_files() {
    let mut daemon = Daemon::start();
    let client = daemon.client().await;
    assert_eq!(
        client
            .request(Request::Shutdown { now: false })
            .await
            .unwrap(),
        Reply::Stopping {
            calls: 0,
            grace_ms: 30_000
        }
    );
    assert!(daemon.wait_exit().success());
    assert!(!daemon.paths().socket.exists());
    assert!(!daemon.paths().pid_file().exists());
}

#[test]
fn sigterm_stops_the_daemon_cleanly() {
    let mut daemon = Daemon::start();
    assert!(daemon.terminate(), "exit status is success");
    assert!(!daemon.paths().socket.exists());
    assert!(!daemon.paths().pid_file().exists());
}

#[test]
fn socket_is_private_to_its_user() {
    let home = Home::new();
    let nested = home.path().join("run/deep");
    let socket = nested.join("agentd.sock");
    let mut child = home.agentd().env("AGENTD_SOCKET", &socket).spawn().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(line.starts_with("agentd ready"), "{line}");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(&nested), 0o700);
    assert_eq!(mode(&home.path().join("run")), 0o700);
    tests::signal(child.id(), libc::SIGTERM);
    assert!(child.wait().unwrap().success());
}

#[test]
fn daemon_status_shows_version_pid_uptime_socket_sessions_and_memory() {
    let daemon = Daemon::start();
    let home = &daemon.home;
    for _ in 0..2 {
        assert!(home.run_agentctl(&["new"]).status.success());
    }
    let status = home.run_agentctl(&["daemon", "status"]);
    let text = stdout(&status);
    assert!(
        text.contains(&format!("agentd {}", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert!(
        text.contains(&format!("pid       {}", daemon.pid())),
        "{text}"
    );
    assert!(text.contains("uptime    "), "{text}");
    assert!(
        text.contains(&daemon.paths().socket.display().to_string()),
        "{text}"
    );
    assert!(text.contains("sessions  2 (0 running)"), "{text}");
    assert!(text.contains("MiB resident"), "{text}");
}

#[test]
fn agentctl_explains_when_the_daemon_cannot_start() {
    let home = Home::new();
    let missing = home
        .agentctl(&["sessions"])
        .env("AGENTD_BIN", "/no/such/agentd")
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    let text = stderr(&missing);
    assert!(
        text.contains("cannot start the daemon `/no/such/agentd`") && text.contains("AGENTD_BIN"),
        "{text}"
    );

    let failing = home
        .agentctl(&["sessions"])
        .env("AGENTD_BIN", "/bin/false")
        .output()
        .unwrap();
    assert_eq!(failing.status.code(), Some(1));
    let text = stderr(&failing);
    assert!(
        text.contains("the daemon exited") && text.contains("before accepting connections"),
        "{text}"
    );
}
