//! Durable sessions (SPEC §8): per session a `meta.json` and an append-only `log.jsonl` under
//! `<data>/sessions/<id>/`. Every record is one JSON line, written whole with one write before
//! the event it records reaches any client, so a daemon killed at any point leaves at worst a
//! torn last line, which loading drops.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use protocol::{Event, Mode, SessionId, SessionInfo, SessionState};
use serde::{Deserialize, Serialize};

use crate::history::Message;
use crate::permission::AlwaysRule;

/// The version of the record format, written in the first line of every log.
pub const FORMAT_VERSION: u32 = 1;
const META: &str = "meta.json";
const LOG: &str = "log.jsonl";
const ENV: &str = "env.json";

/// One line of a session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// The first line: what format the file is in.
    Header {
        /// The record format version.
        version: u32,
        /// The session.
        session: String,
    },
    /// An event, as clients received it.
    Event {
        /// Its sequence number.
        seq: u64,
        /// When it happened.
        time_ms: u64,
        /// The event.
        event: Event,
    },
    /// A message appended to the history the model sees.
    Message {
        /// The message.
        message: Message,
    },
    /// The older history was replaced by a summary: the history becomes the summary followed
    /// by the last `keep_last` messages.
    Compaction {
        /// The summary.
        summary: String,
        /// Messages kept verbatim.
        keep_last: usize,
    },
    /// An "always allow" rule the user gave.
    Rule {
        /// The rule.
        rule: AlwaysRule,
    },
}

/// A session's settings, kept beside its log so the daemon can list sessions without reading
/// every log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// The record format version.
    pub version: u32,
    /// The session id.
    pub id: String,
    /// The session directory.
    pub cwd: String,
    /// The title.
    pub title: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// The provider profile.
    pub provider: Option<String>,
    /// The permission mode.
    pub mode: String,
    /// The turn limit the session was created with.
    pub max_turns: Option<u32>,
    /// Creation time, milliseconds since the epoch.
    pub created_ms: u64,
    /// Last activity, milliseconds since the epoch.
    pub last_activity_ms: u64,
    /// Model replies so far.
    pub turns: u64,
}

impl Meta {
    /// The listing of a session that is not loaded.
    pub fn info(&self) -> SessionInfo {
        SessionInfo {
            id: SessionId(self.id.clone()),
            cwd: self.cwd.clone(),
            title: self.title.clone(),
            model: self.model.clone(),
            provider: self.provider.clone(),
            mode: self.mode.parse().unwrap_or(Mode::Default),
            state: SessionState::Idle,
            turns: self.turns,
            steer_queued: 0,
            follow_up_queued: 0,
            created_ms: self.created_ms,
            last_activity_ms: self.last_activity_ms,
            last_seq: 0,
        }
    }

    /// The meta of `info`, created with `max_turns`.
    pub fn of(info: &SessionInfo, max_turns: Option<u32>) -> Meta {
        Meta {
            version: FORMAT_VERSION,
            id: info.id.0.clone(),
            cwd: info.cwd.clone(),
            title: info.title.clone(),
            model: info.model.clone(),
            provider: info.provider.clone(),
            mode: info.mode.as_str().to_string(),
            max_turns,
            created_ms: info.created_ms,
            last_activity_ms: info.last_activity_ms,
            turns: info.turns,
        }
    }
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct StoreError {
    /// The file or directory.
    pub path: PathBuf,
    /// What failed.
    pub source: std::io::Error,
}

fn at(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError {
        path: path.to_path_buf(),
        source,
    }
}

/// The open log of one session.
pub struct SessionStore {
    dir: PathBuf,
    log: File,
}

/// What loading a log found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The records in order.
    pub records: Vec<Record>,
    /// Whether a torn last line was dropped.
    pub dropped_torn_line: bool,
    /// Lines that could not be read (other than a torn last line), skipped.
    pub skipped: usize,
}

impl SessionStore {
    /// The directory of session `id`.
    pub fn dir_of(sessions_dir: &Path, id: &SessionId) -> PathBuf {
        sessions_dir.join(id.as_str())
    }

    /// Creates the files of a new session; `env` is the environment its commands run with,
    /// already without secrets.
    pub fn create(
        sessions_dir: &Path,
        meta: &Meta,
        env: &[(String, String)],
    ) -> Result<(), StoreError> {
        let dir = sessions_dir.join(&meta.id);
        std::fs::create_dir_all(&dir).map_err(at(&dir))?;
        write_meta(&dir, meta)?;
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
        std::fs::write(&log, line).map_err(at(&log))
    }

