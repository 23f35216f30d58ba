//! The daemon's decode slots: what decoding holds at once is bounded by pixels, not by count
//! (docs/architecture.md#images). Each decode takes as many slots as the megapixels its header
//! claims (twice that at 16 bits a channel), at most all of them, so the largest image decodes
//! alone and small ones still run side by side.

use tokio::sync::{Semaphore, SemaphorePermit};

use super::error::ImageError;
use super::format::Format;
use super::{gif_blocks, jpeg_markers};

/// Megapixels decoded at once in the whole daemon. One decode of the largest image
/// ([`MAX_PIXELS`](super::fit::MAX_PIXELS), 40 MP) takes all of them and runs alone, while
/// screenshots of a few megapixels decode side by side. Measured (debug build, optimised
/// decoders): one 40-megapixel decode of the worst kinds (a progressive CMYK JPEG, an animated
/// WebP) grows the daemon by ~425 MB (~470 MB in all), an 8-megapixel progressive CMYK JPEG by
/// ~120 MB; three 40-megapixel JPEGs sent at once peak at ~475 MB in all, where two at once had
/// taken ~870 MB. (With 48 slots, 8 megapixels could decode beside the largest: ~610 MB.)
pub(crate) const SLOTS: u32 = 40;

/// The slots, in megapixels.
static DECODES: Semaphore = Semaphore::const_new(SLOTS as usize);

/// Waits for `weight` of the daemon's decode slots (at least 1, at most [`SLOTS`]).
pub(crate) async fn acquire(weight: u32) -> Result<SemaphorePermit<'static>, ImageError> {
    DECODES
        .acquire_many(weight.clamp(1, SLOTS))
        .await
        .map_err(|_| ImageError::Interrupted("the daemon is shutting down".into()))
}

/// How many slots decoding `bytes` takes: the megapixels its header claims, rounded up,
/// doubled for a 16-bit PNG or a GIF; all of them when its size cannot be read so.
pub(crate) fn weight(bytes: &[u8]) -> u32 {
    let Some(format) = Format::sniff(bytes) else {
        return 1;
    };
    let claimed = match format {
        Format::Png => png_size(bytes).map(|(w, h, deep)| {
            let pixels = u64::from(w) * u64::from(h);
            if deep { pixels * 2 } else { pixels }
        }),
        Format::Jpeg => jpeg_markers::walk(bytes)
            .size
            .map(|(w, h)| u64::from(w) * u64::from(h)),
        // Frames are composed over a copy of the screen: twice the buffers of a still image.
        Format::Gif => {
            let (w, h) = gif_blocks::walk(bytes).size;
            Some(u64::from(w) * u64::from(h) * 2)
        }
        Format::WebP => webp_size(bytes).map(|(w, h)| u64::from(w) * u64::from(h)),
    };
    claimed.map_or(SLOTS, |pixels| {
        u32::try_from(pixels.div_ceil(1_000_000))
            .unwrap_or(SLOTS)
            .clamp(1, SLOTS)
    })
}

/// A PNG's width, height and whether it has 16 bits a channel, from its header.
fn png_size(bytes: &[u8]) -> Option<(u32, u32, bool)> {
    let ihdr = bytes.get(16..25)?;
    let side = |at: usize| Some(u32::from_be_bytes(ihdr.get(at..at + 4)?.try_into().ok()?));
    Some((side(0)?, side(4)?, ihdr.get(8) == Some(&16)))
}

/// A WebP's size from its first chunk: the canvas of `VP8X`, or a still image's bitstream.
fn webp_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let byte = |at: usize| bytes.get(at).copied().map(u32::from);
    match bytes.get(12..16)? {
        b"VP8X" => {
            let side = |at: usize| Some((byte(at)? | byte(at + 1)? << 8 | byte(at + 2)? << 16) + 1);
            Some((side(24)?, side(27)?))
        }
        b"VP8L" => {
            let bits = byte(21)? | byte(22)? << 8 | byte(23)? << 16 | byte(24)? << 24;
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8 " => {
            let side = |at: usize| Some((byte(at)? | byte(at + 1)? << 8) & 0x3FFF);
            Some((side(26)?, side(28)?))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decode_weighs_its_megapixels_within_the_slots() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend(8000u32.to_be_bytes());
        png.extend(5000u32.to_be_bytes());
        png.extend([8, 6, 0, 0, 0]);
        assert_eq!(weight(&png), 40);
        png[24] = 16;
        assert_eq!(weight(&png), SLOTS);
        png[16..20].copy_from_slice(&10u32.to_be_bytes());
        assert_eq!(weight(&png), 1);
        let mut webp = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\x02\0\0\0".to_vec();
        webp.extend([0xAF, 0x18, 0, 0xAF, 0x18, 0]);
        assert_eq!(weight(&webp), 40);
        assert_eq!(weight(b"RIFF\0\0\0\0WEBPJUNK"), SLOTS);
        assert_eq!(weight(b"text"), 1);
    }
}
