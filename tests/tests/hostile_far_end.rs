//! The far end of `--host` is another machine, which may be compromised or whose shell may
//! misbehave: the client holds only what it asked for and only so much of it, shows the far
//! end's text without obeying its escape sequences and at a bounded length, and tells text a
//! remote shell printed apart from a link that ended. Here the far end is a stand-in ssh
//! (`AGENTCTL_SSH`, a shell script) that writes frames built by the test, or a task behind an
//! in-memory pipe.

use std::path::PathBuf;
use std::process::Stdio;

use agentctl::client::frames as frame;
use agentctl::client::unread::UNREAD_LIMIT;
use agentctl::client::{Client, ClientError, Incoming};
use protocol::{
    ClientFrame, ErrorCode, ErrorInfo, Event, PROTOCOL_VERSION, Reply, Request, RequestId,
    ServerFrame, SessionEvent, SessionId, Welcome,
};
use tests::{Home, WAIT, make_fifo, peak_rss, read_fifo};

/// The escape sequences a hostile far end hides in its text: a terminal title, a screen clear.
const ESCAPES: &str = "\x1b]0;pwned\x07\x1b[2J";

/// What the far end writes, in order.
enum Step<'a> {
    /// These frames, this many times over.
    Frames(&'a [ServerFrame], usize),
    /// Says it got here ([`FarEnd::paused`]) and waits for [`FarEnd::go_on`].
    Pause,
}

/// A stand-in for ssh that runs `before` (shell commands, e.g. a banner), writes its steps,
/// then reads its input to the end.
struct FarEnd {
    dir: tempfile::TempDir,
}

impl FarEnd {
    fn new(before: &str, steps: &[Step]) -> FarEnd {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mut script = format!("#!/bin/sh\n{before}\n");
        for (n, step) in steps.iter().enumerate() {
            match step {
                Step::Frames(frames, times) => {
                    let file = dir.path().join(format!("step{n}"));
                    let bytes: Vec<u8> = frames
                        .iter()
                        .flat_map(|f| frame::encode(f).unwrap())
                        .collect();
                    std::fs::write(&file, bytes).unwrap();
                    script.push_str(&format!(
                        "i=0; while [ $i -lt {times} ]; do cat '{}' || exit 1; i=$((i+1)); done\n",
                        file.display()
                    ));
                }
                Step::Pause => {
                    make_fifo(&dir.path().join("paused"));
                    make_fifo(&dir.path().join("go"));
                    script.push_str(&format!(
                        "echo 1 > '{}'; read go < '{}'\n",
                        dir.path().join("paused").display(),
                        dir.path().join("go").display()
                    ));
                }
            }
        }
        script.push_str("exec cat > /dev/null\n");
        let path = dir.path().join("ssh");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        FarEnd { dir }
    }

    fn program(&self) -> PathBuf {
        self.dir.path().join("ssh")
    }

    /// Waits until the far end reached its [`Step::Pause`].
    async fn paused(&self) {
        assert_eq!(read_fifo(&self.dir.path().join("paused")).await, 1);
    }

    /// Lets the far end go on after its pause.
    async fn go_on(&self) {
        let go = self.dir.path().join("go");
        tokio::task::spawn_blocking(move || std::fs::write(go, "1\n"))
            .await
            .unwrap()
            .unwrap();
    }
}

