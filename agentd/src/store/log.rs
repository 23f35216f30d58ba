//! One session's open log: appending records (a failed append is cut back, so the next record
//! starts on a clean line), syncing, an index of `seq` → byte offset for replays that start
//! anywhere, and reading it all back when the session loads.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use protocol::SessionId;

use super::{ENV, FORMAT_VERSION, LOG, Meta, Record, StoreError, at, write_meta};

/// One index entry per this many stored events.
const INDEX_EVERY: u64 = 64;

/// The open log of one session.
pub struct SessionStore {
    dir: PathBuf,
    log: Arc<File>,
    /// The length of the log up to its last whole record.
    len: u64,
    /// `(seq, offset)` of every [`INDEX_EVERY`]th stored event, in order.
    index: Vec<(u64, u64)>,
    /// Makes the next append fail after this many bytes (tests of torn appends).
    #[cfg(test)]
    fail_after: Option<usize>,
}

/// What reading a log found, besides its records.
#[derive(Debug, Default)]
pub struct LogRead {
    /// The length up to the last whole record.
    pub(crate) len: u64,
    /// The `seq` index.
    index: Vec<(u64, u64)>,
    /// Whether a torn last line was found (to be dropped).
    pub(crate) dropped_torn_line: bool,
    /// Lines that could not be read (other than a torn last line), skipped.
    pub(crate) skipped: usize,
}

/// Reads the log at `path` record by record, handing each to `visit`: a session of any size
/// loads without holding its log in memory.
pub fn read_log(path: &Path, mut visit: impl FnMut(Record)) -> Result<LogRead, StoreError> {
    let file = File::open(path).map_err(at(path))?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut read = LogRead::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(at(path))?;
        if n == 0 {
            return Ok(read);
        }
        if !line.ends_with(b"\n") {
            read.dropped_torn_line = true;
            return Ok(read);
        }
        match serde_json::from_slice::<Record>(&line) {
            Ok(record) => {
                if let Record::Event { seq, .. } = &record {
                    add_to_index(&mut read.index, *seq, read.len);
                }
                visit(record);
            }
            Err(err) => {
                tracing::warn!(log = %path.display(), offset = read.len, "skipping an unreadable record: {err}");
                read.skipped += 1;
            }
        }
        read.len += n as u64;
    }
}

impl SessionStore {
    /// The directory of session `id`.
    pub(crate) fn dir_of(sessions_dir: &Path, id: &SessionId) -> PathBuf {
        sessions_dir.join(id.as_str())
    }

    /// Creates the files of a new session; `env` is the environment its commands run with,
    /// already without secrets. With `sync`, the files and the directory are synced.
    pub fn create(
        sessions_dir: &Path,
        meta: &Meta,
        env: &[(String, String)],
        sync: bool,
    ) -> Result<(), StoreError> {
        let dir = sessions_dir.join(&meta.id);
        std::fs::create_dir_all(&dir).map_err(at(&dir))?;
        if !env.is_empty() {
            let path = dir.join(ENV);
            let text = serde_json::to_vec(env).map_err(|e| at(&path)(e.into()))?;
            std::fs::write(&path, text).map_err(at(&path))?;
        }
        let log = dir.join(LOG);
        let header = Record::Header {
            version: FORMAT_VERSION,
            session: meta.id.clone(),
        };
        let mut line = serde_json::to_vec(&header).map_err(|e| at(&log)(e.into()))?;
        line.push(b'\n');
        std::fs::write(&log, line).map_err(at(&log))?;
        // The meta last: a session is listed only once all of it is there.
        write_meta(&dir, meta, sync)?;
        if sync {
            super::sync_dir(sessions_dir)?;
        }
        Ok(())
    }

    /// Opens a session's log for appending; [`read_log`] reads it and `SessionStore::adopt`
    /// takes what reading found.
    pub fn open(dir: &Path) -> Result<SessionStore, StoreError> {
        let path = dir.join(LOG);
        let file = File::options()
            .read(true)
            .append(true)
            .open(&path)
            .map_err(at(&path))?;
        let len = file.metadata().map_err(at(&path))?.len();
        Ok(SessionStore {
            dir: dir.to_path_buf(),
            log: Arc::new(file),
            len,
            index: Vec::new(),
            #[cfg(test)]
            fail_after: None,
        })
    }

    /// Takes what reading the log found: its index, and its length without a torn last line,
    /// which is cut from the file so that new records start on a clean line.
    pub(crate) fn adopt(&mut self, read: LogRead) -> Result<(), StoreError> {
        if read.dropped_torn_line {
            let path = self.log_path();
            tracing::warn!(log = %path.display(), "dropping a torn last record");
            self.log.set_len(read.len).map_err(at(&path))?;
            (&*self.log).seek(SeekFrom::End(0)).map_err(at(&path))?;
        }
        self.len = read.len;
        self.index = read.index;
        Ok(())
    }

    /// The session's directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log file's path.
    pub(crate) fn log_path(&self) -> PathBuf {
        self.dir.join(LOG)
    }

