//! Durable sessions (docs/architecture.md#state-on-disk): per session a `meta.json`, an `env.json`
//! and an append-only `log.jsonl` under `<data>/sessions/<id>/`. Every record is one JSON line,
//! written whole with one write before the event it records reaches any client; records that end a
//! unit of work are synced first. A daemon killed at any point leaves at worst a torn last line,
//! which loading drops.

mod fork;
mod fork_images;
mod log;
mod replay;
mod running;

use std::io::Write;
use std::path::{Path, PathBuf};

use protocol::{Event, Mode, SessionId, SessionInfo, SessionState};
use serde::{Deserialize, Serialize};

use crate::conversation::Message;
use crate::permission::AlwaysRule;

/// The version of the record format, written in the first line of every log.
pub(crate) const FORMAT_VERSION: u32 = 1;
const META: &str = "meta.json";
const LOG: &str = "log.jsonl";
const ENV: &str = "env.json";

pub(crate) use fork::fork;
pub use log::{LogRead, SessionStore, read_log};
pub(crate) use replay::{DiskReplay, read_page};
pub(crate) use running::RunningJournal;

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
    /// A run began with these options (the client's environment left out: it may hold keys);
    /// a run the daemon did not live to finish is resumed with them.
    Run {
        /// The run.
        run: protocol::RunId,
        /// Its options.
        options: protocol::RunOptions,
    },
    /// The daemon stopped on purpose (a restart) while run `run` went.
    Stopped {
        /// The run.
        run: protocol::RunId,
    },
    /// An "always allow" rule the user gave.
    Rule {
        /// The rule.
        rule: AlwaysRule,
    },
    /// Text and thinking deltas of a reply begin at `seq` (they are not stored one by one; an
    /// assistant message or a gap accounts for them).
    Deltas {
        /// The first delta's `seq`.
        seq: u64,
    },
    /// `seq`s up to `to` may be handed out to text and thinking deltas, which are not stored:
    /// after a crash, numbering goes on after `to`, so no `seq` a client saw is used twice.
    Reserved {
        /// The last reserved `seq`.
        to: u64,
    },
    /// `seq`s from `from` to `to` were handed out to deltas that no assistant message folds (a
    /// reply that was retried, cancelled or cut short by a stop): the record that accounts for
    /// them.
    Gap {
        /// The first.
        from: u64,
        /// The last.
        to: u64,
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
    /// The session's own git worktree, if it was started with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<crate::worktree::Worktree>,
    /// Whether a run the daemon did not live to finish goes on in the next daemon; the
    /// configuration's `resume_interrupted` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_interrupted: Option<bool>,
    /// The parent and task of a subagent (docs/architecture.md#subagents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<crate::subagents::ChildOf>,
    /// The last run that ended, for the board of a session that is not loaded
    /// (docs/architecture.md#the-board).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<protocol::RunSummary>,
    /// How far the model's plan got, for the board of a session that is not loaded
    /// (docs/architecture.md#the-plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<protocol::PlanCount>,
}

impl Meta {
    /// The listing of a session that is not loaded.
    pub(crate) fn info(&self) -> SessionInfo {
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
            branch: self.worktree.as_ref().map(|w| w.branch.clone()),
            parent: self.child.as_ref().map(|c| SessionId(c.parent.clone())),
        }
    }

    /// The summary of a session that is not loaded.
    pub(crate) fn summary(&self) -> protocol::SessionSummary {
        let mut summary = protocol::SessionSummary::idle(self.info(), self.last_run.clone());
        summary.plan = self.plan;
        summary
    }

    /// The meta of a new session `id` in `cwd`, in the default mode, with everything else
    /// empty or zero.
    pub fn new(id: &str, cwd: &str) -> Meta {
        Meta {
            version: FORMAT_VERSION,
            id: id.to_string(),
            cwd: cwd.to_string(),
            title: None,
            model: None,
            provider: None,
            mode: protocol::Mode::Default.as_str().to_string(),
            max_turns: None,
            created_ms: 1,
            last_activity_ms: 1,
            turns: 0,
            worktree: None,
            resume_interrupted: None,
            child: None,
            last_run: None,
            plan: None,
        }
    }

    /// The meta of `info`, created with `max_turns`.
    pub(crate) fn of(info: &SessionInfo, max_turns: Option<u32>) -> Meta {
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
            worktree: None,
            resume_interrupted: None,
            child: None,
            last_run: None,
            plan: None,
        }
    }
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct StoreError {
    /// The file or directory.
    pub(crate) path: PathBuf,
    /// What failed.
    pub(crate) source: std::io::Error,
}

