//! One board for many machines (docs/architecture.md#another-machine-over-ssh): `agentctl board
//! --host a --host b` shows the sessions of both daemons in the same groups with the host named
//! on each row, its keys act on the host of the row, and a host that cannot be reached shows as
//! a line of its own and comes back; `sessions --watch --json` names the host of each object.
//! A stand-in ssh (`AGENTCTL_SSH`) picks the daemon by the host name it is given.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use agentctl::client::{Client, Incoming};
use protocol::{Event, SessionId};
use serde_json::{Value, json};
use tests::model_server::{ModelServer, anthropic};
use tests::pty::Pty;
use tests::sshd::Sshd;
use tests::{Daemon, Home, WAIT, asking_options, binary, start_run, titled, until_event_of};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};
use tokio::sync::mpsc::UnboundedReceiver;

/// A stand-in for ssh: finds the host after `--`, and becomes `agentctl bridge` with the
/// `AGENTD_HOME` given for that host; a host without one, or while the file `down-HOST` exists
/// in its directory, fails as ssh does when the machine does not answer.
struct HostsSsh {
    dir: tempfile::TempDir,
}

impl HostsSsh {
    /// The stand-in for `hosts`: (name, home).
    fn new(hosts: &[(&str, &Path)]) -> HostsSsh {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mut cases = String::new();
        for (name, home) in hosts {
            cases.push_str(&format!(
                "  {name}) AGENTD_HOME='{}'; export AGENTD_HOME ;;\n",
                home.display()
            ));
        }
        let script = format!(
            "#!/bin/sh\nwhile [ \"$#\" -gt 0 ] && [ \"$1\" != -- ]; do shift; done\nhost=\"$2\"\n\
             if [ -e '{dir}/down-'\"$host\" ]; then echo \"ssh: connect to host $host port 22: Connection refused\" >&2; exit 255; fi\n\
             case \"$host\" in\n{cases}  *) echo \"ssh: Could not resolve hostname $host\" >&2; exit 255 ;;\nesac\n\
             exec '{agentctl}' bridge\n",
            dir = dir.path().display(),
            agentctl = binary("agentctl").display(),
        );
        let path = dir.path().join("ssh");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        HostsSsh { dir }
    }

    fn program(&self) -> PathBuf {
        self.dir.path().join("ssh")
    }

    /// Makes `host` fail to answer (`down`) or answer again.
    fn set_down(&self, host: &str, down: bool) {
        let file = self.dir.path().join(format!("down-{host}"));
        match down {
            true => std::fs::write(file, "").unwrap(),
            false => std::fs::remove_file(file).unwrap(),
        }
    }
}

/// A daemon standing for one machine, with a project directory and a session in it.
struct Machine {
    daemon: Daemon,
    project: tempfile::TempDir,
    client: Client,
    incoming: UnboundedReceiver<Incoming>,
    session: SessionId,
}

/// A daemon whose session titled `title` asks to run `echo NAME > answered.txt`, where NAME
/// is `title`.
async fn asking_machine(server: &ModelServer, title: &str) -> Machine {
    let project = tempfile::tempdir().unwrap();
    let prompt = format!("ASK-{title}");
    server.route(
        &prompt,
        vec![
            anthropic::tool(
                "bash",
                json!({"command": format!("echo {title} > answered.txt")}),
            ),
            anthropic::text("asked and done"),
        ],
    );
    let daemon = Daemon::start();
    let mut client = daemon.client().await;
    let session = titled(&client, project.path(), title).await;
    let mut incoming = client.take_incoming().unwrap();
    start_run(&client, &session, &prompt, asking_options(server)).await;
    until_event_of(&mut incoming, &session, |e| {
        matches!(e, Event::PermissionRequested { .. })
    })
    .await;
    Machine {
        daemon,
        project,
        client,
        incoming,
        session,
    }
}

/// A daemon with one finished-less session titled `title`.
async fn idle_machine(title: &str) -> (Daemon, tempfile::TempDir) {
    let project = tempfile::tempdir().unwrap();
    let daemon = Daemon::start();
    titled(&daemon.client().await, project.path(), title).await;
    (daemon, project)
}

