//! This process's stderr while the board holds the terminal. What ssh and the links to other
//! machines write there (a host that refuses, a link that drops and comes back) would land in
//! the middle of the board's screen and stay there; instead it goes into a pipe, whose last
//! lines are kept (bounded) and written to the real stderr once the terminal is given back.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, MutexGuard};

/// How many of the last lines are kept.
const KEPT_LINES: usize = 20;

/// The longest line kept, in bytes (the rest of it is dropped).
const LINE_BYTES: usize = 400;

/// The capture, once started.
struct Capture {
    /// The real stderr, as it was before the first capture.
    saved: OwnedFd,
    /// The pipe's end that stands in for stderr while captured.
    pipe: OwnedFd,
    /// Whether fd 2 is the pipe now.
    on: bool,
}

/// The capture of this process (there is one stderr).
static CAPTURE: Mutex<Option<Capture>> = Mutex::new(None);

/// The last lines written to stderr while it was captured, not yet passed on.
static LINES: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

/// Sends stderr into the pipe until [`release`]; harmless when already captured. When the pipe
/// cannot be made, stderr stays as it is.
pub fn capture() {
    let mut slot = lock(&CAPTURE);
    if slot.is_none() {
        let Some(capture) = start() else {
            return;
        };
        *slot = Some(capture);
    }
    if let Some(capture) = slot.as_mut().filter(|c| !c.on) {
        let _ = std::io::stderr().flush();
        // SAFETY: dup2 onto fd 2 of two descriptors this process owns.
        capture.on = unsafe { libc::dup2(capture.pipe.as_raw_fd(), 2) } == 2;
    }
}

/// Gives stderr back, and writes there what it got meanwhile (each line once, where it last
/// came).
pub fn release() {
    let mut slot = lock(&CAPTURE);
    let Some(capture) = slot.as_mut().filter(|c| c.on) else {
        return;
    };
    // SAFETY: dup2 onto fd 2 of a descriptor this process owns.
    unsafe { libc::dup2(capture.saved.as_raw_fd(), 2) };
    capture.on = false;
    drop(slot);
    let lines: Vec<String> = lock(&LINES).drain(..).collect();
    let mut err = std::io::stderr().lock();
    for line in lines {
        let _ = writeln!(err, "{line}");
    }
}

/// The real stderr, for a child that has the terminal while the board waits (a chat view):
/// its messages are the user's to read now. `None` when stderr is not captured.
pub fn real() -> Option<std::process::Stdio> {
    let slot = lock(&CAPTURE);
    let capture = slot.as_ref().filter(|c| c.on)?;
    capture
        .saved
        .try_clone()
        .ok()
        .map(std::process::Stdio::from)
}

/// The last line stderr got while captured that names `host` as a word (ssh names the host
/// it could not reach: "Could not resolve hostname build", "connect to host build port 22"),
/// for a host's line on the board.
pub fn last_naming(host: &str) -> Option<String> {
    let is_name = |c: char| c.is_alphanumeric() || "._-".contains(c);
    lock(&LINES)
        .iter()
        .rev()
        // This program's own lines (a link down, a link back) say nothing ssh did not.
        .filter(|line| !line.starts_with("agentctl: "))
        .find(|line| line.split(|c: char| !is_name(c)).any(|word| word == host))
        .cloned()
}

/// Makes the pipe and the thread that reads it; `None` when the system refuses.
fn start() -> Option<Capture> {
    let mut fds: [RawFd; 2] = [-1; 2];
    // SAFETY: pipe2 fills the two descriptors of the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: pipe2 just made these two descriptors, owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: dup of fd 2, which is open for the life of the process.
    let saved = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 3) };
    if saved < 0 {
        return None;
    }
    // SAFETY: fcntl just made this descriptor, owned by nothing else.
    let saved = unsafe { OwnedFd::from_raw_fd(saved) };
    let mut read = std::fs::File::from(read);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut line = Vec::new();
        while let Ok(n @ 1..) = read.read(&mut buf) {
            for &byte in &buf[..n] {
                if byte == b'\n' {
                    keep(&line);
                    line.clear();
                } else if line.len() < LINE_BYTES {
                    line.push(byte);
                }
            }
        }
    });
    Some(Capture {
        saved,
        pipe: write,
        on: false,
    })
}

/// Keeps one line read from the pipe, as the latest: a host retried says the same again and
/// again, and it is kept once.
fn keep(line: &[u8]) {
    let text = agentctl::client::one_line(&String::from_utf8_lossy(line), LINE_BYTES);
    let mut lines = lock(&LINES);
    if text.trim().is_empty() {
        return;
    }
    lines.retain(|kept| *kept != text);
    if lines.len() == KEPT_LINES {
        lines.pop_front();
    }
    lines.push_back(text);
}

/// `mutex` locked, also after a panic elsewhere.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
