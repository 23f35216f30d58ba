//! Clients that stall or idle cannot keep others out or pin the daemon's memory: the bytes held
//! for unfinished frames are bounded across all connections, and at the connection limit
//! connections idle since `Hello` make room for a new client.

use protocol::{ErrorCode, Reply, Request};
use tests::wire::{expect_error_and_close, hello, raw};
use tests::{Daemon, peak_rss};
use tokio::io::AsyncWriteExt;

#[tokio::test]
async fn two_hundred_stalled_partial_frames_hold_bounded_memory() {
    // Stalled frames stay unfinished for the whole test.
    let daemon = Daemon::start_in(tests::Home::with_config("frame_timeout_ms = 600000\n"));
    const CLIENTS: usize = 200;
    const SENT: usize = 2 * 1024 * 1024;
    let before = peak_rss(daemon.pid());
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..CLIENTS {
        let mut stream = raw(&daemon).await;
        hello(&mut stream).await;
        tasks.spawn(async move {
            // A 16 MiB frame, of which 2 MiB arrive; then nothing more.
            let mut bytes = (16u32 * 1024 * 1024).to_be_bytes().to_vec();
            bytes.resize(4 + SENT, 7);
            let _ = stream.write_all(&bytes).await;
            stream
        });
    }
    let mut streams = Vec::new();
    while let Some(stream) = tasks.join_next().await {
        streams.push(stream.unwrap());
    }
    // Every client's bytes have been taken in (or its connection dropped) once a request on a
    // new connection is answered after them: the daemon reads all connections alike.
    let client = daemon.client().await;
    let status = client.request(Request::Status).await.unwrap();
    assert!(matches!(status, Reply::Status(_)), "{status:?}");
    let grown = peak_rss(daemon.pid()).saturating_sub(before);
    let sent = (CLIENTS * SENT) as u64;
    assert!(
        grown < 160 * 1024 * 1024,
        "{CLIENTS} stalled frames of {SENT} bytes ({sent} in all) grew the daemon by {grown} bytes"
    );
    drop(streams);
}

#[tokio::test]
async fn three_hundred_idle_clients_cannot_keep_a_new_one_out() {
    let daemon = Daemon::start();
    let mut idle = Vec::new();
    for _ in 0..300 {
        let mut stream = raw(&daemon).await;
        hello(&mut stream).await;
        idle.push(stream);
    }
    // The newest client always gets in, and is served.
    let client = daemon.client().await;
    let reply = client
        .request(Request::ListSessions { after: None })
        .await
        .unwrap();
    assert!(matches!(reply, Reply::Sessions { .. }), "{reply:?}");
    // The oldest idle one was told why it was closed.
    let info = expect_error_and_close(&mut idle[0]).await;
    assert_eq!(info.code, ErrorCode::Busy, "{info:?}");
    assert!(info.message.contains("connect again"), "{info:?}");
}
