//! Hostile input: every case gets a clear error, closes only its own connection, and leaves the
//! daemon serving others.

use agentctl::client::frames as frame;
use protocol::{
    ClientFrame, ErrorCode, Hello, PROTOCOL_VERSION, Reply, Request, RequestId, SessionId,
};
use tests::Daemon;
use tests::wire::{expect_error_and_close, hello, raw};
use tokio::io::AsyncWriteExt;

/// Proves the daemon still serves: a fresh client lists sessions.
async fn still_serves(daemon: &Daemon) {
    let client = daemon.client().await;
    assert!(matches!(
        client
            .request(Request::ListSessions { after: None })
            .await
            .unwrap(),
        Reply::Sessions { .. }
    ));
}

#[tokio::test]
async fn garbage_bytes_get_a_malformed_frame_error() {
    let daemon = Daemon::start();
    let mut stream = raw(&daemon).await;
    hello(&mut stream).await;
    stream
        .write_all(&[0, 0, 0, 5, 0xff, 0xfe, 0xfd, 0xfc, 0xfb])
        .await
        .unwrap();
    let info = expect_error_and_close(&mut stream).await;
    assert_eq!(info.code, ErrorCode::MalformedFrame, "{info:?}");
    still_serves(&daemon).await;
}

#[tokio::test]
async fn text_instead_of_frames_is_refused_as_too_large() {
    let daemon = Daemon::start();
    let mut stream = raw(&daemon).await;
    // "GET " read as a length is about 1.2 GB.
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let info = expect_error_and_close(&mut stream).await;
    assert_eq!(info.code, ErrorCode::FrameTooLarge, "{info:?}");
    still_serves(&daemon).await;
}

#[tokio::test]
async fn a_4_gib_length_prefix_is_refused_before_reading_the_body() {
    let daemon = Daemon::start();
    let mut stream = raw(&daemon).await;
    hello(&mut stream).await;
    stream.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
    let info = expect_error_and_close(&mut stream).await;
    assert_eq!(info.code, ErrorCode::FrameTooLarge);
    assert!(info.message.contains("4294967295"), "{}", info.message);
    still_serves(&daemon).await;
}

#[tokio::test]
async fn a_truncated_frame_is_reported_when_the_client_stops_sending() {
    let daemon = Daemon::start();
    let mut stream = raw(&daemon).await;
    hello(&mut stream).await;
    stream.write_all(&100u32.to_be_bytes()).await.unwrap();
    stream.write_all(&[1, 2, 3]).await.unwrap();
    stream.shutdown().await.unwrap();
    let info = expect_error_and_close(&mut stream).await;
    assert_eq!(info.code, ErrorCode::MalformedFrame);
    assert!(
        info.message.contains("middle of a frame"),
        "{}",
        info.message
    );
    still_serves(&daemon).await;
}

#[tokio::test]
async fn a_frame_of_an_unknown_variant_is_malformed() {
    let daemon = Daemon::start();
    let mut stream = raw(&daemon).await;
    hello(&mut stream).await;
    // ClientFrame::Request (variant 1), id 5, request variant 200: no such request.
    stream.write_all(&[0, 0, 0, 3, 1, 5, 200]).await.unwrap();
    let info = expect_error_and_close(&mut stream).await;
    assert_eq!(info.code, ErrorCode::MalformedFrame, "{info:?}");
    still_serves(&daemon).await;
}

#[tokio::test]
async fn a_request_before_hello_is_refused() {
    let daemon = Daemon::start();
    let mut stream = raw(&daemon).await;
    let request = ClientFrame::Request {
        id: RequestId(1),
        request: Request::ListSessions { after: None },
    };
    frame::write_frame(&mut stream, &request).await.unwrap();
    let info = expect_error_and_close(&mut stream).await;
    assert_eq!(info.code, ErrorCode::HandshakeRequired);
    assert!(info.message.contains("Hello"), "{}", info.message);
    still_serves(&daemon).await;
}

#[tokio::test]
async fn a_wrong_protocol_version_names_both_versions() {
    let daemon = Daemon::start();
    let mut stream = raw(&daemon).await;
    let hello = ClientFrame::Hello(Hello {
        protocol_version: 99,
        client: "future".into(),
    });
    frame::write_frame(&mut stream, &hello).await.unwrap();
    let info = expect_error_and_close(&mut stream).await;
    assert_eq!(info.code, ErrorCode::VersionMismatch);
    assert!(info.message.contains("version 99"), "{}", info.message);
    assert!(
        info.message
            .contains(&format!("version {PROTOCOL_VERSION}")),
        "{}",
        info.message
    );
    still_serves(&daemon).await;
}

