//! A record of every command's process group while it runs, so that a daemon killed without
//! warning (`kill -9`, a crash, the OOM killer) does not leave commands running for ever: the
//! next daemon kills what the records name before it serves anyone.
//!
//! A record is a small file `<data>/commands/<pgid>` holding the boot, the group leader's start
//! time and the command. Only processes of that group started no earlier than its leader, in
//! the same boot, are killed, so a recycled process id is never mistaken for ours.
//!
//! A process id is known only once the process runs, and a daemon may die in between: so a
//! record is first written under a fresh marker (`<data>/commands/pending-<marker>`), which the
//! process gets in its environment (`AGENTD_PROCESS`), and replaced once the group is known.
//! The next daemon kills the processes that carry the marker of a record left pending.

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
    /// The group, once known; a pending record has only its marker.
    pgid: Option<i32>,
    start: u64,
    command: String,
    #[serde(default)]
    marker: Option<String>,
}

/// The variable that carries a process's marker.
pub(crate) const MARKER_VAR: &str = "AGENTD_PROCESS";

/// A record written before its process starts; [`Pending::started`] completes it.
#[derive(Debug)]
pub(crate) struct Pending {
    dir: Option<PathBuf>,
    path: Option<PathBuf>,
    marker: String,
    command: String,
}

impl Pending {
    /// The variable to start the process with, so that it can be found before its group is
    /// recorded.
    pub(crate) fn env(&self) -> (&'static str, &str) {
        (MARKER_VAR, &self.marker)
    }

    /// The marker the process carries.
    pub(crate) fn marker(&self) -> &str {
        &self.marker
    }

    /// The process started as the leader of group `pgid`: the record says so, and is removed
    /// when the returned guard is dropped.
    pub(crate) fn started(mut self, pgid: i32) -> Recorded {
        let pending = self.path.take();
        let recorded = match &self.dir {
            Some(dir) => write_entry(dir, pgid, &self.command, &self.marker),
            None => Recorded(None),
        };
        if let Some(path) = pending {
            let _ = std::fs::remove_file(path);
        }
        recorded
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // The process never started.
        if let Some(path) = self.path.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Writes the record of group `pgid` into `dir`.
fn write_entry(dir: &Path, pgid: i32, command: &str, marker: &str) -> Recorded {
    let entry = Entry {
        boot: boot_id(),
        pgid: Some(pgid),
        start: start_time(pgid).unwrap_or(0),
        command: command.chars().take(200).collect(),
        marker: Some(marker.to_string()),
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

/// Removes its record when the command is over.
#[derive(Debug)]
pub(crate) struct Recorded(Option<PathBuf>);

impl Drop for Recorded {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl ProcessRecords {
    /// Records under `dir`.
    pub(crate) fn in_dir(dir: PathBuf) -> ProcessRecords {
        ProcessRecords { dir: Some(dir) }
    }

    /// Records, before it starts, that a process will run `command`: it is to be started with
    /// [`Pending::env`], then [`Pending::started`] told its group.
    pub(crate) fn prepare(&self, command: &str) -> Pending {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let marker = format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let command: String = command.chars().take(200).collect();
        let path = self.dir.as_ref().and_then(|dir| {
            let entry = Entry {
                boot: boot_id(),
                pgid: None,
                start: 0,
                command: command.clone(),
                marker: Some(marker.clone()),
            };
            let path = dir.join(format!("pending-{marker}"));
            std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(&path, serde_json::to_vec(&entry).unwrap_or_default()))
                .inspect_err(|err| tracing::warn!(path = %path.display(), "cannot record a command before it starts: {err}"))
                .ok()
                .map(|()| path)
        });
        Pending {
            dir: self.dir.clone(),
            path,
            marker,
            command,
        }
    }

    /// Kills the process groups of commands that a previous daemon left running, and clears
    /// their records. Returns how many processes were killed.
    pub(crate) fn reap(&self) -> usize {
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
                let count = match (entry.pgid, &entry.marker) {
                    // Processes that left the group (`setsid`) still carry the marker.
                    (Some(pgid), Some(marker)) => {
                        kill_group(pgid, entry.start) + kill_marked(marker)
                    }
                    (Some(pgid), None) => kill_group(pgid, entry.start),
                    (None, Some(marker)) => kill_marked(marker),
                    (None, None) => 0,
                };
                if count > 0 {
                    tracing::warn!(pgid = ?entry.pgid, command = %entry.command, processes = count, "killed a command left running by a daemon that stopped without warning");
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
    // The kernel's own files (the file tools refuse them as not a project's).
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|id| id.trim().to_string())
        .unwrap_or_default()
}

/// Process `pid`'s start time in clock ticks since boot, and its process group.
fn stat(pid: u32) -> Option<(u64, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
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
pub(crate) fn start_time(pid: i32) -> Option<u64> {
    stat(u32::try_from(pid).ok()?).map(|(start, _)| start)
}

/// The ids of the processes running now, this one left out.
fn other_processes() -> impl Iterator<Item = u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(move |pid| *pid != me)
}

/// Kills every process that carries `marker` in its environment (also ones that left their
/// group), with the rest of the group it leads; returns how many.
pub(crate) fn kill_marked(marker: &str) -> usize {
    let needle = format!("{MARKER_VAR}={marker}");
    let mut killed = 0;
    for pid in other_processes() {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if environ
            .split(|&b| b == 0)
            .any(|var| var == needle.as_bytes())
            && let Ok(pid) = i32::try_from(pid)
        {
            killed += start_time(pid).map_or(0, |start| kill_group(pid, start).max(1));
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    killed
}

/// Kills every process of group `pgid` that started no earlier than `start`; returns how many.
pub(crate) fn kill_group(pgid: i32, start: u64) -> usize {
    let mut killed = 0;
    for pid in other_processes() {
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
        std::mem::forget(records.prepare("sleep 600").started(pgid));
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
    fn a_command_recorded_before_its_group_was_known_is_found_by_its_marker() {
        let dir = tempfile::tempdir().unwrap();
        let records = ProcessRecords::in_dir(dir.path().join("commands"));
        let pending = records.prepare("sleep 600");
        let (var, value) = pending.env();
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .env(var, value)
            .process_group(0)
            .spawn()
            .unwrap();
        // The daemon died before it learnt the group.
        std::mem::forget(pending);
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
        drop(records.prepare("true").started(12345));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
