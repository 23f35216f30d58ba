//! Processes the tests watch: FIFOs a command reports through, process groups that must be
//! gone.

use std::path::Path;
use std::time::Duration;

use crate::WAIT;

/// Creates a named pipe at `path`.
pub fn make_fifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path without NUL");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {}",
        path.display()
    );
}

/// Reads a number written into a FIFO (waiting for its writer, at most [`WAIT`]).
pub async fn read_fifo(path: &Path) -> i32 {
    let fifo = path.to_path_buf();
    let read = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo));
    match tokio::time::timeout(WAIT, read).await {
        Ok(text) => text
            .expect("reader task")
            .expect("FIFO read")
            .trim()
            .parse()
            .expect("a number in the FIFO"),
        Err(_) => {
            // Release the blocked reader so the test ends instead of hanging.
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path);
            panic!("nobody wrote to {}", path.display());
        }
    }
}

/// Whether no live process is left in group `pgid`, allowing the kernel up to a second to
/// finish killing them (a SIGKILL is delivered asynchronously).
pub async fn group_is_gone(pgid: i32) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    loop {
        if !live_members(pgid) {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::task::yield_now().await;
    }
}

/// The process group of process `pid`, while it lives.
pub fn process_group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// Whether any live (not zombie) process is in group `pgid`.
pub fn live_members(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // Fields after the command name: state ppid pgrp ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z"
    })
}

/// Every live process descended from `pid`.
pub fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter_map(|entry| {
                    let child: u32 = entry.file_name().to_str()?.parse().ok()?;
                    Some((child, parent_of(child)?))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for &(child, of) in &parents {
            if of == parent && !found.contains(&child) {
                found.push(child);
                frontier.push(child);
            }
        }
    }
    found
}

/// The children of `pid` running `program` (by their executable's path).
pub fn children_running(pid: u32, program: &Path) -> Vec<u32> {
    descendants(pid)
        .into_iter()
        .filter(|&child| parent_of(child) == Some(pid))
        .filter(|&child| {
            std::fs::read_link(format!("/proc/{child}/exe")).is_ok_and(|exe| exe == program)
        })
        .collect()
}

/// The parent of process `pid`, while it lives.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
