//! Files that are not what they seem (docs/architecture.md#tools): devices, FIFOs and sockets named
//! like source files, huge offsets, odd git metadata. Each gets a clear result; the daemon stays
//! up, small and responsive.

use protocol::{Event, Reply, Request, StopReason};
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{
    Daemon, TestEnv, peak_rss, run_options, session_in, start_run, tool_results, until_finished,
};

/// A project holding a symlink to `/dev/zero`, a FIFO, a socket and one ordinary file.
fn hostile_project() -> (tempfile::TempDir, std::os::unix::net::UnixListener) {
    let project = tempfile::tempdir().unwrap();
    let dir = project.path();
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.rs")).unwrap();
    tests::make_fifo(&dir.join("pipe.rs"));
    let socket = std::os::unix::net::UnixListener::bind(dir.join("sock.rs")).unwrap();
    std::fs::write(dir.join("real.rs"), "fn needle() {}\n").unwrap();
    (project, socket)
}

#[tokio::test]
async fn devices_fifos_and_sockets_are_refused_and_memory_stays_bounded() {
    let (project, _socket) = hostile_project();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .tool("read", json!({"path": "zero.rs"}))
            .tool("read", json!({"path": "pipe.rs"}))
            .tool("read", json!({"path": "sock.rs"}))
            .tool("grep", json!({"pattern": "x", "path": "zero.rs"}))
            .tool("grep", json!({"pattern": "needle"}))
            .tool("glob", json!({"pattern": "*.rs"}))
            .build(),
        anthropic::tool(
            "edit",
            json!({"path": "zero.rs", "old_string": "a", "new_string": "b"}),
        ),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(
        &client,
        &session,
        "look at everything",
        run_options(&server),
    )
    .await;
    let events = until_finished(&mut incoming).await;
    let results = tool_results(&events);
    let expect = [
        "cannot read zero.rs: it is a character device, not a regular file",
        "cannot read pipe.rs: it is a FIFO (named pipe), not a regular file",
        "cannot read sock.rs: it is a socket, not a regular file",
        "cannot search zero.rs: it is a character device, not a regular file",
    ];
    // The first six calls ran together, so their results come in any order.
    let first: Vec<_> = results.iter().take(6).collect();
    for expected in expect {
        assert!(
            first.iter().any(|r| r.1 && r.2.starts_with(expected)),
            "no result `{expected}` in {first:?}"
        );
    }
    // A search of the whole tree skips what is not a regular file and finds the rest.
    let found = (
        "grep".to_string(),
        false,
        "real.rs:1:fn needle() {}\n[1 match in 1 file]".to_string(),
    );
    assert!(first.contains(&&found), "{first:?}");
    let listed = ("glob".to_string(), false, "real.rs".to_string());
    assert!(first.contains(&&listed), "{first:?}");
    assert!(
        results[6]
            .2
            .starts_with("cannot edit zero.rs: it is a character device"),
        "{:?}",
        results[6]
    );
    assert!(matches!(
        tests::finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            ..
        }
    ));
    let peak = peak_rss(daemon.pid());
    assert!(
        peak < 200 * 1024 * 1024,
        "the daemon's peak memory was {} MiB",
        peak >> 20
    );
    assert!(matches!(
        client
            .request(Request::ListSessions { after: None })
            .await
            .unwrap(),
        Reply::Sessions { .. }
    ));
}

#[tokio::test]
async fn offsets_and_limits_near_the_largest_number_get_a_clear_result() {
    let max = u64::MAX;
    let mut env = TestEnv::builder()
        .file("a.txt", "one\ntwo\n")
        .model(vec![
            anthropic::reply()
                .tool(
                    "read",
                    json!({"path": "a.txt", "offset": max, "limit": max}),
                )
                .tool("read", json!({"path": "a.txt", "offset": 2, "limit": max}))
                .build(),
            anthropic::text("done"),
        ])
        .start()
        .await;
    env.start_run("page").await;
    let results = tool_results(&until_finished(&mut env.incoming).await);
    // The two reads ran together, so their results come in any order.
    let past_the_end = (
        "read".to_string(),
        true,
        format!("cannot read a.txt: offset {max} is past the end of the file (2 lines)"),
    );
    let second_line = (
        "read".to_string(),
        false,
        "     2\ttwo\n\n(lines 2-2 of 2; use offset and limit to read more)\n".to_string(),
    );
    assert!(results.contains(&past_the_end), "{results:?}");
    assert!(results.contains(&second_line), "{results:?}");
}

#[tokio::test]
async fn a_detached_head_that_is_not_ascii_does_not_break_the_system_prompt() {
    let setup = TestEnv::builder();
    std::fs::create_dir_all(setup.project().join(".git")).unwrap();
    // Its 12th byte falls inside a character.
    std::fs::write(setup.project().join(".git/HEAD"), "ééééééééé\n").unwrap();
    let mut env = setup
        .model(vec![anthropic::text("one"), anthropic::text("two")])
        .start()
        .await;
    for prompt in ["first", "second"] {
        let events = env.run(prompt).await;
        assert!(matches!(
            tests::finished(&events),
            Event::RunFinished {
                stop_reason: StopReason::Completed,
                ..
            }
        ));
    }
    let system = env.server.received()[1].body["system"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    // What is neither a ref nor a commit is not shown (a HEAD may be a link to a secret).
    assert!(system.contains("Git repository: yes (root "), "{system}");
    assert!(!system.contains("é"), "{system}");
}
