//! What a background shell printed, kept in a ring of fixed size: the newest bytes stay, the
//! oldest make room. The ring remembers how far the model has looked, so a look returns what
//! came since the last one and says how many bytes of it were dropped because the ring was full
//! before anyone looked.

use crate::tools::output::Capped;

/// A bounded buffer of a shell's output, with a read position.
#[derive(Debug)]
pub(crate) struct Ring {
    /// The bytes kept; grows up to `capacity`, then wraps.
    data: Vec<u8>,
    /// The most bytes kept.
    capacity: usize,
    /// Where the oldest kept byte is in `data` once it is full.
    start: usize,
    /// Bytes written since the shell started.
    written: u64,
    /// Bytes up to which the model has looked, counted like `written`.
    read: u64,
}

/// What came since the last look.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Unread {
    /// The text, within the limit the look was given (head and tail kept).
    pub(crate) text: String,
    /// Bytes that came since the last look but were pushed out of the ring before it.
    pub(crate) dropped: u64,
}

impl Ring {
    /// An empty ring that keeps at most `capacity` bytes (at least one).
    pub(crate) fn new(capacity: usize) -> Ring {
        Ring {
            data: Vec::new(),
            capacity: capacity.max(1),
            start: 0,
            written: 0,
            read: 0,
        }
    }