/// `agentctl ARGS…` with `home` (this machine's daemon and client.toml) over `ssh`, on a
/// terminal of `size`.
fn board(
    home: &Home,
    server: &ModelServer,
    cwd: &Path,
    ssh: &HostsSsh,
    args: &[&str],
    size: (u16, u16),
) -> Pty {
    let mut command = home.agentctl_against(server, cwd, args);
    command
        .env("TERM", "xterm-256color")
        .env("AGENTCTL_SSH", ssh.program());
    Pty::spawn(command, size.0, size.1)
}

/// The screen's line that shows `text`.
fn line_with<'a>(screen: &'a str, text: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(text))
        .unwrap_or_else(|| panic!("no line with `{text}`:\n{screen}"))
}

/// Whether `line` names `host` in the host column (after the selection marker).
fn names_host(line: &str, host: &str) -> bool {
    line.chars()
        .skip(2)
        .collect::<String>()
        .starts_with(&format!("{host} "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_of_two_hosts_names_each_rows_host_and_answers_on_that_host() {
    const SIZE: (u16, u16) = (24, 80);
    let server = ModelServer::start(Vec::new()).await;
    let a = asking_machine(&server, "on-a").await;
    let mut b = asking_machine(&server, "on-b").await;
    let ssh = HostsSsh::new(&[("a", a.daemon.home.path()), ("b", b.daemon.home.path())]);
    let here = Home::new();
    let pty = board(
        &here,
        &server,
        a.project.path(),
        &ssh,
        &["board", "--host", "a", "--host", "b"],
        SIZE,
    );
    let screen = pty.expect_screen(SIZE.0, SIZE.1, "NEEDS YOU (2)");
    assert!(screen.contains("2 hosts"), "{screen}");
    let on_a = line_with(&screen, "on-a");
    let on_b = line_with(&screen, "on-b");
    assert!(
        names_host(on_a, "a") && on_a.contains("asks: bash"),
        "{screen}"
    );
    assert!(
        names_host(on_b, "b") && on_b.contains("asks: bash"),
        "{screen}"
    );
    let terminal = pty.terminal(SIZE.0, SIZE.1);
    assert!(
        (0..SIZE.0).all(|r| !terminal.screen().row_wrapped(r)),
        "{screen}"
    );

    // The oldest request (a's) is selected first; `j` goes to b's row, `y` answers there.
    assert!(on_a.starts_with('▶'), "{screen}");
    pty.send("j");
    pty.wait_screen(SIZE.0, SIZE.1, |s| {
        s.contents()
            .lines()
            .any(|l| l.starts_with('▶') && l.contains("on-b"))
    })
    .unwrap_or_else(|s| panic!("b's row is not selected:\n{s}"));
    std::thread::sleep(std::time::Duration::from_millis(350));
    pty.send("y");
    until_event_of(&mut b.incoming, &b.session, |e| {
        matches!(e, Event::RunFinished { .. })
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(b.project.path().join("answered.txt")).unwrap(),
        "on-b\n"
    );
    let screen = pty.expect_screen(SIZE.0, SIZE.1, "NEEDS YOU (1)");
    assert!(
        line_with(&screen, "on-a").contains("asks: bash"),
        "{screen}"
    );
    assert!(
        line_with(&screen, "b: allowed").contains("bash"),
        "{screen}"
    );
    // a's request is still pending there, untouched.
    assert!(!a.project.path().join("answered.txt").exists());
    let pending = a
        .client
        .request(protocol::Request::ListSessions { after: None });
    let protocol::Reply::Sessions { sessions, .. } = pending.await.unwrap() else {
        panic!("no session list")
    };
    assert_eq!(sessions[0].state, protocol::SessionState::AwaitingApproval);

    // Enter attaches to b's session, over b's link; Ctrl+D comes back to the board.
    pty.wait_screen(SIZE.0, SIZE.1, |s| {
        s.contents()
            .lines()
            .any(|l| l.starts_with('▶') && l.contains("on-b"))
    })
    .unwrap_or_else(|s| panic!("b's row is not selected:\n{s}"));
    pty.send("\r");
    let short = b.session.as_str().get(..8).unwrap();
    pty.expect(&format!("session {short}"));
    pty.expect("asked and done");
    // The chat (another process) reads keys once it has put the terminal in raw mode.
    let deadline = std::time::Instant::now() + WAIT;
    while pty.cooked() {
        assert!(
            std::time::Instant::now() < deadline,
            "the chat never took the keys"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    pty.send("\x04");
    pty.wait_screen(SIZE.0, SIZE.1, |s| {
        s.alternate_screen() && s.contents().contains("NEEDS YOU (1)")
    })
    .unwrap_or_else(|s| panic!("the board did not come back:\n{s}"));

    pty.send("q");
    assert_eq!(pty.wait(), Some(0));
    assert!(pty.cooked(), "the terminal was left in raw mode");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_real_sshd_the_board_of_two_hosts_answers_on_the_host_of_the_row() {
    const SIZE: (u16, u16) = (24, 80);
    let server = ModelServer::start(Vec::new()).await;
    let alpha = asking_machine(&server, "on-alpha").await;
    let mut beta = asking_machine(&server, "on-beta").await;
    // Two sshd on loopback ports, each reaching one daemon; the laptop's client.toml names both.
    let Some(alpha_sshd) = Sshd::builder("alpha", alpha.daemon.home.path()).start() else {
        return;
    };
    let Some(beta_sshd) = Sshd::builder("beta", beta.daemon.home.path()).start() else {
        return;
    };
    let laptop = Home::new();
    alpha_sshd.register(&laptop);
    beta_sshd.register(&laptop);
    let mut command = laptop.agentctl_against(
        &server,
        alpha.project.path(),
        &["board", "--host", "alpha", "--host", "beta"],
    );
    command
        .env("TERM", "xterm-256color")
        .env_remove("AGENTCTL_SSH");
    let pty = Pty::spawn(command, SIZE.0, SIZE.1);
    let screen = pty.expect_screen(SIZE.0, SIZE.1, "NEEDS YOU (2)");
    assert!(
        names_host(line_with(&screen, "on-alpha"), "alpha"),
        "{screen}"
    );
    assert!(
        names_host(line_with(&screen, "on-beta"), "beta"),
        "{screen}"
    );

    // alpha asked first and is selected; `j` goes to beta's row, `y` answers there.
    pty.send("j");
    pty.wait_screen(SIZE.0, SIZE.1, |s| {
        s.contents()
            .lines()
            .any(|l| l.starts_with('▶') && l.contains("on-beta"))
    })
    .unwrap_or_else(|s| panic!("beta's row is not selected:\n{s}"));
    std::thread::sleep(std::time::Duration::from_millis(350));
    pty.send("y");
    until_event_of(&mut beta.incoming, &beta.session, |e| {
        matches!(e, Event::RunFinished { .. })
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(beta.project.path().join("answered.txt")).unwrap(),
        "on-beta\n"
    );
    let screen = pty.expect_screen(SIZE.0, SIZE.1, "NEEDS YOU (1)");
    assert!(
        line_with(&screen, "on-alpha").contains("asks: bash"),
        "{screen}"
    );
    assert!(!alpha.project.path().join("answered.txt").exists());
    pty.send("q");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_host_shows_as_such_while_the_others_work_and_comes_back() {
    let server = ModelServer::start(Vec::new()).await;
    let (a, project) = idle_machine("lives-on-a").await;
    let (b, _b_project) = idle_machine("lives-on-b").await;
    let ssh = HostsSsh::new(&[("a", a.home.path()), ("b", b.home.path())]);
    ssh.set_down("b", true);
    // `--all-hosts`: this machine's daemon and every named host of client.toml.
    let (local, _local_project) = idle_machine("lives-here").await;
    write_client_toml(
        &local.home,
        "[hosts.a]\nssh = \"a\"\n[hosts.b]\nssh = \"b\"\n",
    );
    for size in [(24, 80), (24, 120)] {
        let pty = board(
            &local.home,
            &server,
            project.path(),
            &ssh,
            &["board", "--all-hosts"],
            size,
        );
        let screen = pty.expect_screen(size.0, size.1, "b: unreachable, retrying");
        let screen = match screen.contains("lives-on-a") && screen.contains("lives-here") {
            true => screen,
            false => pty.expect_screen(size.0, size.1, "DONE (2)"),
        };
        assert!(
            line_with(&screen, "b: unreachable").contains("Connection refused")
                || line_with(&screen, "b: unreachable").contains("ssh ended"),
            "{screen}"
        );
        assert!(
            names_host(line_with(&screen, "lives-on-a"), "a"),
            "{screen}"
        );
        assert!(
            names_host(line_with(&screen, "lives-here"), "local"),
            "{screen}"
        );
        // What ssh says on stderr does not land on the board: at most the host's line tells it.
        assert!(
            !screen
                .lines()
                .any(|l| l.contains("ssh:") && !l.starts_with("b: ")),
            "{screen}"
        );
        let terminal = pty.terminal(size.0, size.1);
        assert!(
            (0..size.0).all(|r| !terminal.screen().row_wrapped(r)),
            "{screen}"
        );

        ssh.set_down("b", false);
        let screen = pty.expect_screen(size.0, size.1, "lives-on-b");
        assert!(
            names_host(line_with(&screen, "lives-on-b"), "b"),
            "{screen}"
        );
        let screen = pty
            .wait_screen(size.0, size.1, |s| !s.contents().contains("unreachable"))
            .unwrap_or_else(|s| panic!("b is still shown unreachable:\n{s}"));
        assert!(screen.contains("DONE (3)"), "{screen}");
        pty.send("q");
        assert_eq!(pty.wait(), Some(0));
        // What stderr got meanwhile is shown once the terminal is back.
        let after = pty.transcript(size.0, size.1).join("\n");
        assert!(after.contains("Connection refused"), "{after}");
        ssh.set_down("b", true);
    }
}

/// Writes `text` as the client's config of `home`.
fn write_client_toml(home: &Home, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    let dir = home.paths().config_dir;
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("client.toml");
    std::fs::write(&file, text).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A `sessions --watch --json` and its lines.
struct Watch {
    _child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Watch {
    fn start(
        home: &Home,
        server: &ModelServer,
        cwd: &Path,
        ssh: &HostsSsh,
        args: &[&str],
    ) -> Watch {
        let mut all = vec!["sessions", "--watch", "--json"];
        all.extend_from_slice(args);
        let mut command = home.agentctl_with(server, cwd, &all);
        let mut child = command
            .env("AGENTCTL_SSH", ssh.program())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        Watch {
            _child: child,
            lines: BufReader::new(stdout).lines(),
        }
    }

    /// The lines up to and with the first that matches `done`.
    async fn until(&mut self, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let line = tokio::time::timeout(WAIT, self.lines.next_line())
                .await
                .unwrap_or_else(|_| panic!("no line within the wait after {seen:?}"))
                .unwrap()
                .expect("the watch goes on");
            let value: Value = serde_json::from_str(&line).unwrap();
            let matched = done(&value);
            seen.push(value);
            if matched {
                return seen;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_watch_json_names_the_host_of_every_object() {
    let server = ModelServer::start(Vec::new()).await;
    let (a, project) = idle_machine("watched-on-a").await;
    let (b, _b_project) = idle_machine("watched-on-b").await;
    let ssh = HostsSsh::new(&[("a", a.home.path()), ("b", b.home.path())]);
    let here = Home::new();

    let mut watch = Watch::start(
        &here,
        &server,
        project.path(),
        &ssh,
        &["--host", "a", "--host", "b", "--host", "nowhere"],
    );
    let lines = watch.until(|v| v["ready"] == true).await;
    // Every host heard from before `ready`: both sessions, and the host that is not there.
    let about = |title: &str| {
        lines
            .iter()
            .find(|v| v["title"] == title)
            .unwrap_or_else(|| panic!("no `{title}` in {lines:?}"))
            .clone()
    };
    assert_eq!(about("watched-on-a")["host"], "a");
    assert_eq!(about("watched-on-b")["host"], "b");
    let unreachable = lines
        .iter()
        .find(|v| v.get("unreachable").is_some())
        .unwrap_or_else(|| panic!("no unreachable line in {lines:?}"));
    assert_eq!(unreachable["host"], "nowhere");
    assert_eq!(lines.last(), Some(&json!({"ready": true, "sessions": 2})));
    for value in &lines[..lines.len() - 1] {
        assert!(value.get("host").is_some(), "{value} has no host");
    }
    // A new session on b is b's.
    titled(&b.client().await, project.path(), "later-on-b").await;
    let lines = watch.until(|v| v["title"] == "later-on-b").await;
    assert_eq!(lines.last().unwrap()["host"], "b");

    // Without --host, the host is this machine's: null.
    let mut local = Watch::start(&a.home, &server, project.path(), &ssh, &[]);
    let lines = local.until(|v| v["ready"] == true).await;
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["title"], "watched-on-a");
    assert_eq!(lines[0]["host"], Value::Null);
    assert!(lines[0].as_object().unwrap().contains_key("host"));
}
