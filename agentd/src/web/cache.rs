//! The daemon's page cache (docs/architecture.md#web-access): pages fetched in the last 15
//! minutes, by the address asked for, shared by every session. It holds pages as the model
//! gets them (capped), at most [`MAX_ENTRIES`] of them and [`MAX_BYTES`] in all; the oldest go
//! first. Whether a cached page may be handed to a call is [`Page::servable_to`]'s to say.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::page::Page;

/// How long a page is served from the cache.
pub(crate) const TTL: Duration = Duration::from_secs(15 * 60);
/// The most pages kept.
pub(crate) const MAX_ENTRIES: usize = 128;
/// The most bytes of text kept in all.
pub(crate) const MAX_BYTES: usize = 8 << 20;

/// Pages by the address asked for.
#[derive(Debug, Default)]
pub(crate) struct PageCache {
    inner: Mutex<Entries>,
}

/// The cache's contents.
#[derive(Debug, Default)]
struct Entries {
    /// Pages and when they were stored.
    pages: HashMap<String, (Arc<Page>, Instant)>,
    /// Addresses in the order they were stored (the oldest first), which is also the order
    /// in which they expire.
    order: VecDeque<String>,
    /// Bytes of text held.
    bytes: usize,
}

impl Entries {
    /// Forgets the page of `url`, if any.
    fn remove(&mut self, url: &str) {
        if let Some((page, _)) = self.pages.remove(url) {
            self.bytes = self.bytes.saturating_sub(size(&page));
            self.order.retain(|u| u != url);
        }
    }

    /// Forgets the oldest page; `false` when there is none.
    fn pop_oldest(&mut self) -> bool {
        let Some(url) = self.order.pop_front() else {
            return false;
        };
        if let Some((page, _)) = self.pages.remove(&url) {
            self.bytes = self.bytes.saturating_sub(size(&page));
        }
        true
    }
}

/// The bytes a page counts for.
fn size(page: &Page) -> usize {
    page.text.len() + page.url.len() + page.kind.len()
}

impl PageCache {
    /// The page fetched from `url` less than [`TTL`] before `now`.
    pub(crate) fn get(&self, url: &str, now: Instant) -> Option<Arc<Page>> {
        let mut entries = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        // Expired pages are at the front.
        while let Some(oldest) = entries.order.front() {
            let expired = entries
                .pages
                .get(oldest)
                .is_none_or(|(_, at)| now.saturating_duration_since(*at) >= TTL);
            if !expired || !entries.pop_oldest() {
                break;
            }
        }
        entries.pages.get(url).map(|(page, _)| page.clone())
    }

    /// Keeps `page`, fetched from `url` at `now`, making room by forgetting the oldest.
    pub(crate) fn put(&self, url: String, page: Arc<Page>, now: Instant) {
        let bytes = size(&page);
        if bytes > MAX_BYTES {
            return;
        }
        let mut entries = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        entries.remove(&url);
        while entries.pages.len() >= MAX_ENTRIES || entries.bytes + bytes > MAX_BYTES {
            if !entries.pop_oldest() {
                break;
            }
        }
        entries.bytes += bytes;
        entries.order.push_back(url.clone());
        entries.pages.insert(url, (page, now));
    }

    /// How many pages are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pages
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(text: &str) -> Arc<Page> {
        Arc::new(Page {
            url: "u".to_string(),
            kind: "k".to_string(),
            text: text.to_string(),
            hops: Vec::new(),
        })
    }

    #[test]
    fn a_page_is_served_for_fifteen_minutes() {
        let cache = PageCache::default();
        let start = Instant::now();
        cache.put("http://a/".to_string(), page("A"), start);
        let later = start + TTL - Duration::from_secs(1);
        assert_eq!(cache.get("http://a/", later).unwrap().text, "A");
        assert!(cache.get("http://b/", later).is_none());
        assert!(cache.get("http://a/", start + TTL).is_none());
        assert_eq!(cache.len(), 0, "an expired page is forgotten");
    }

    #[test]
    fn the_cache_holds_at_most_its_entries_and_bytes() {
        let cache = PageCache::default();
        let now = Instant::now();
        for i in 0..MAX_ENTRIES + 10 {
            cache.put(format!("http://h/{i}"), page("x"), now);
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        assert!(
            cache.get("http://h/0", now).is_none(),
            "the oldest went first"
        );
        assert!(
            cache
                .get(&format!("http://h/{}", MAX_ENTRIES + 9), now)
                .is_some()
        );
        let big = "y".repeat(MAX_BYTES / 3);
        for i in 0..4 {
            cache.put(format!("http://big/{i}"), page(&big), now);
        }
        let entries = cache.inner.lock().unwrap();
        assert!(entries.bytes <= MAX_BYTES, "{} bytes", entries.bytes);
        assert!(!entries.pages.contains_key("http://big/0"));
        assert!(entries.pages.contains_key("http://big/3"));
    }

    #[test]
    fn storing_a_page_again_replaces_it() {
        let cache = PageCache::default();
        let now = Instant::now();
        cache.put("http://a/".to_string(), page("old"), now);
        cache.put("http://a/".to_string(), page("new"), now);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get("http://a/", now).unwrap().text, "new");
    }
}
