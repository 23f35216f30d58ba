//! A record of every command's process group while it runs, so that a daemon killed without
//! warning (`kill -9`, a crash, the OOM killer) does not leave commands running for ever: the
//! next daemon kills what the records name before it serves anyone.
//!
//! A record is a small file `<data>/commands/<pgid>` holding the boot, the group leader's start
//! time and the command. Only processes of that group started no earlier than its leader, in
//! the same boot, are killed, so a recycled process id is never mistaken for ours.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where the records of running commands are kept; `None` keeps no records (tests).
#[derive(Debug, Clone, Default)]
pub struct ProcessRecords {
    dir: Option<PathBuf>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    boot: String,
    pgid: i32,
    start: u64,
    command: String,
}

/// Removes its record when the command is over.
#[derive(Debug)]
pub struct Recorded(Option<PathBuf>);

impl Drop for Recorded {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl ProcessRecords {
    /// Records under `dir`.
    pub fn in_dir(dir: PathBuf) -> ProcessRecords {
        ProcessRecords { dir: Some(dir) }
    }

    /// Records that process group `pgid` (its leader just started) runs `command`.
    pub fn record(&self, pgid: i32, command: &str) -> Recorded {
        let Some(dir) = &self.dir else {
            return Recorded(None);
        };
        let entry = Entry {
            boot: boot_id(),
            pgid,
            start: start_time(pgid).unwrap_or(0),
            command: command.chars().take(200).collect(),
        };
        let path = dir.join(pgid.to_string());
        let written = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&path, serde_json::to_vec(&entry).unwrap_or_default()));
        match written {
            Ok(()) => Recorded(Some(path)),
            Err(err) => {
                tracing::warn!(path = %path.display(), "cannot record a command's process group: {err}");
                Recorded(None)
            }
        }
    }

    /// Kills the process groups of commands that a previous daemon left running, and clears
    /// their records. Returns how many processes were killed.
    pub fn reap(&self) -> usize {
        let Some(dir) = &self.dir else { return 0 };
        let Ok(records) = std::fs::read_dir(dir) else {
            return 0;
        };
        let boot = boot_id();
        let mut killed = 0;
        for record in records.flatten() {
            let path = record.path();
            let entry = crate::regular_file::read_at_most(&path, 4096)
                .ok()
                .and_then(|(bytes, _)| serde_json::from_slice::<Entry>(&bytes).ok());
            if let Some(entry) = entry
                && entry.boot == boot
            {
                let count = kill_group(entry.pgid, entry.start);
                if count > 0 {
                    tracing::warn!(pgid = entry.pgid, command = %entry.command, processes = count, "killed a command left running by a daemon that stopped without warning");
                }
                killed += count;
            }
            let _ = std::fs::remove_file(&path);
        }
        killed
    }
}

/// This boot's id: start times only compare within one boot.
fn boot_id() -> String {
    crate::regular_file::read_text(Path::new("/proc/sys/kernel/random/boot_id"), 64)
        .map(|id| id.trim().to_string())
        .unwrap_or_default()
}

/// Process `pid`'s start time in clock ticks since boot, and its process group.
fn stat(pid: u32) -> Option<(u64, i32)> {
    let text = crate::regular_file::read_text(Path::new(&format!("/proc/{pid}/stat")), 4096)?;
    // The command name is in parentheses and may hold anything: fields follow the last `)`.
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) pgrp(2) ... starttime(19).
    let pgrp = fields.get(2)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((start, pgrp))
}

/// Process `pid`'s start time in clock ticks since boot: with [`kill_group`], what tells a
/// group of ours from one that reuses its id.
pub fn start_time(pid: i32) -> Option<u64> {
    stat(u32::try_from(pid).ok()?).map(|(start, _)| start)
}

/// Kills every process of group `pgid` that started no earlier than `start`; returns how many.
pub fn kill_group(pgid: i32, start: u64) -> usize {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let me = std::process::id();
    let mut killed = 0;
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        if let Some((started, pgrp)) = stat(pid)
            && pgrp == pgid
            && started >= start
            && let Ok(pid) = i32::try_from(pid)
        {
            // SAFETY: kill has no memory-safety preconditions.
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                killed += 1;
            }
        }
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn a_recorded_group_left_running_is_killed_and_its_record_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let records = ProcessRecords::in_dir(dir.path().join("commands"));
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id() as i32;
        // The daemon that recorded it is gone: its guard is forgotten, not dropped.
        std::mem::forget(records.record(pgid, "sleep 600"));
        assert_eq!(records.reap(), 1);
        assert!(!child.wait().unwrap().success());
        assert_eq!(
            std::fs::read_dir(dir.path().join("commands"))
                .unwrap()
                .count(),
            0
        );
    }

    #[test]
    fn a_finished_command_leaves_no_record() {
        let dir = tempfile::tempdir().unwrap();
        let records = ProcessRecords::in_dir(dir.path().to_path_buf());
        drop(records.record(12345, "true"));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