/// How an `agentctl` ended.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `agentctl --host far ARGS…` in `home` against `far`, killed when dropped.
fn agentctl(home: &Home, far: &FarEnd, args: &[&str]) -> tokio::process::Command {
    let mut all = vec!["--host", "far"];
    all.extend_from_slice(args);
    let mut command = tokio::process::Command::from(home.agentctl(&all));
    command
        .env("AGENTCTL_SSH", far.program())
        .env("AGENTCTL_RECONNECT_SECS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Waits for `child` to end (at most [`WAIT`]).
async fn ended(child: tokio::process::Child) -> Ran {
    let out = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("agentctl ends within the wait")
        .unwrap();
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `agentctl --host far ARGS…` in `home` against `far` to its end.
async fn run(home: &Home, far: &FarEnd, args: &[&str]) -> Ran {
    ended(agentctl(home, far, args).spawn().unwrap()).await
}

/// A Welcome as this version's daemon says it, or with `version`.
fn welcome(version: &str) -> ServerFrame {
    ServerFrame::Welcome(Welcome {
        protocol_version: PROTOCOL_VERSION,
        daemon_version: version.to_string(),
        pid: 4242,
    })
}

/// The reply to `agentctl sessions`'s first request: no sessions.
fn no_sessions() -> ServerFrame {
    ServerFrame::Reply {
        id: RequestId(1),
        result: Ok(Reply::Sessions {
            sessions: Vec::new(),
            next: None,
            unreadable: Vec::new(),
        }),
    }
}

/// An event of `session` carrying `bytes` bytes of text.
fn event(session: &str, seq: u64, bytes: usize) -> SessionEvent {
    SessionEvent {
        session: SessionId(session.to_string()),
        seq,
        time_ms: 0,
        event: Event::Notice {
            text: "x".repeat(bytes),
        },
    }
}

/// The message of a hostile error: escape sequences, then 100 KB of text.
fn hostile_message() -> String {
    format!("{ESCAPES}pwned{}", "A".repeat(100_000))
}

/// What a terminal must never receive from the far end.
fn assert_shown_not_obeyed(stderr: &str) {
    assert!(
        !stderr.contains('\x1b'),
        "an ESC reached stderr: {stderr:?}"
    );
    assert!(!stderr.contains('\x07'), "a BEL reached stderr: {stderr:?}");
    assert!(stderr.len() < 5_000, "{} bytes on stderr", stderr.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_frames_never_asked_for_leaves_memory_flat() {
    let home = Home::new();
    // 256 KiB of unasked frames a round: events and ends of replays for a session nobody
    // follows, board summaries nobody asked for, replies to a request never made.
    let mut flood: Vec<ServerFrame> = (1..=15)
        .map(|seq| ServerFrame::Event(event("never-followed", seq, 16 * 1024)))
        .collect();
    flood.extend([
        ServerFrame::ReplayDone {
            session: SessionId("never-followed".into()),
            last_seq: 15,
        },
        ServerFrame::SummariesReady { sessions: 1 },
        ServerFrame::SummaryRemoved {
            session: SessionId("never-followed".into()),
        },
        ServerFrame::Reply {
            id: RequestId(9_999),
            result: Err(ErrorInfo::new(ErrorCode::Internal, "x".repeat(16 * 1024))),
        },
    ]);
    // 1200 rounds: about 300 MiB.
    let far = FarEnd::new(
        "",
        &[
            Step::Frames(&[welcome(env!("CARGO_PKG_VERSION"))], 1),
            Step::Frames(&flood, 1200),
            Step::Pause,
            Step::Frames(&[no_sessions()], 1),
        ],
    );
    let child = agentctl(&home, &far, &["sessions"]).spawn().unwrap();
    let pid = child.id().unwrap();
    // The pipe holds 64 KiB: agentctl has read all but that much of the flood by now.
    far.paused().await;
    let peak = peak_rss(pid);
    far.go_on().await;
    let ran = ended(child).await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(ran.stdout.contains("no sessions"), "{}", ran.stdout);
    assert!(peak > 0, "VmHWM of agentctl was read");
    assert!(
        peak < 64 * 1024 * 1024,
        "agentctl peaked at {} MiB while ~300 MiB of unasked frames passed",
        peak / (1024 * 1024)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_far_end_that_floods_a_front_end_which_does_not_read_ends_the_connection() {
    let (near, mut far) = tokio::io::duplex(1024 * 1024);
    let (reader, writer) = tokio::io::split(near);
    let flood = tokio::spawn(async move {
        let hello = frame::read_frame::<ClientFrame, _>(&mut far).await.unwrap();
        assert!(matches!(hello, Some(ClientFrame::Hello(_))), "{hello:?}");
        frame::write_frame(&mut far, &welcome("1")).await.unwrap();
        let Some(ClientFrame::Request { id, .. }) = frame::read_frame(&mut far).await.unwrap()
        else {
            panic!("a subscription comes first");
        };
        let done = ServerFrame::Reply {
            id,
            result: Ok(Reply::Done),
        };
        frame::write_frame(&mut far, &done).await.unwrap();
        // Twice the limit, a MiB an event: the client stops reading long before.
        for seq in 1..=(2 * UNREAD_LIMIT / (1024 * 1024)) as u64 {
            let event = ServerFrame::Event(event("followed", seq, 1024 * 1024));
            if frame::write_frame(&mut far, &event).await.is_err() {
                return;
            }
        }
    });
    let mut client = Client::over(reader, writer, "hostile test", "far")
        .await
        .unwrap();
    let mut events = client.take_events().unwrap();
    let subscribe = Request::Subscribe {
        session: SessionId("followed".into()),
        from_seq: 0,
    };
    client.request(subscribe).await.unwrap();
    // Nothing reads the events: the connection ends when too many wait.
    let err = tokio::time::timeout(WAIT, client.request(Request::Status))
        .await
        .expect("the connection ends")
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("more than 64 MiB of events"), "{text}");
    let mut held = 0;
    let closed = loop {
        match tokio::time::timeout(WAIT, events.recv()).await.unwrap() {
            Some(Incoming::Event(_)) => held += 1,
            Some(Incoming::Closed(reason)) => break reason,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert!(held <= 64, "{held} MiB of events were held");
    assert!(held >= 32, "only {held} MiB of events were held");
    assert!(closed.unwrap_or_default().contains("did not read"));
    drop(client);
    flood.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_far_end_error_reaches_the_terminal_shown_and_capped() {
    let hostile = |code| ServerFrame::Error(ErrorInfo::new(code, hostile_message()));
    let cases = [
        ("refused handshake", vec![hostile(ErrorCode::Internal)]),
        ("version refusal", vec![hostile(ErrorCode::VersionMismatch)]),
        (
            "error after the welcome",
            vec![
                welcome(env!("CARGO_PKG_VERSION")),
                hostile(ErrorCode::Internal),
            ],
        ),
        (
            "refused request",
            vec![
                welcome(env!("CARGO_PKG_VERSION")),
                ServerFrame::Reply {
                    id: RequestId(1),
                    result: Err(ErrorInfo::new(ErrorCode::Internal, hostile_message())),
                },
            ],
        ),
    ];
    for (case, frames) in cases {
        let home = Home::new();
        let far = FarEnd::new("", &[Step::Frames(&frames, 1)]);
        let ran = run(&home, &far, &["sessions"]).await;
        assert_ne!(ran.code, Some(0), "{case}: {}", ran.stderr);
        assert!(
            ran.stderr.contains("]0;pwned"),
            "{case}: the message is shown: {}",
            ran.stderr
        );
        assert!(ran.stderr.contains('…'), "{case}: {}", ran.stderr);
        assert_shown_not_obeyed(&ran.stderr);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_version_with_escapes_is_shown_not_obeyed() {
    let home = Home::new();
    let version = format!("{ESCAPES}9.9.9\n{}", "v".repeat(10_000));
    let far = FarEnd::new("", &[Step::Frames(&[welcome(&version), no_sessions()], 1)]);
    let ran = run(&home, &far, &["sessions"]).await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("the running daemon is agentd"),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("9.9.9"), "{}", ran.stderr);
    assert_shown_not_obeyed(&ran.stderr);
    assert!(ran.stderr.len() < 1_000, "{}", ran.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_a_remote_shell_prints_before_the_bridge_is_told_apart_from_a_lost_link() {
    let banner = "printf 'Welcome to host\\nLast login: never\\n'";
    // The bridge starts after the banner; or the shell prints it and ends.
    for (before, steps) in [
        (
            banner.to_string(),
            vec![Step::Frames(
                &[welcome(env!("CARGO_PKG_VERSION")), no_sessions()][..],
                1,
            )],
        ),
        (format!("{banner}; exit 127"), Vec::new()),
    ] {
        let home = Home::new();
        let far = FarEnd::new(&before, &steps);
        let ran = run(&home, &far, &["sessions"]).await;
        assert_ne!(ran.code, Some(0), "{before}: {}", ran.stderr);
        assert!(
            ran.stderr.contains("Welcome to host\\nLast login: never"),
            "{before}: {}",
            ran.stderr
        );
        assert!(
            !ran.stderr.contains("ssh ended before a daemon answered"),
            "{before}: {}",
            ran.stderr
        );
        assert!(
            ran.stderr
                .contains("printed text before the bridge started")
                && ran
                    .stderr
                    .contains("print nothing for non-interactive shells"),
            "{before}: {}",
            ran.stderr
        );
    }
}

#[tokio::test]
async fn a_banner_where_the_welcome_should_be_is_not_a_frame() {
    for (banner, then_welcome, shown) in [
        (
            &b"Welcome to host\r\nLast login: never\n"[..],
            true,
            "Welcome to host\\nLast login: never",
        ),
        // Shorter than a frame's prefix, then the end.
        (&b"hi\n"[..], false, "hi"),
        (
            &b"\x1b]0;pwned\x07 hello"[..],
            true,
            "\u{fffd}]0;pwned\u{fffd} hello",
        ),
    ] {
        let (near, mut far) = tokio::io::duplex(64 * 1024);
        let (reader, writer) = tokio::io::split(near);
        let mut bytes = banner.to_vec();
        if then_welcome {
            bytes.extend(frame::encode(&welcome("1")).unwrap());
        }
        let far_end = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            far.write_all(&bytes).await.unwrap();
            far.shutdown().await.unwrap();
            // Kept open until the test is done with it.
            far
        });
        let err = Client::over(reader, writer, "hostile test", "ssh far")
            .await
            .err()
            .expect("no client");
        match &err {
            ClientError::NotAFrame { peer, text } => {
                assert_eq!(peer, "ssh far");
                assert_eq!(text, shown);
            }
            other => panic!("{other:?}"),
        }
        assert!(!err.connection_lost(), "{err}");
        drop(far_end.await);
    }
}

/// A far end behind an in-memory pipe: it welcomes the client, answers its first request with
/// `reply`, then writes `then` and keeps the pipe open until the test ends.
async fn far_end_answering(
    reply: Reply,
    then: impl Iterator<Item = ServerFrame> + Send + 'static,
) -> (Client, tokio::task::JoinHandle<()>) {
    let (near, mut far) = tokio::io::duplex(1024 * 1024);
    let (reader, writer) = tokio::io::split(near);
    let task = tokio::spawn(async move {
        let _hello = frame::read_frame::<ClientFrame, _>(&mut far).await;
        frame::write_frame(&mut far, &welcome("1")).await.unwrap();
        let Ok(Some(ClientFrame::Request { id, .. })) = frame::read_frame(&mut far).await else {
            return;
        };
        let answer = ServerFrame::Reply {
            id,
            result: Ok(reply),
        };
        if frame::write_frame(&mut far, &answer).await.is_err() {
            return;
        }
        for next in then {
            if frame::write_frame(&mut far, &next).await.is_err() {
                return;
            }
        }
        let _ = frame::read_frame::<ClientFrame, _>(&mut far).await;
    });
    let client = Client::over(reader, writer, "hostile test", "far")
        .await
        .unwrap();
    (client, task)
}

/// A session's listing as a hostile far end writes it.
fn listing(id: &str, title: &str) -> protocol::SessionInfo {
    protocol::SessionInfo {
        title: Some(title.to_string()),
        model: Some(format!("model{ESCAPES}")),
        ..protocol::SessionInfo::idle(
            SessionId(id.to_string()),
            format!("/work{ESCAPES}\n[other-host] forged"),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_id_that_is_not_one_ends_the_connection_and_texts_are_tamed() {
    let bad = format!("s1{ESCAPES}\n[other-host] x");
    let (client, task) = far_end_answering(
        Reply::SessionCreated(listing(&bad, "t")),
        std::iter::empty(),
    )
    .await;
    let err = client
        .request(Request::Status)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("which is not one"), "{err}");
    assert!(!err.contains('\x1b') && !err.contains('\n'), "{err:?}");
    task.abort();

    let title = format!("{ESCAPES}{}", "T".repeat(100_000));
    let (client, task) = far_end_answering(
        Reply::SessionCreated(listing("s1", &title)),
        std::iter::empty(),
    )
    .await;
    let Reply::SessionCreated(info) = client.request(Request::Status).await.unwrap() else {
        panic!("not the listing")
    };
    for text in [
        &info.cwd,
        info.title.as_ref().unwrap(),
        info.model.as_ref().unwrap(),
    ] {
        assert!(!text.contains('\x1b') && !text.contains('\n'), "{text:?}");
        assert!(text.chars().count() <= 4097, "{} characters", text.len());
    }
    assert!(info.title.unwrap().chars().count() <= 501);
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summaries_of_more_sessions_than_a_board_follows_end_the_feed() {
    use agentctl::client::Summaries;
    use agentctl::client::summaries::MAX_SESSIONS;
    // Distinct sessions without end, each with a 100 KB title.
    let title = "T".repeat(100_000);
    let flood = (0u64..).map(move |n| {
        ServerFrame::Summary(Box::new(protocol::SessionSummary {
            info: listing(&format!("s{n}"), &title),
            activity: protocol::Activity::Idle,
            activity_since_ms: 0,
            run: None,
            pending: Vec::new(),
            plan: None,
            shells: 0,
        }))
    });
    let (client, task) = far_end_answering(Reply::Done, flood).await;
    let feed = Summaries::follow(client).await.unwrap();
    let closed = tokio::time::timeout(WAIT, async {
        loop {
            feed.changed().await;
            if let Some(reason) = feed.take().closed {
                break reason.unwrap_or_default();
            }
        }
    })
    .await
    .expect("the feed ends");
    assert!(
        closed.contains(&format!("more than {MAX_SESSIONS} sessions")),
        "{closed}"
    );
    task.abort();
}
