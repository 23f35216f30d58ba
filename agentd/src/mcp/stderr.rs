//! The last lines a server wrote to its stderr: kept (bounded, whatever the server writes) so
//! that a failure can say what the server said before it went.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::io::AsyncReadExt;

/// Lines kept.
const LINES: usize = 12;
/// Characters kept of one line.
const LINE_CHARS: usize = 300;

/// The tail of a server's stderr.
#[derive(Debug, Default)]
pub(crate) struct Tail(Mutex<VecDeque<String>>);

impl Tail {
    fn push(&self, line: &[u8]) {
        let text: String = String::from_utf8_lossy(line)
            .trim_end()
            .chars()
            .take(LINE_CHARS)
            .collect();
        if text.is_empty() {
            return;
        }
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == LINES {
            lines.pop_front();
        }
        lines.push_back(text);
    }

    /// "; stderr: …" with the last lines, or nothing when the server wrote none.
    pub(crate) fn describe(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.is_empty() {
            return String::new();
        }
        let joined: Vec<&str> = lines.iter().map(String::as_str).collect();
        format!("; its stderr ends with: {}", joined.join(" | "))
    }

    /// Reads `stderr` to its end into the tail, logging each line under `server`.
    pub(crate) async fn collect(
        &self,
        server: &str,
        mut stderr: impl tokio::io::AsyncRead + Unpin,
    ) {
        let mut buf = [0u8; 4096];
        let mut line: Vec<u8> = Vec::new();
        loop {
            let n = match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            for &byte in buf.get(..n).unwrap_or_default() {
                if byte == b'\n' {
                    tracing::debug!(server, "mcp stderr: {}", String::from_utf8_lossy(&line));
                    self.push(&line);
                    line.clear();
                } else if line.len() < LINE_CHARS * 4 {
                    line.push(byte);
                }
            }
        }
        self.push(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_last_short_lines_are_kept() {
        let tail = Tail::default();
        let mut text = String::new();
        for i in 0..100 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str(&"y".repeat(100_000));
        tail.collect("t", text.as_bytes()).await;
        let described = tail.describe();
        assert!(described.contains("line 99"), "{described}");
        assert!(!described.contains("line 80 "), "{described}");
        assert!(described.len() < LINES * (LINE_CHARS + 3) + 50);
    }
}