#[tokio::test]
async fn an_unknown_session_gets_an_error_reply_and_the_connection_stays_open() {
    let daemon = Daemon::start();
    let client = daemon.client().await;
    let unknown = SessionId("deadbeef".into());
    for request in [
        Request::GetHistory {
            session: unknown.clone(),
            from_seq: 0,
        },
        Request::Subscribe {
            session: unknown.clone(),
            from_seq: 0,
        },
        Request::SetMode {
            session: unknown.clone(),
            mode: protocol::Mode::Plan,
        },
        Request::DeleteSession {
            session: unknown.clone(),
            force: true,
        },
        Request::Cancel {
            session: unknown.clone(),
        },
    ] {
        let err = client.request(request).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::UnknownSession));
        assert!(err.to_string().contains("no session `deadbeef`"), "{err}");
    }
    // The same connection still works.
    assert!(matches!(
        client
            .request(Request::ListSessions { after: None })
            .await
            .unwrap(),
        Reply::Sessions { .. }
    ));
}

#[tokio::test]
async fn a_client_that_disconnects_mid_frame_harms_nobody() {
    let daemon = Daemon::start();
    let watcher = daemon.client().await;
    let mut stream = raw(&daemon).await;
    hello(&mut stream).await;
    stream.write_all(&1000u32.to_be_bytes()).await.unwrap();
    stream.write_all(&[0; 10]).await.unwrap();
    drop(stream);
    // Both an existing and a new connection carry on.
    assert!(matches!(
        watcher.request(Request::Status).await.unwrap(),
        Reply::Status(_)
    ));
    still_serves(&daemon).await;
}

#[tokio::test]
async fn two_hundred_connections_at_once_are_all_served() {
    let daemon = Daemon::start();
    let socket = daemon.paths().socket;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..200 {
        let socket = socket.clone();
        tasks.spawn(async move {
            let client = agentctl::client::Client::connect(&socket, &format!("crowd {i}"))
                .await
                .unwrap();
            matches!(
                client
                    .request(Request::ListSessions { after: None })
                    .await
                    .unwrap(),
                Reply::Sessions { .. }
            )
        });
    }
    let mut served = 0;
    while let Some(result) = tasks.join_next().await {
        assert!(result.unwrap());
        served += 1;
    }
    assert_eq!(served, 200);
    still_serves(&daemon).await;
}

#[tokio::test]
async fn a_frame_that_stalls_midway_is_dropped_and_the_daemon_serves_on() {
    let daemon = Daemon::start_in(tests::Home::with_config("frame_timeout_ms = 300\n"));
    let mut stream = raw(&daemon).await;
    hello(&mut stream).await;
    // A frame announcing 16 MiB, of which one byte arrives.
    stream
        .write_all(&(16u32 * 1024 * 1024).to_be_bytes())
        .await
        .unwrap();
    stream.write_all(&[0]).await.unwrap();
    let info = expect_error_and_close(&mut stream).await;
    assert_eq!(info.code, ErrorCode::MalformedFrame, "{info:?}");
    assert!(
        info.message.contains("not completed within 300 ms"),
        "{info:?}"
    );
    still_serves(&daemon).await;
}

#[tokio::test]
async fn connections_over_the_limit_are_refused_with_a_clear_error() {
    let daemon = Daemon::start_in(tests::Home::with_config("max_connections = 3\n"));
    let mut held = Vec::new();
    for _ in 0..3 {
        // Each client has asked something: none of them is idle since Hello.
        let client = daemon.client().await;
        client
            .request(Request::ListSessions { after: None })
            .await
            .unwrap();
        held.push(client);
    }
    let mut extra = raw(&daemon).await;
    let info = expect_error_and_close(&mut extra).await;
    assert_eq!(info.code, ErrorCode::Busy, "{info:?}");
    assert!(info.message.contains("at most 3 clients"), "{info:?}");
    // A slot that frees up is usable again.
    drop(held.pop());
    let reconnect = async {
        loop {
            match agentctl::client::Client::connect(&daemon.paths().socket, "test").await {
                Ok(client) => break client,
                // The daemon may not have seen the dropped connection close yet.
                Err(err) if err.code() == Some(ErrorCode::Busy) => tokio::task::yield_now().await,
                Err(err) => panic!("{err}"),
            }
        }
    };
    let client = tokio::time::timeout(tests::WAIT, reconnect)
        .await
        .expect("a slot frees up");
    assert!(matches!(
        client
            .request(Request::ListSessions { after: None })
            .await
            .unwrap(),
        Reply::Sessions { .. }
    ));
}
