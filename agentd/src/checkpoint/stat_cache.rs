//! The stat cache of a checkpoint store: per file (path relative to the work tree's root), the
//! stat data it had when it was last hashed and the object it hashed to. A snapshot hashes only
//! files whose stat data differ, and, as git does, files modified in the same second as the
//! cache was written or later ("racily clean": a change in that second would not show in the
//! stat data).
//!
//! On disk it is one small binary file, replaced whole; a file that cannot be read is an empty
//! cache (everything is hashed again), never an error.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use git2::Oid;

use super::walk::Stat;

const MAGIC: &[u8; 8] = b"AGDSTAT1";

/// What was known of a file when it was last hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cached {
    /// Its stat data then.
    pub(crate) stat: Stat,
    /// The blob it hashed to.
    pub(crate) oid: Oid,
}

/// The cache of one store.
#[derive(Debug, Clone, Default)]
pub(crate) struct StatCache {
    /// By path relative to the work tree's root.
    pub(crate) entries: BTreeMap<Vec<u8>, Cached>,
    /// When the cache was written (seconds since the epoch).
    pub(crate) written: i64,
}

impl StatCache {
    /// The object `path` still holds (see [`StatCache::still`]).
    #[cfg(test)]
    fn unchanged(&self, path: &[u8], stat: &Stat) -> Option<Oid> {
        self.still(self.entries.get(path)?, stat)
    }

    /// The object of `cached` if `stat` says the file still holds it: its stat data are the
    /// same, and it was not modified in or after the second the cache was written.
    pub(crate) fn still(&self, cached: &Cached, stat: &Stat) -> Option<Oid> {
        (cached.stat == *stat && stat.mtime.0 < self.written && stat.ctime.0 < self.written)
            .then_some(cached.oid)
    }

    /// Reads the cache at `file`; an empty one when it is missing or unreadable.
    pub(crate) fn load(file: &Path) -> StatCache {
        std::fs::read(file)
            .ok()
            .and_then(|bytes| decode(&bytes))
            .unwrap_or_default()
    }

    /// Writes the cache to `file` (through a temporary file renamed over it), stamped now.
    pub(crate) fn save(&mut self, file: &Path) -> std::io::Result<()> {
        self.written = now_secs();
        let mut bytes = Vec::with_capacity(64 + self.entries.len() * 80);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&self.written.to_le_bytes());
        bytes.extend_from_slice(&(self.entries.len() as u64).to_le_bytes());
        for (path, cached) in &self.entries {
            let s = &cached.stat;
            bytes.extend_from_slice(&(path.len() as u32).to_le_bytes());
            bytes.extend_from_slice(path);
            bytes.extend_from_slice(&s.mtime.0.to_le_bytes());
            bytes.extend_from_slice(&s.mtime.1.to_le_bytes());
            bytes.extend_from_slice(&s.ctime.0.to_le_bytes());
            bytes.extend_from_slice(&s.ctime.1.to_le_bytes());
            bytes.extend_from_slice(&s.size.to_le_bytes());
            bytes.extend_from_slice(&s.ino.to_le_bytes());
            bytes.extend_from_slice(&s.mode.to_le_bytes());
            bytes.extend_from_slice(cached.oid.as_bytes());
        }
        let dir = file.parent().unwrap_or(Path::new("."));
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(&bytes)?;
        tmp.persist(file).map_err(|e| e.error)?;
        Ok(())
    }
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Reads bytes off the front of a slice, or gives up.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

fn decode(bytes: &[u8]) -> Option<StatCache> {
    let mut r = Reader(bytes);
    if r.take(MAGIC.len())? != MAGIC {
        return None;
    }
    let written = r.i64()?;
    let count = r.u64()?;
    let mut entries = BTreeMap::new();
    for _ in 0..count {
        let len = r.u32()? as usize;
        let path = r.take(len)?.to_vec();
        let stat = Stat {
            mtime: (r.i64()?, r.u32()?),
            ctime: (r.i64()?, r.u32()?),
            size: r.u64()?,
            ino: r.u64()?,
            mode: r.u32()?,
        };
        let oid = Oid::from_bytes(r.take(20)?).ok()?;
        entries.insert(path, Cached { stat, oid });
    }
    Some(StatCache { entries, written })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_round_trips_and_a_damaged_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cache");
        let mut cache = StatCache::default();
        let stat = Stat {
            mtime: (5, 6),
            ctime: (7, 8),
            size: 9,
            ino: 10,
            mode: 0o100644,
        };
        let oid = Oid::hash_object(git2::ObjectType::Blob, b"x").unwrap();
        cache.entries.insert(b"a/b".to_vec(), Cached { stat, oid });
        cache.save(&file).unwrap();
        let back = StatCache::load(&file);
        assert_eq!(back.entries, cache.entries);
        assert_eq!(back.unchanged(b"a/b", &stat), Some(oid));
        let mut bytes = std::fs::read(&file).unwrap();
        bytes.truncate(bytes.len() - 3);
        std::fs::write(&file, bytes).unwrap();
        assert!(StatCache::load(&file).entries.is_empty());
    }

    #[test]
    fn a_file_modified_in_the_second_the_cache_was_written_is_hashed_again() {
        let stat = Stat {
            mtime: (100, 0),
            ctime: (100, 0),
            ..Stat::default()
        };
        let oid = Oid::hash_object(git2::ObjectType::Blob, b"x").unwrap();
        let mut cache = StatCache {
            written: 100,
            ..StatCache::default()
        };
        cache.entries.insert(b"f".to_vec(), Cached { stat, oid });
        assert_eq!(cache.unchanged(b"f", &stat), None);
        cache.written = 101;
        assert_eq!(cache.unchanged(b"f", &stat), Some(oid));
    }
}
