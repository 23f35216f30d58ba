//! The chat view (`attach`, `chat`) against a hostile far end and a terminal that goes away:
//! the far end's names reach the terminal shown, never obeyed; a line it never ends takes no
//! more memory as it grows; a chat whose terminal hangs up, or that is told to stop, ends at
//! once and leaves the session to the daemon. The far end here is a task of the test behind
//! `agentctl bridge` (the stand-in ssh runs the bridge against the task's socket).

use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentctl::client::frames as frame;
use protocol::{
    ClientFrame, ErrorCode, ErrorInfo, Event, PROTOCOL_VERSION, PermissionRequestId, Reply,
    Request, ServerFrame, SessionEvent, SessionId, SessionInfo, SessionState, Welcome,
};
use tests::model_server::ModelServer;
use tests::pty::Pty;
use tests::{Daemon, Home, WAIT, binary, rss};

/// Everything a hostile far end hides in a name: a clipboard write (OSC 52), a link (OSC 8),
/// a title, a screen clear, a right-to-left override and a C1 CSI.
const HOSTILE: &str = "cwd\x1b]52;c;cHduZWQ=\x07\x1b]8;;http://x.test\x07link\x1b]8;;\x07\
\x1b]0;title\x07\x1b[2J\u{202e}rev\u{9b}31mEND";

/// The session the far end says it has.
const SESSION: &str = "abc123";

/// Where a far end that sends one line without end counts the bytes it wrote.
type Written = Option<Arc<AtomicU64>>;

/// A far end behind a socket: it answers the handshake, `Subscribe` with `info` and `replay`
/// (then, with `endless`, text deltas of 64 KiB without a newline, without end), every other
/// request with an error.
struct FarEnd {
    dir: tempfile::TempDir,
}

impl FarEnd {
    fn start(info: SessionInfo, replay: Vec<Event>, endless: Written) -> FarEnd {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("far.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                listener.set_nonblocking(true).unwrap();
                let listener = tokio::net::UnixListener::from_std(listener).unwrap();
                while let Ok((stream, _)) = listener.accept().await {
                    let (info, replay, endless) = (info.clone(), replay.clone(), endless.clone());
                    tokio::spawn(serve(stream, info, replay, endless));
                }
            });
        });
        let script = format!(
            "#!/bin/sh\nAGENTD_SOCKET='{}' exec '{}' bridge\n",
            socket.display(),
            binary("agentctl").display()
        );
        let ssh = dir.path().join("ssh");
        std::fs::write(&ssh, script).unwrap();
        std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
        FarEnd { dir }
    }

    /// `agentctl --host far attach SESSION` in `home` against this far end.
    fn attach(&self, home: &Home) -> Command {
        let mut command = home.agentctl(&["--host", "far", "attach", SESSION]);
        command
            .env("AGENTCTL_SSH", self.dir.path().join("ssh"))
            .env("AGENTCTL_RECONNECT_SECS", "0")
            .env("TERM", "xterm-256color");
        command
    }
}

/// One connection of the far end.
async fn serve(
    mut stream: tokio::net::UnixStream,
    info: SessionInfo,
    replay: Vec<Event>,
    endless: Written,
) {
    let Ok(Some(ClientFrame::Hello(_))) = frame::read_frame(&mut stream).await else {
        return;
    };
    let welcome = ServerFrame::Welcome(Welcome {
        protocol_version: PROTOCOL_VERSION,
        daemon_version: "1".into(),
        pid: 4242,
    });
    let (mut reader, mut writer) = stream.into_split();
    if frame::write_frame(&mut writer, &welcome).await.is_err() {
        return;
    }
    let writer = Arc::new(tokio::sync::Mutex::new(writer));
    while let Ok(Some(ClientFrame::Request { id, request })) = frame::read_frame(&mut reader).await
    {
        let mut frames = Vec::new();
        if let Request::Subscribe { .. } = request {
            frames.push(ServerFrame::Reply {
                id,
                result: Ok(Reply::Subscribed(info.clone())),
            });
            let events = replay.iter().cloned().enumerate();
            frames.extend(events.map(|(n, e)| ServerFrame::Event(event(n as u64 + 1, e))));
            frames.push(ServerFrame::ReplayDone {
                session: SessionId(SESSION.into()),
                last_seq: replay.len() as u64,
            });
        } else {
            let result = Err(ErrorInfo::new(ErrorCode::Internal, "not here"));
            frames.push(ServerFrame::Reply { id, result });
        }
        let mut out = writer.lock().await;
        for frame in &frames {
            if frame::write_frame(&mut *out, frame).await.is_err() {
                return;
            }
        }
        drop(out);
        if let (Request::Subscribe { .. }, Some(written)) = (&request, &endless) {
            let (writer, written, from) = (writer.clone(), written.clone(), replay.len() as u64);
            tokio::spawn(async move {
                let text = "x".repeat(64 * 1024);
                for seq in from + 1.. {
                    let delta =
                        ServerFrame::Event(event(seq, Event::TextDelta { text: text.clone() }));
                    if frame::write_frame(&mut *writer.lock().await, &delta)
                        .await
                        .is_err()
                    {
                        return;
                    }
                    written.fetch_add(text.len() as u64, Ordering::Relaxed);
                }
            });
        }
    }
}

