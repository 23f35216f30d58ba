//! Which sessions have a run going, across daemons: one append-only journal
//! (`<data>/running.log`), a line when a run starts (`+ <session> <run>`) and one when it
//! ends (`- <session> <run>`). Appending to an open file costs no new file per run (a file
//! per run, or a settings file replaced at each start, is most of what a run would cost the
//! daemon). A daemon that comes up reads it to find the runs its predecessor did not finish,
//! and writes it again with only those.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The journal of runs going.
pub struct RunningJournal {
    file: Mutex<Option<File>>,
    /// The runs begun and not ended, as the file says.
    open: Mutex<BTreeSet<(String, u64)>>,
    path: PathBuf,
}

/// The longest line read back (a session id and a run number are far shorter).
const MAX_LINE: usize = 256;

impl RunningJournal {
    /// Opens the journal in `data_dir`; returns it with the runs that were going when the last
    /// daemon stopped, as (session, run). The file is rewritten with only those.
    pub fn open(data_dir: &Path) -> (RunningJournal, Vec<(String, u64)>) {
        let path = data_dir.join("running.log");
        let open = read_open(&path);
        let mut text = String::new();
        for (session, run) in &open {
            text.push_str(&format!("+ {session} {run}\n"));
        }
        if let Err(err) = rewrite(&path, &text) {
            tracing::error!("cannot rewrite {}: {err}", path.display());
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|err| tracing::error!("cannot open {}: {err}", path.display()))
            .ok();
        let journal = RunningJournal {
            file: Mutex::new(file),
            open: Mutex::new(open.clone()),
            path,
        };
        (journal, open.into_iter().collect())
    }

    /// Run `run` of `session` began.
    pub fn started(&self, session: &str, run: u64) {
        self.lock_open().insert((session.to_string(), run));
        self.append(&format!("+ {session} {run}\n"));
    }

    /// Run `run` of `session` ended (or was closed).
    pub fn ended(&self, session: &str, run: u64) {
        if self.lock_open().remove(&(session.to_string(), run)) {
            self.append(&format!("- {session} {run}\n"));
        }
    }

    /// No run of `session` is going (its log says so).
    pub fn forget(&self, session: &str) {
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
    }

    fn lock_open(&self) -> std::sync::MutexGuard<'_, BTreeSet<(String, u64)>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn append(&self, line: &str) {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(file) = file.as_mut()
            && let Err(err) = file.write_all(line.as_bytes())
        {
            tracing::error!("cannot write {}: {err}", self.path.display());
        }
    }
}

/// Replaces the file at `path` with `text` (a new file renamed over it).
fn rewrite(path: &Path, text: &str) -> std::io::Result<()> {
    let temp = path.with_extension("log.new");
    std::fs::write(&temp, text)?;
    std::fs::rename(&temp, path)
}

/// The (session, run) pairs begun and not ended in the journal at `path`; a line that does not
/// parse (a torn last line) is skipped.
fn read_open(path: &Path) -> BTreeSet<(String, u64)> {
    let mut open = BTreeSet::new();
    let Ok(text) = std::fs::read_to_string(path) else {
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
}
