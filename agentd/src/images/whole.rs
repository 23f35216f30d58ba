//! Whether an image file is whole: it ends where its format says it ends. A decoder reads a cut
//! JPEG leniently (the missing part grey), but a provider may refuse it, and then every later
//! call of the session that sends it; such a file is stored re-encoded from what decodes
//! (docs/architecture.md#images).

use super::format::Format;
use super::png_chunks::ends_with_iend;
use super::{gif_blocks, jpeg_markers};

/// Whether `bytes` (an image in `format`) end as the format says: a PNG with its `IEND`
/// chunk, a JPEG with the end-of-image marker its markers and scans lead to, a GIF with the
/// trailer its blocks lead to (trailing zero padding allowed), a WebP where its RIFF header
/// says. Anything after the end (even data that itself ends like an image), or missing before
/// it, makes a file not whole.
pub(crate) fn is_whole(format: Format, bytes: &[u8]) -> bool {
    match format {
        Format::Png => ends_with_iend(bytes),
        Format::Jpeg => jpeg_markers::walk(bytes).whole,
        Format::Gif => gif_blocks::walk(bytes).whole,
        Format::WebP => riff_len(bytes) == Some(bytes.len()),
    }
}

/// The length of a RIFF file as its header gives it (the size field counts what follows it).
fn riff_len(bytes: &[u8]) -> Option<usize> {
    let size: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
    usize::try_from(u32::from_le_bytes(size))
        .ok()?
        .checked_add(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_must_end_where_it_says() {
        assert!(is_whole(Format::Jpeg, &[0xFF, 0xD8, 0xFF, 0xD9]));
        assert!(is_whole(Format::Jpeg, &[0xFF, 0xD8, 0xFF, 0xD9, 0, 0]));
        assert!(!is_whole(Format::Jpeg, &[0xFF, 0xD8, 0xFF, 0xDA, 1]));
        assert!(!is_whole(
            Format::Jpeg,
            &[0xFF, 0xD8, 0xFF, 0xD9, b'P', b'K', 0xFF, 0xD9]
        ));
        let gif =
            b"GIF89a\x01\x00\x01\x00\x00\x00\x00\x2c\0\0\0\0\x01\0\x01\0\0\x02\x01\x44\x00\x3b";
        assert!(is_whole(Format::Gif, gif));
        assert!(!is_whole(Format::Gif, &gif[..gif.len() - 1]));
        let mut trailing = gif.to_vec();
        trailing.extend(b"PK;");
        assert!(!is_whole(Format::Gif, &trailing));
        assert!(!is_whole(Format::Gif, b"GIF89a..;"));
        assert!(is_whole(Format::WebP, b"RIFF\x04\0\0\0WEBP"));
        assert!(!is_whole(Format::WebP, b"RIFF\x08\0\0\0WEBP"));
        assert!(!is_whole(Format::WebP, b"RIFF\x04\0\0\0WEBPmore"));
    }
}
