//! Whether an image file is whole: it ends where its format says it ends. A decoder reads a cut
//! JPEG leniently (the missing part grey), but a provider may refuse it, and then every later
//! call of the session that sends it; such a file is stored re-encoded from what decodes
//! (docs/architecture.md#images).

use super::format::Format;
use super::png_chunks::ends_with_iend;

/// Whether `bytes` (an image in `format`) end as the format says: a PNG with its `IEND`
/// chunk, a JPEG with its end-of-image marker and a GIF with its trailer (trailing zero
/// padding allowed), a WebP where its RIFF header says. Anything after the end, or missing
/// before it, makes a file not whole.
pub(crate) fn is_whole(format: Format, bytes: &[u8]) -> bool {
    match format {
        Format::Png => ends_with_iend(bytes),
        Format::Jpeg => without_zero_padding(bytes).ends_with(&[0xFF, 0xD9]),
        Format::Gif => without_zero_padding(bytes).ends_with(&[0x3B]),
        Format::WebP => riff_len(bytes) == Some(bytes.len()),
    }
}

/// `bytes` without the zero bytes at their end.
fn without_zero_padding(bytes: &[u8]) -> &[u8] {
    let len = bytes.iter().rposition(|&b| b != 0).map_or(0, |at| at + 1);
    bytes.get(..len).unwrap_or(bytes)
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
            &[0xFF, 0xD8, 0xFF, 0xD9, b'P', b'K']
        ));
        assert!(is_whole(Format::Gif, b"GIF89a..;"));
        assert!(!is_whole(Format::Gif, b"GIF89a..."));
        assert!(is_whole(Format::WebP, b"RIFF\x04\0\0\0WEBP"));
        assert!(!is_whole(Format::WebP, b"RIFF\x08\0\0\0WEBP"));
        assert!(!is_whole(Format::WebP, b"RIFF\x04\0\0\0WEBPmore"));
    }
}