/// Event `seq` of the far end's session.
fn event(seq: u64, event: Event) -> SessionEvent {
    SessionEvent {
        session: SessionId(SESSION.into()),
        seq,
        time_ms: 0,
        event,
    }
}

/// The far end's session, in `cwd`, in `state`.
fn info(cwd: &str, state: SessionState) -> SessionInfo {
    SessionInfo {
        title: Some(HOSTILE.into()),
        model: Some(HOSTILE.into()),
        provider: Some(HOSTILE.into()),
        state,
        ..SessionInfo::idle(SessionId(SESSION.into()), cwd)
    }
}

/// Asserts that nothing of [`HOSTILE`] that a terminal obeys reached it.
fn assert_nothing_obeyed(raw: &[u8]) {
    let text = String::from_utf8_lossy(raw);
    for obeyed in ["\x1b]", "\x07", "\x1b[2J", "\u{202e}", "\u{9b}"] {
        assert!(
            !text.contains(obeyed),
            "{obeyed:?} reached the terminal:\n{text:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_shows_the_far_ends_names_and_requests_without_obeying_them() {
    let home = Home::new();
    let replay = vec![
        Event::ModelChanged {
            model: HOSTILE.into(),
        },
        Event::ThinkingDelta {
            text: format!("{HOSTILE}\n"),
        },
        Event::SubagentStarted {
            call: "c1".into(),
            child: SessionId(HOSTILE.into()),
            description: "helper".into(),
            agent: "general".into(),
            background: true,
        },
        Event::PermissionRequested {
            session: None,
            request: PermissionRequestId(1),
            tool: "bash".into(),
            args: "{}".into(),
            summary: format!("summary {HOSTILE}"),
        },
        Event::PermissionRequested {
            session: Some(SessionId(HOSTILE.into())),
            request: PermissionRequestId(2),
            tool: "bash".into(),
            args: "{}".into(),
            summary: HOSTILE.into(),
        },
    ];
    let far = FarEnd::start(info(HOSTILE, SessionState::AwaitingApproval), replay, None);
    let pty = Pty::spawn(far.attach(&home), 30, 200);
    let screen = tokio::task::spawn_blocking(move || {
        // The header names the directory; the status line asks about the pending request.
        pty.expect("session abc123 in cwd");
        pty.expect("[approve 1: summary cwd");
        pty.expect("END? ");
        pty.send("\x04");
        assert_eq!(pty.wait(), Some(0));
        pty.raw()
    })
    .await
    .unwrap();
    assert_nothing_obeyed(&screen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_the_far_end_never_ends_leaves_the_chats_memory_flat() {
    let home = Home::new();
    let written = Arc::new(AtomicU64::new(0));
    let endless = Some(written.clone());
    let far = FarEnd::start(info("/far", SessionState::Running), Vec::new(), endless);
    let pty = Terminal::spawn(far.attach(&home), true);
    let pid = pty.child.lock().unwrap().id();
    let at = move |bytes: u64| {
        let deadline = Instant::now() + WAIT * 3;
        while written.load(Ordering::Relaxed) < bytes {
            assert!(
                Instant::now() < deadline,
                "the chat took in only {} bytes",
                written.load(Ordering::Relaxed)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        rss(pid)
    };
    let (early, late) = tokio::task::spawn_blocking(move || (at(8 << 20), at(72 << 20)))
        .await
        .unwrap();
    assert!(early > 0, "the RSS of agentctl was read");
    assert!(
        late < early + (24 << 20),
        "agentctl grew from {} to {} MiB while 64 MiB of one line came",
        early >> 20,
        late >> 20
    );
}

/// A terminal the test can hang up, as a closed window or a killed tmux does: the child gets
/// the slave side (as its controlling terminal when `controlling`), the test the only
/// descriptor of the master side, whose output it keeps the end of.
struct Terminal {
    child: Mutex<Child>,
    hang_up: Arc<AtomicBool>,
    output: Arc<Mutex<Vec<u8>>>,
}

impl Terminal {
    fn spawn(mut command: Command, controlling: bool) -> Terminal {
        let (master, slave) = tests::pty::open_pty(24, 80);
        let stdio = |fd: &OwnedFd| std::process::Stdio::from(fd.try_clone().unwrap());
        command
            .stdin(stdio(&slave))
            .stdout(stdio(&slave))
            .stderr(stdio(&slave));
        // SAFETY: setsid and ioctl are async-signal-safe.
        unsafe {
            use std::os::unix::process::CommandExt;
            command.pre_exec(move || {
                libc::setsid();
                if controlling {
                    libc::ioctl(0, libc::TIOCSCTTY, 0);
                }
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        drop(slave);
        let hang_up = Arc::new(AtomicBool::new(false));
        let output: Arc<Mutex<Vec<u8>>> = Arc::default();
        let (stop, kept) = (hang_up.clone(), output.clone());
        // The only descriptor of the master: closing it hangs the terminal up.
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while !stop.load(Ordering::Relaxed) {
                let mut watch = libc::pollfd {
                    fd: master.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: poll and read on a descriptor this thread owns, into its buffers.
                let n = unsafe {
                    if libc::poll(&mut watch, 1, 20) <= 0 {
                        continue;
                    }
                    libc::read(master.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len())
                };
                if n <= 0 {
                    return;
                }
                let mut kept = kept.lock().unwrap();
                kept.extend_from_slice(&buf[..n as usize]);
                if kept.len() > 1 << 20 {
                    kept.drain(..1 << 19);
                }
            }
        });
        Terminal {
            child: Mutex::new(child),
            hang_up,
            output,
        }
    }

    /// Waits until `text` is in what the terminal shows last.
    fn expect(&self, text: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            let shown = tests::pty::strip_ansi(&self.output.lock().unwrap());
            if shown.contains(text) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "`{text}` did not appear:\n{shown}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Closes the master side.
    fn hang_up(&self) {
        self.hang_up.store(true, Ordering::Relaxed);
    }

    /// Waits for the child to end within `WAIT`; its exit code, or its CPU time while it
    /// would not end.
    fn wait(&self) -> Result<Option<i32>, String> {
        let deadline = Instant::now() + WAIT;
        let mut child = self.child.lock().unwrap();
        let pid = child.id();
        let cpu_before = tests::process_cpu(pid);
        while Instant::now() < deadline {
            if let Some(status) = child.try_wait().unwrap() {
                return Ok(status.code());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "agentctl did not end; it used {:?} of CPU in {WAIT:?}",
            tests::process_cpu(pid).saturating_sub(cpu_before)
        ))
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.hang_up();
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// `agentctl attach` of a new session of this machine's daemon, on a [`Terminal`].
async fn attached(daemon: &Daemon, server: &ModelServer, controlling: bool) -> (Terminal, String) {
    let project = tempfile::tempdir().unwrap();
    let create = Request::CreateSession(protocol::CreateSession::in_dir(
        project.path().display().to_string(),
    ));
    let Reply::SessionCreated(info) = daemon.client().await.request(create).await.unwrap() else {
        panic!("no session created");
    };
    let id = info.id.0;
    let mut command = daemon
        .home
        .agentctl_against(server, project.path(), &["attach", &id]);
    command.env("TERM", "xterm-256color");
    let terminal = Terminal::spawn(command, controlling);
    let terminal = tokio::task::spawn_blocking(move || {
        terminal.expect("[idle");
        terminal
    })
    .await
    .unwrap();
    (terminal, id)
}

/// Hangs up the terminal of an attached chat; it must end, and the session stays.
async fn hang_up_ends_the_chat(controlling: bool) {
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let (terminal, id) = attached(&daemon, &server, controlling).await;
    terminal.hang_up();
    let ended = tokio::task::spawn_blocking(move || terminal.wait())
        .await
        .unwrap();
    assert!(ended.is_ok(), "{}", ended.unwrap_err());
    let list = daemon.client().await.list_sessions().await.unwrap();
    assert!(
        list.sessions.iter().any(|s| s.id.0 == id),
        "the session went with the chat"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_whose_controlling_terminal_hangs_up_ends() {
    hang_up_ends_the_chat(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_whose_terminal_goes_away_without_a_hangup_signal_ends() {
    hang_up_ends_the_chat(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_a_chat_and_gives_the_terminal_back() {
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let args = ["chat"];
    let pty = Pty::agentctl(&daemon.home, &server, project.path(), &args, (24, 80));
    tokio::task::spawn_blocking(move || {
        pty.expect("[idle");
        tests::signal(pty.pid(), libc::SIGTERM);
        assert_eq!(pty.wait(), Some(0));
        assert!(pty.cooked(), "the terminal is left raw");
    })
    .await
    .unwrap();
}