fn at(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError {
        path: path.to_path_buf(),
        source,
    }
}

/// Replaces `meta.json` atomically: a temporary file, renamed over it. With `sync`, the file
/// is synced before the rename and the directory after it, so a power loss leaves either the
/// old settings or the new ones, never an empty file.
fn write_meta(dir: &Path, meta: &Meta, sync: bool) -> Result<(), StoreError> {
    let path = dir.join(META);
    let tmp = dir.join("meta.json.tmp");
    let text = serde_json::to_vec_pretty(meta).map_err(|e| at(&path)(e.into()))?;
    let mut file = std::fs::File::create(&tmp).map_err(at(&tmp))?;
    file.write_all(&text).map_err(at(&tmp))?;
    if sync {
        file.sync_all().map_err(at(&tmp))?;
    }
    drop(file);
    std::fs::rename(&tmp, &path).map_err(at(&path))?;
    if sync {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Replaces `meta.json` in the session directory `dir` atomically and durably.
pub(crate) fn save_meta(dir: &Path, meta: &Meta) -> Result<(), StoreError> {
    write_meta(dir, meta, true)
}

/// Syncs a directory, so that a file created or renamed in it survives a power loss.
fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(at(dir))
}

/// Every stored session's meta, read without opening any log, and the sessions that could not
/// be read (their directory and why), which are also logged.
pub(crate) fn list(sessions_dir: &Path) -> (Vec<Meta>, Vec<String>) {
    let Ok(entries) = std::fs::read_dir(sessions_dir) else {
        return (Vec::new(), Vec::new());
    };
    let mut metas = Vec::new();
    let mut unreadable = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path().join(META);
        let problem = match crate::regular_file::read_at_most(&path, 1 << 20) {
            Ok((bytes, _)) if bytes.iter().all(u8::is_ascii_whitespace) => {
                "meta.json is empty".to_string()
            }
            Ok((bytes, _)) => match serde_json::from_slice::<Meta>(&bytes) {
                Ok(meta) if SessionId::is_well_formed(&meta.id) => {
                    metas.push(meta);
                    continue;
                }
                Ok(_) => "meta.json holds a bad session id".to_string(),
                Err(err) => format!("meta.json cannot be read: {err}"),
            },
            // A directory without meta.json is not a session (a leftover, or being deleted).
            Err(crate::regular_file::OpenError::Io(err))
                if err.kind() == std::io::ErrorKind::NotFound =>
            {
                continue;
            }
            Err(err) => format!("meta.json cannot be read: {err}"),
        };
        tracing::warn!(session = %entry.path().display(), "{problem}");
        unreadable.push(format!("{}: {problem}", entry.path().display()));
    }
    (metas, unreadable)
}

/// Deletes a session's files.
pub(crate) fn delete(sessions_dir: &Path, id: &SessionId) -> Result<(), StoreError> {
    let dir = SessionStore::dir_of(sessions_dir, id);
    match std::fs::remove_dir_all(&dir) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(at(&dir)(err)),
        _ => Ok(()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A meta for tests.
    pub(crate) fn meta(id: &str) -> Meta {
        Meta::new(id, "/w")
    }

    #[test]
    fn sessions_are_listed_from_their_meta() {
        let dir = tempfile::tempdir().unwrap();
        SessionStore::create(dir.path(), &meta("one"), &[], false).unwrap();
        SessionStore::create(dir.path(), &meta("two"), &[], false).unwrap();
        std::fs::create_dir_all(dir.path().join("junk")).unwrap();
        let mut ids: Vec<String> = list(dir.path()).0.into_iter().map(|m| m.id).collect();
        ids.sort();
        assert_eq!(ids, ["one", "two"]);
        delete(dir.path(), &SessionId("one".into())).unwrap();
        assert_eq!(list(dir.path()).0.len(), 1);
        // A meta.json a power loss left empty is reported, not skipped silently.
        std::fs::write(dir.path().join("two").join(META), "").unwrap();
        let (metas, unreadable) = list(dir.path());
        assert!(metas.is_empty());
        assert_eq!(unreadable.len(), 1);
        assert!(
            unreadable[0].ends_with("two: meta.json is empty"),
            "{unreadable:?}"
        );
    }
}