    /// Appends `bytes`, dropping the oldest bytes beyond the capacity.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.written = self.written.saturating_add(bytes.len() as u64);
        // Only the end of a piece larger than the ring can stay.
        let mut bytes = bytes
            .get(bytes.len().saturating_sub(self.capacity)..)
            .unwrap_or_default();
        if self.data.len() < self.capacity {
            // One allocation of the whole ring: its pages count only once written.
            if self.data.capacity() == 0 {
                self.data.reserve_exact(self.capacity);
            }
            let take = (self.capacity - self.data.len()).min(bytes.len());
            self.data
                .extend_from_slice(bytes.get(..take).unwrap_or_default());
            bytes = bytes.get(take..).unwrap_or_default();
        }
        while !bytes.is_empty() {
            let take = (self.capacity - self.start).min(bytes.len());
            if let (Some(into), Some(from)) = (
                self.data.get_mut(self.start..self.start + take),
                bytes.get(..take),
            ) {
                into.copy_from_slice(from);
            }
            self.start = (self.start + take) % self.capacity;
            bytes = bytes.get(take..).unwrap_or_default();
        }
    }

    /// Keeps only the newest `keep` bytes (a shell that ended long ago needs its last lines
    /// only), and gives the rest of the memory back.
    pub(crate) fn shrink(&mut self, keep: usize) {
        if self.data.len() <= keep && self.data.capacity() <= keep {
            return;
        }
        let (older, newer) = self.kept();
        let mut kept = Vec::with_capacity(older.len() + newer.len());
        kept.extend_from_slice(older);
        kept.extend_from_slice(newer);
        kept.drain(..kept.len().saturating_sub(keep));
        kept.shrink_to_fit();
        self.data = kept;
        self.capacity = self.capacity.min(keep.max(1));
        self.start = 0;
    }

    /// Bytes written since the shell started.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// Whether something came since the last look.
    pub(crate) fn has_unread(&self) -> bool {
        self.written > self.read
    }

    /// The kept bytes, oldest first, as two slices.
    fn kept(&self) -> (&[u8], &[u8]) {
        let (newer, older) = self.data.split_at(self.start.min(self.data.len()));
        (older, newer)
    }

    /// What came since the last look, capped at `limit` bytes; the look moves to the end.
    pub(crate) fn take_unread(&mut self, limit: usize) -> Unread {
        let oldest = self.written - self.data.len() as u64;
        let dropped = oldest.saturating_sub(self.read);
        // How many of the kept bytes (from the end) the model has not seen.
        let unseen = usize::try_from(self.written - self.read.max(oldest)).unwrap_or(usize::MAX);
        let mut capped = Capped::new(limit);
        let (older, newer) = self.kept();
        let skip = (older.len() + newer.len()).saturating_sub(unseen);
        let older_skip = skip.min(older.len());
        capped.push(older.get(older_skip..).unwrap_or_default());
        capped.push(newer.get(skip - older_skip..).unwrap_or_default());
        self.read = self.written;
        Unread {
            text: capped.finish(),
            dropped,
        }
    }

    /// The last `lines` lines of what is kept, within `max_bytes` (whole characters only).
    pub(crate) fn tail(&self, lines: usize, max_bytes: usize) -> String {
        let (older, newer) = self.kept();
        let total = older.len() + newer.len();
        let from = total.saturating_sub(max_bytes);
        let mut bytes = Vec::with_capacity(total - from);
        let older_from = from.min(older.len());
        bytes.extend_from_slice(older.get(older_from..).unwrap_or_default());
        bytes.extend_from_slice(newer.get(from - older_from..).unwrap_or_default());
        let text = String::from_utf8_lossy(&bytes);
        // A character cut at the start is dropped, never shown half.
        let text = text.trim_start_matches('\u{FFFD}').trim_end_matches('\n');
        let kept: Vec<&str> = text.rsplit('\n').take(lines).collect();
        kept.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_returns_what_came_since_the_last_one() {
        let mut ring = Ring::new(64);
        ring.push(b"one\n");
        ring.push(b"two\n");
        assert!(ring.has_unread());
        let look = ring.take_unread(1000);
        assert_eq!(look.text, "one\ntwo\n");
        assert_eq!(look.dropped, 0);
        assert!(!ring.has_unread());
        assert_eq!(ring.take_unread(1000).text, "");
        ring.push(b"three\n");
        assert_eq!(ring.take_unread(1000).text, "three\n");
        assert_eq!(ring.written(), 14);
    }

    #[test]
    fn bytes_pushed_out_before_a_look_are_counted_as_dropped() {
        let mut ring = Ring::new(10);
        ring.push(b"0123456789");
        ring.push(b"abcde");
        let look = ring.take_unread(1000);
        assert_eq!(look.text, "56789abcde");
        assert_eq!(look.dropped, 5);
        // Pieces larger than the ring, and pieces that wrap around it.
        for piece in [&b"ABCDEFGHIJKLMNOP"[..], b"xyz", b"1234567"] {
            ring.push(piece);
        }
        let look = ring.take_unread(1000);
        assert_eq!(look.text, "xyz1234567");
        assert_eq!(look.dropped, 16);
        assert_eq!(ring.written(), 15 + 26);
    }

    #[test]
    fn a_look_is_capped_and_memory_stays_within_the_ring() {
        let mut ring = Ring::new(1000);
        for _ in 0..10_000 {
            ring.push(&[b'x'; 100]);
        }
        assert!(ring.data.capacity() <= 2000, "{}", ring.data.capacity());
        let look = ring.take_unread(100);
        assert!(look.text.contains("bytes omitted"), "{}", look.text);
        assert!(look.text.len() < 200);
        assert_eq!(look.dropped, 1_000_000 - 1000);
    }

    #[test]
    fn a_shrunk_ring_keeps_its_newest_bytes_and_counts_the_rest_as_dropped() {
        let mut ring = Ring::new(10);
        ring.push(b"0123456789abc");
        ring.shrink(4);
        assert!(ring.data.capacity() <= 4);
        let look = ring.take_unread(100);
        assert_eq!(look.text, "9abc");
        assert_eq!(look.dropped, 9);
        ring.push(b"xyz");
        assert_eq!(ring.take_unread(100).text, "xyz");
        assert_eq!(ring.tail(5, 100), "cxyz");
    }

    #[test]
    fn the_tail_is_the_last_lines_within_a_byte_bound() {
        let mut ring = Ring::new(8);
        ring.push("a\nb\nc\nd\né\n".as_bytes());
        assert_eq!(ring.tail(2, 100), "d\né");
        // The cut falls inside "é": the half character is not shown.
        assert_eq!(ring.tail(10, 2), "");
        assert_eq!(ring.tail(10, 3), "é");
        let empty = Ring::new(8);
        assert_eq!(empty.tail(10, 100), "");
    }
}
