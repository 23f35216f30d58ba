//! How many of a history's images one model call sends: the newest, within what every provider
//! takes in one request (Anthropic refuses more than 100 images or about 32 MB). Older ones go
//! as their labels, so a session that gathers screenshots keeps working.

use protocol::ImageRef;

/// The most images one model call sends.
pub(crate) const MAX_CALL_IMAGES: usize = 20;

/// The most bytes of images one model call sends, as stored (base64 adds a third).
pub(crate) const MAX_CALL_BYTES: u64 = 20 * 1024 * 1024;

/// The newest of `images` (in history order) that fit one call, in history order.
pub(crate) fn newest_within_budget(images: Vec<&ImageRef>) -> Vec<ImageRef> {
    let mut bytes = 0u64;
    let mut kept: Vec<ImageRef> = Vec::new();
    for image in images.into_iter().rev() {
        if kept.len() == MAX_CALL_IMAGES || bytes + image.size > MAX_CALL_BYTES {
            break;
        }
        bytes += image.size;
        kept.push(image.clone());
    }
    kept.reverse();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(n: usize, size: u64) -> ImageRef {
        ImageRef {
            hash: format!("{n:064x}"),
            media_type: "image/png".into(),
            size,
            width: 10,
            height: 10,
            name: format!("{n}.png"),
        }
    }

    #[test]
    fn the_newest_images_are_kept_in_order_up_to_the_count() {
        let all: Vec<ImageRef> = (0..101).map(|n| image(n, 1000)).collect();
        let kept = newest_within_budget(all.iter().collect());
        assert_eq!(kept.len(), MAX_CALL_IMAGES);
        assert_eq!(kept.first(), all.get(101 - MAX_CALL_IMAGES));
        assert_eq!(kept.last(), all.last());
    }

    #[test]
    fn bytes_stop_the_budget_before_the_count_does() {
        let all: Vec<ImageRef> = (0..10).map(|n| image(n, 4 * 1024 * 1024)).collect();
        let kept = newest_within_budget(all.iter().collect());
        assert_eq!(kept.len(), 5);
        assert_eq!(kept.last(), all.last());
    }
}
