//! What a running client printed, as it comes: a stream read into a watch channel that a test
//! waits on ("until stderr says the link is back"), and all of it at the end.

use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Reads `stream` to its end, adding what comes to `shown`; returns all of it.
pub fn read_into(
    mut stream: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    shown: watch::Sender<String>,
) -> JoinHandle<String> {
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        let mut all = Vec::new();
        while let Ok(n @ 1..) = stream.read(&mut buf).await {
            all.extend_from_slice(&buf[..n]);
            shown.send_modify(|s| s.push_str(&String::from_utf8_lossy(&buf[..n])));
        }
        String::from_utf8_lossy(&all).into_owned()
    })
}

/// Waits until `shown` holds `what`, failing the test after [`crate::WAIT`].
pub async fn wait_shown(shown: &mut watch::Receiver<String>, what: &str) {
    let seen = tokio::time::timeout(crate::WAIT, shown.wait_for(|s| s.contains(what)))
        .await
        .is_ok_and(|seen| seen.is_ok());
    assert!(seen, "`{what}` not shown: {}", shown.borrow().clone());
}
