//! The daemon's socket spoken to by hand: raw connections, a bare `Hello`, and the error a
//! refused connection gets, for tests of hostile and stalling clients.

use agentctl::client::frames as frame;
use protocol::{ClientFrame, ErrorInfo, Hello, PROTOCOL_VERSION, ServerFrame};
use tokio::net::UnixStream;

use crate::Daemon;

/// A connection to the daemon's socket, nothing sent yet.
pub async fn raw(daemon: &Daemon) -> UnixStream {
    UnixStream::connect(&daemon.paths().socket).await.unwrap()
}

/// Says `Hello` on `stream` and checks the `Welcome`.
pub async fn hello(stream: &mut UnixStream) {
    let hello = ClientFrame::Hello(Hello {
        protocol_version: PROTOCOL_VERSION,
        client: "hostile".into(),
    });
    frame::write_frame(stream, &hello).await.unwrap();
    let welcome = frame::read_frame::<ServerFrame, _>(stream).await.unwrap();
    assert!(
        matches!(welcome, Some(ServerFrame::Welcome(_))),
        "{welcome:?}"
    );
}

/// Reads the connection-level error the daemon sends, then checks that it closed the connection.
pub async fn expect_error_and_close(stream: &mut UnixStream) -> ErrorInfo {
    let frame = tokio::time::timeout(crate::WAIT, frame::read_frame::<ServerFrame, _>(stream))
        .await
        .expect("daemon answers")
        .unwrap();
    let Some(ServerFrame::Error(info)) = frame else {
        panic!("expected an error frame, got {frame:?}");
    };
    let after = tokio::time::timeout(crate::WAIT, frame::read_frame::<ServerFrame, _>(stream))
        .await
        .expect("daemon closes");
    assert!(
        matches!(after, Ok(None) | Err(_)),
        "connection still open: {after:?}"
    );
    info
}
