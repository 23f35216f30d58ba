//! Whether an image file carries nothing but its pixels: a whitelist of the chunks or segments
//! that tell how to draw them, per format (docs/architecture.md#images). Anything else (EXIF,
//! XMP, IPTC, comments, text, application data, chunks of any other name) may say where a photo
//! was taken or by which camera, so such a file is re-encoded, which drops it.

use super::format::Format;
use super::{gif_blocks, jpeg_markers, png_chunks};

/// The RIFF chunks a WebP is stored byte for byte with: its bitstreams, alpha, animation and
/// ICC profile; never `EXIF` or `XMP `.
const WEBP_KEPT: [&[u8; 4]; 7] = [
    b"VP8 ", b"VP8L", b"VP8X", b"ALPH", b"ANIM", b"ANMF", b"ICCP",
];

/// Whether `bytes` (an image in `format`) hold only chunks or segments of its whitelist.
pub(crate) fn only_pixels(format: Format, bytes: &[u8]) -> bool {
    match format {
        Format::Png => png_chunks::only_pixels(bytes),
        Format::Jpeg => jpeg_markers::walk(bytes).only_pixels,
        Format::Gif => gif_blocks::walk(bytes).only_pixels,
        Format::WebP => webp_only_pixels(bytes),
    }
}

/// Whether every RIFF chunk of the WebP file `bytes` is one of [`WEBP_KEPT`] and they fill it.
fn webp_only_pixels(bytes: &[u8]) -> bool {
    let mut at = 12usize;
    while at < bytes.len() {
        let Some(head) = bytes.get(at..at + 8) else {
            return false;
        };
        let (kind, size) = head.split_at(4);
        let Ok(size) = <[u8; 4]>::try_from(size) else {
            return false;
        };
        let Ok(size) = usize::try_from(u32::from_le_bytes(size)) else {
            return false;
        };
        if !WEBP_KEPT.iter().any(|kept| kept.as_slice() == kind) {
            return false;
        }
        // Chunks are padded to an even length.
        at = at
            .saturating_add(8)
            .saturating_add(size)
            .saturating_add(size & 1);
    }
    at == bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WebP file of `chunks` (kind, data).
    fn webp(chunks: &[(&[u8; 4], &[u8])]) -> Vec<u8> {
        let mut body = b"WEBP".to_vec();
        for (kind, data) in chunks {
            body.extend(*kind);
            body.extend((data.len() as u32).to_le_bytes());
            body.extend(*data);
            if data.len() % 2 == 1 {
                body.push(0);
            }
        }
        let mut out = b"RIFF".to_vec();
        out.extend((body.len() as u32).to_le_bytes());
        out.extend(body);
        out
    }

    #[test]
    fn a_webp_keeps_its_bitstream_and_profile_but_not_exif_or_xmp() {
        assert!(only_pixels(Format::WebP, &webp(&[(b"VP8L", b"abc")])));
        assert!(only_pixels(
            Format::WebP,
            &webp(&[(b"VP8X", &[0; 10]), (b"ICCP", b"p"), (b"VP8 ", b"xy")])
        ));
        for meta in [b"EXIF", b"XMP ", b"JUNK"] {
            let bytes = webp(&[(b"VP8X", &[0; 10]), (b"VP8L", b"abc"), (meta, b"GPS")]);
            assert!(!only_pixels(Format::WebP, &bytes), "{meta:?}");
        }
    }
}