    /// Opens a session's log and reads it. A torn last line (a record cut short by a crash) is
    /// dropped and cut from the file, so new records start on a clean line.
    pub fn open(dir: &Path) -> Result<(SessionStore, Loaded), StoreError> {
        let path = dir.join(LOG);
        let mut file = File::options()
            .read(true)
            .append(true)
            .open(&path)
            .map_err(at(&path))?;
        let mut loaded = Loaded::default();
        let mut good_len = 0u64;
        {
            let mut reader = BufReader::new(&mut file);
            let mut line = Vec::new();
            loop {
                line.clear();
                let n = reader.read_until(b'\n', &mut line).map_err(at(&path))?;
                if n == 0 {
                    break;
                }
                let complete = line.ends_with(b"\n");
                match serde_json::from_slice::<Record>(&line) {
                    Ok(record) if complete => {
                        loaded.records.push(record);
                        good_len += n as u64;
                    }
                    _ if !complete => {
                        loaded.dropped_torn_line = true;
                        break;
                    }
                    Err(err) => {
                        tracing::warn!(log = %path.display(), offset = good_len, "skipping an unreadable record: {err}");
                        loaded.skipped += 1;
                        good_len += n as u64;
                    }
                    Ok(_) => unreachable!("complete is checked above"),
                }
            }
        }
        if loaded.dropped_torn_line {
            tracing::warn!(log = %path.display(), "dropping a torn last record");
            file.set_len(good_len).map_err(at(&path))?;
            file.seek(SeekFrom::End(0)).map_err(at(&path))?;
        }
        Ok((
            SessionStore {
                dir: dir.to_path_buf(),
                log: file,
            },
            loaded,
        ))
    }

    /// Appends one record as one line with a single write.
    pub fn append(&mut self, record: &Record) -> Result<(), StoreError> {
        let path = self.dir.join(LOG);
        let mut line = serde_json::to_vec(record).map_err(|e| at(&path)(e.into()))?;
        line.push(b'\n');
        self.log.write_all(&line).map_err(at(&path))
    }

    /// The environment the session's commands run with (empty when it has none of its own).
    pub fn env(&self) -> Vec<(String, String)> {
        crate::regular_file::read_at_most(&self.dir.join(ENV), 4 << 20)
            .ok()
            .and_then(|(bytes, _)| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Replaces `meta.json` atomically.
    pub fn write_meta(&self, meta: &Meta) -> Result<(), StoreError> {
        write_meta(&self.dir, meta)
    }
}

fn write_meta(dir: &Path, meta: &Meta) -> Result<(), StoreError> {
    let path = dir.join(META);
    let tmp = dir.join("meta.json.tmp");
    let text = serde_json::to_vec_pretty(meta).map_err(|e| at(&path)(e.into()))?;
    std::fs::write(&tmp, text).map_err(at(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(at(&path))
}

/// Every stored session's meta, read without opening any log. Unreadable entries are logged
/// and skipped.
pub fn list(sessions_dir: &Path) -> Vec<Meta> {
    let Ok(entries) = std::fs::read_dir(sessions_dir) else {
        return Vec::new();
    };
    let mut metas = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path().join(META);
        match std::fs::read(&path).map(|bytes| serde_json::from_slice::<Meta>(&bytes)) {
            Ok(Ok(meta)) if SessionId::is_well_formed(&meta.id) => metas.push(meta),
            Ok(Ok(_)) => tracing::warn!(meta = %path.display(), "skipping a session with a bad id"),
            Ok(Err(err)) => {
                tracing::warn!(meta = %path.display(), "skipping an unreadable session: {err}")
            }
            Err(err) => tracing::warn!(meta = %path.display(), "skipping a session: {err}"),
        }
    }
    metas
}

/// Deletes a session's files.
pub fn delete(sessions_dir: &Path, id: &SessionId) -> Result<(), StoreError> {
    let dir = SessionStore::dir_of(sessions_dir, id);
    match std::fs::remove_dir_all(&dir) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(at(&dir)(err)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: &str) -> Meta {
        Meta {
            version: FORMAT_VERSION,
            id: id.into(),
            cwd: "/w".into(),
            title: None,
            model: None,
            provider: None,
            mode: "default".into(),
            max_turns: None,
            created_ms: 1,
            last_activity_ms: 1,
            turns: 0,
        }
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
        SessionStore::create(dir.path(), &meta("abc"), &[]).unwrap();
        let session = dir.path().join("abc");
        let (mut store, loaded) = SessionStore::open(&session).unwrap();
        assert_eq!(loaded.records.len(), 1);
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
        let (mut store, loaded) = SessionStore::open(&session).unwrap();
        assert!(loaded.dropped_torn_line);
        assert_eq!(loaded.records.len(), 3);
        store.append(&event(3)).unwrap();
        drop(store);
        let (_, loaded) = SessionStore::open(&session).unwrap();
        assert!(!loaded.dropped_torn_line);
        assert_eq!(loaded.records.last(), Some(&event(3)));
    }

    #[test]
    fn sessions_are_listed_from_their_meta() {
        let dir = tempfile::tempdir().unwrap();
        SessionStore::create(dir.path(), &meta("one"), &[]).unwrap();
        SessionStore::create(dir.path(), &meta("two"), &[]).unwrap();
        std::fs::create_dir_all(dir.path().join("junk")).unwrap();
        let mut ids: Vec<String> = list(dir.path()).into_iter().map(|m| m.id).collect();
        ids.sort();
        assert_eq!(ids, ["one", "two"]);
        delete(dir.path(), &SessionId("one".into())).unwrap();
        assert_eq!(list(dir.path()).len(), 1);
    }
}
