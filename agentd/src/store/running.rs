//! Which sessions have a run going, across daemons: one append-only journal
//! (`<data>/running.log`), a line when a run starts (`+ <session> <run>`) and one when it
//! ends (`- <session> <run>`). Appending to an open file costs no new file per run (a file
//! per run, or a settings file replaced at each start, is most of what a run would cost the
//! daemon). A daemon that comes up reads it to find the runs its predecessor did not finish,
//! and writes it again with only those; it is written again the same way when ended runs make
//! up most of it. The file is read as untrusted bytes: only a regular file, at most
//! [`MAX_FILE`] bytes, a line that does not parse skipped.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The journal of runs going.
pub(crate) struct RunningJournal {
    file: Mutex<Option<File>>,
    /// The runs begun and not ended, as the file says.
    open: Mutex<BTreeSet<(String, u64)>>,
    /// The runs the last daemon left going, until their session is loaded: only these resume.
    interrupted: Mutex<BTreeSet<(String, u64)>>,
    /// Lines appended since the file was last written whole.
    appended: std::sync::atomic::AtomicUsize,
    path: PathBuf,
}

/// The longest line read back (a session id and a run number are far shorter).
const MAX_LINE: usize = 256;

/// The most of the file read back: far more than a daemon's lifetime of runs between two
/// compactions; what lies beyond is not read.
const MAX_FILE: usize = 16 << 20;

/// Appended lines past which the file is written again with only the runs going.
const COMPACT_AFTER: usize = 10_000;

impl RunningJournal {
    /// Opens the journal in `data_dir`; returns it with the runs that were going when the last
    /// daemon stopped, as (session, run). The file is rewritten with only those.
    pub(crate) fn open(data_dir: &Path) -> (RunningJournal, Vec<(String, u64)>) {
        // A fresh home has no data directory yet: without it the journal could not be written
        // at all, and no run of this daemon would be resumed by the next.
        if let Err(err) = std::fs::create_dir_all(data_dir) {
            tracing::error!("cannot create {}: {err}", data_dir.display());
        }
        let path = data_dir.join("running.log");
        let open = read_open(&path);
        let file = write_whole(&path, &open);
        let journal = RunningJournal {
            file: Mutex::new(file),
            open: Mutex::new(open.clone()),
            interrupted: Mutex::new(open.clone()),
            appended: Default::default(),
            path,
        };
        (journal, open.into_iter().collect())
    }

    /// Whether run `run` of `session` was going when the last daemon stopped (asked once, when
    /// the session's log is read): a run its log leaves open that the journal does not name
    /// (ended before its end reached the log, or from long ago) is closed, not resumed.
    pub(crate) fn was_interrupted(&self, session: &str, run: u64) -> bool {
        lock(&self.interrupted).remove(&(session.to_string(), run))
    }

    /// Run `run` of `session` began.
    pub(crate) fn started(&self, session: &str, run: u64) {
        self.lock_open().insert((session.to_string(), run));
        self.append(&format!("+ {session} {run}\n"));
    }

    /// Run `run` of `session` ended (or was closed).
    pub(crate) fn ended(&self, session: &str, run: u64) {
        if self.lock_open().remove(&(session.to_string(), run)) {
            self.append(&format!("- {session} {run}\n"));
        }
        self.compact_if_long();
    }

    /// No run of `session` is going (its log says so).
    pub(crate) fn forget(&self, session: &str) {
        let gone: Vec<u64> = {
            let mut open = self.lock_open();
            let runs: Vec<u64> = open
                .iter()
                .filter(|(s, _)| s == session)
                .map(|(_, run)| *run)
                .collect();
            for run in &runs {
                open.remove(&(session.to_string(), *run));
            }
            runs
        };
        for run in gone {
            self.append(&format!("- {session} {run}\n"));
        }
        lock(&self.interrupted).retain(|(s, _)| s != session);
        self.compact_if_long();
    }