    /// Appends one record as one line with a single write. A write that fails part-way is cut
    /// back to the last whole record, so nothing after it is lost.
    pub fn append(&mut self, record: &Record) -> Result<(), StoreError> {
        let path = self.log_path();
        let mut line = serde_json::to_vec(record).map_err(|e| at(&path)(e.into()))?;
        line.push(b'\n');
        let offset = self.len;
        if let Err(err) = self.write_line(&line) {
            if let Err(cut) = self.log.set_len(offset) {
                tracing::error!(log = %path.display(), "cannot cut a failed append back: {cut}");
            }
            return Err(at(&path)(err));
        }
        self.len += line.len() as u64;
        if let Record::Event { seq, .. } = record {
            add_to_index(&mut self.index, *seq, offset);
        }
        Ok(())
    }

    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(after) = self.fail_after.take() {
            (&*self.log).write_all(line.get(..after.min(line.len())).unwrap_or_default())?;
            return Err(std::io::Error::other("injected write failure"));
        }
        (&*self.log).write_all(line)
    }

    /// The log file, to sync it off the actor's thread.
    pub fn file(&self) -> Arc<File> {
        self.log.clone()
    }

    /// A byte offset at or before the record of the first event with `seq > after_seq`.
    pub(crate) fn offset_after(&self, after_seq: u64) -> u64 {
        let at = self.index.partition_point(|(seq, _)| *seq <= after_seq + 1);
        at.checked_sub(1)
            .and_then(|i| self.index.get(i))
            .map_or(0, |(_, offset)| *offset)
    }

    /// The environment the session's commands run with (empty when it has none of its own).
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        crate::regular_file::read_at_most(&self.dir.join(ENV), 4 << 20)
            .ok()
            .and_then(|(bytes, _)| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Replaces `meta.json` atomically (synced with `sync`).
    pub(crate) fn write_meta(&self, meta: &Meta, sync: bool) -> Result<(), StoreError> {
        write_meta(&self.dir, meta, sync)
    }

    /// Makes the next append write `bytes` bytes and then fail.
    #[cfg(test)]
    pub(crate) fn fail_next_append_after(&mut self, bytes: usize) {
        self.fail_after = Some(bytes);
    }
}

fn add_to_index(index: &mut Vec<(u64, u64)>, seq: u64, offset: u64) {
    let due = index
        .last()
        .is_none_or(|(last, _)| seq >= last + INDEX_EVERY);
    if due {
        index.push((seq, offset));
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::meta;
    use super::*;
    use protocol::Event;

    /// Opens and reads a session's log: its store and records.
    fn load(dir: &Path) -> (SessionStore, Vec<Record>, LogRead) {
        let mut store = SessionStore::open(dir).unwrap();
        let mut records = Vec::new();
        let read = read_log(&store.log_path(), |r| records.push(r)).unwrap();
        let summary = LogRead {
            len: read.len,
            index: read.index.clone(),
            dropped_torn_line: read.dropped_torn_line,
            skipped: read.skipped,
        };
        store.adopt(read).unwrap();
        (store, records, summary)
    }

    fn event(seq: u64) -> Record {
        Record::Event {
            seq,
            time_ms: seq,
            event: Event::TurnStarted { turn: seq as u32 },
        }
    }

    #[test]
    fn records_round_trip_and_a_torn_line_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        SessionStore::create(dir.path(), &meta("abc"), &[], false).unwrap();
        let session = dir.path().join("abc");
        let (mut store, records, _) = load(&session);
        assert_eq!(records.len(), 1);
        store.append(&event(1)).unwrap();
        store.append(&event(2)).unwrap();
        drop(store);
        // A crash in the middle of a write.
        let mut file = File::options()
            .append(true)
            .open(session.join(LOG))
            .unwrap();
        file.write_all(br#"{"kind":"event","seq":3,"ti"#).unwrap();
        drop(file);
        let (mut store, records, read) = load(&session);
        assert!(read.dropped_torn_line);
        assert_eq!(records.len(), 3);
        store.append(&event(3)).unwrap();
        drop(store);
        let (_, records, read) = load(&session);
        assert!(!read.dropped_torn_line);
        assert_eq!(records.last(), Some(&event(3)));
    }

    #[test]
    fn a_failed_append_is_cut_back_and_loses_only_its_own_record() {
        let dir = tempfile::tempdir().unwrap();
        SessionStore::create(dir.path(), &meta("abc"), &[], false).unwrap();
        let session = dir.path().join("abc");
        let (mut store, _, _) = load(&session);
        store.append(&event(1)).unwrap();
        store.fail_next_append_after(10);
        assert!(store.append(&event(2)).is_err());
        store.append(&event(3)).unwrap();
        store.append(&event(4)).unwrap();
        drop(store);
        let (_, records, read) = load(&session);
        assert!(!read.dropped_torn_line);
        assert_eq!(read.skipped, 0);
        assert_eq!(&records[1..], &[event(1), event(3), event(4)]);
    }

    #[test]
    fn the_index_points_at_or_before_any_seq() {
        let dir = tempfile::tempdir().unwrap();
        SessionStore::create(dir.path(), &meta("abc"), &[], false).unwrap();
        let session = dir.path().join("abc");
        let (mut store, _, _) = load(&session);
        for seq in 1..=1000 {
            store.append(&event(seq)).unwrap();
        }
        let text = std::fs::read_to_string(session.join(LOG)).unwrap();
        for after in [0, 1, 63, 64, 65, 500, 999, 1000] {
            let offset = store.offset_after(after) as usize;
            let first: Record =
                serde_json::from_str(text.get(offset..).unwrap().lines().next().unwrap()).unwrap();
            let seq = match first {
                Record::Event { seq, .. } => seq,
                _ => 0,
            };
            assert!(seq <= after + 1, "after {after}: starts at {seq}");
            assert!(
                after < 64 || seq + 2 * INDEX_EVERY > after,
                "after {after}: {seq}"
            );
        }
        // Loading builds the same index as appending did.
        let before: Vec<u64> = (0..1000).map(|s| store.offset_after(s)).collect();
        drop(store);
        let (reopened, _, _) = load(&session);
        let after: Vec<u64> = (0..1000).map(|s| reopened.offset_after(s)).collect();
        assert_eq!(before, after);
    }
}