    fn lock_open(&self) -> std::sync::MutexGuard<'_, BTreeSet<(String, u64)>> {
        lock(&self.open)
    }

    fn append(&self, line: &str) {
        let mut file = lock(&self.file);
        // A journal that could not be opened is tried again.
        if file.is_none() {
            *file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .ok();
        }
        if let Some(file) = file.as_mut()
            && let Err(err) = file.write_all(line.as_bytes())
        {
            tracing::error!("cannot write {}: {err}", self.path.display());
        }
        self.appended
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Writes the file again with only the runs going once ended ones make up most of it.
    fn compact_if_long(&self) {
        use std::sync::atomic::Ordering;
        let appended = self.appended.load(Ordering::Relaxed);
        let open = self.lock_open().clone();
        if appended < COMPACT_AFTER || appended < open.len() * 4 {
            return;
        }
        let mut file = lock(&self.file);
        *file = write_whole(&self.path, &open);
        self.appended.store(0, Ordering::Relaxed);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes the journal at `path` whole, with `open` only, and opens it for appending.
fn write_whole(path: &Path, open: &BTreeSet<(String, u64)>) -> Option<File> {
    let mut text = String::new();
    for (session, run) in open {
        text.push_str(&format!("+ {session} {run}\n"));
    }
    if let Err(err) = rewrite(path, &text) {
        tracing::error!("cannot rewrite {}: {err}", path.display());
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|err| tracing::error!("cannot open {}: {err}", path.display()))
        .ok()
}

/// Replaces the file at `path` with `text`: a new file (never one found in its place, nor what a
/// link there points at) renamed over it.
fn rewrite(path: &Path, text: &str) -> std::io::Result<()> {
    let temp = path.with_extension("log.new");
    match std::fs::remove_file(&temp) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(err),
        _ => {}
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    file.write_all(text.as_bytes())?;
    drop(file);
    std::fs::rename(&temp, path)
}

/// The (session, run) pairs begun and not ended in the journal at `path`; a line that does not
/// parse (a torn last line, bytes that are not text) is skipped.
fn read_open(path: &Path) -> BTreeSet<(String, u64)> {
    let mut open = BTreeSet::new();
    // Not a regular file (a FIFO would wait for ever): nothing was going.
    let Some(text) = crate::regular_file::read_text(path, MAX_FILE) else {
        return open;
    };
    for line in text.lines().filter(|l| l.len() <= MAX_LINE) {
        let mut parts = line.split(' ');
        let (Some(sign), Some(session), Some(run), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Ok(run) = run.parse::<u64>() else {
            continue;
        };
        if !protocol::SessionId::is_well_formed(session) {
            continue;
        }
        match sign {
            "+" => {
                open.insert((session.to_string(), run));
            }
            "-" => {
                open.remove(&(session.to_string(), run));
            }
            _ => {}
        }
    }
    open
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_begun_and_not_ended_are_found_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, open) = RunningJournal::open(dir.path());
        assert!(open.is_empty());
        journal.started("aa11", 1);
        journal.started("bb22", 3);
        journal.ended("aa11", 1);
        journal.started("aa11", 2);
        drop(journal);
        // A torn last line and a stranger's line are skipped.
        let path = dir.path().join("running.log");
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("+ ../x 1\n- bb2");
        std::fs::write(&path, text).unwrap();
        let (_, open) = RunningJournal::open(dir.path());
        assert_eq!(open, [("aa11".to_string(), 2), ("bb22".to_string(), 3)]);
        // Rewritten with only those.
        let (_, again) = RunningJournal::open(dir.path());
        assert_eq!(again, open);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "+ aa11 2\n+ bb22 3\n"
        );
    }

    #[test]
    fn a_hostile_journal_neither_blocks_nor_is_followed_nor_drops_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("running.log");
        // A byte that is not text drops its own line only.
        std::fs::write(&path, b"+ aa11 1\n+ \xff\xfe 2\n+ bb22 3\n").unwrap();
        let (journal, open) = RunningJournal::open(dir.path());
        assert_eq!(open, [("aa11".to_string(), 1), ("bb22".to_string(), 3)]);
        assert!(journal.was_interrupted("aa11", 1));
        assert!(!journal.was_interrupted("aa11", 1), "asked once");
        assert!(!journal.was_interrupted("cc33", 1));
        drop(journal);
        // A link where the new file is written is replaced, not followed.
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("running.log.new")).unwrap();
        let _ = RunningJournal::open(dir.path());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        // A FIFO in its place is not waited on.
        std::fs::remove_file(&path).unwrap();
        let fifo = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let (_, open) = RunningJournal::open(dir.path());
        assert!(open.is_empty());
    }

    #[test]
    fn a_journal_in_a_fresh_home_is_written_from_the_first_run() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("not-yet/data");
        let (journal, _) = RunningJournal::open(&data);
        journal.started("aa11", 1);
        drop(journal);
        let (_, open) = RunningJournal::open(&data);
        assert_eq!(open, [("aa11".to_string(), 1)]);
    }

    #[test]
    fn ended_runs_are_compacted_away_while_the_daemon_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _) = RunningJournal::open(dir.path());
        journal.started("keep", 1);
        for run in 0..COMPACT_AFTER as u64 {
            journal.started("aa11", run);
            journal.ended("aa11", run);
        }
        let len = std::fs::metadata(dir.path().join("running.log"))
            .unwrap()
            .len();
        assert!(len < 1000, "{len} bytes");
        drop(journal);
        let (_, open) = RunningJournal::open(dir.path());
        assert_eq!(open, [("keep".to_string(), 1)]);
    }
}
