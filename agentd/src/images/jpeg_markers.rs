//! A JPEG's markers, walked without decoding (docs/architecture.md#images): each segment by its
//! length, fill bytes skipped, the entropy-coded data of each scan up to the next marker (a
//! `FF` byte in it is stuffed as `FF 00`; restart markers `FF D0`–`FF D7` belong to it), to the
//! end-of-image marker. Whether the file ends there, and whether every segment is one that only
//! tells how to draw the pixels (no EXIF, XMP, IPTC, comment or other application data).

/// What walking a JPEG's markers found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JpegWalk {
    /// Whether the file ends at its end-of-image marker (zero padding after it allowed).
    pub(crate) whole: bool,
    /// Whether every segment is one a decoder needs or that tells how to show the pixels:
    /// `APP0` JFIF/JFXX, `APP2` ICC profile, `APP14` Adobe, tables, frame and scan headers.
    pub(crate) only_pixels: bool,
    /// The frame's size in pixels (width, height), from its first frame header.
    pub(crate) size: Option<(u32, u32)>,
}

/// Start of image.
const SOI: u8 = 0xD8;
/// End of image.
const EOI: u8 = 0xD9;
/// Start of scan: entropy-coded data follows its header.
const SOS: u8 = 0xDA;

/// Walks the JPEG file `bytes` (starting `FF D8`) to its end-of-image marker; a walk that
/// cannot go on (a length past the end, a byte where a marker must be) says the file is
/// neither whole nor only pixels, with what it found so far.
pub(crate) fn walk(bytes: &[u8]) -> JpegWalk {
    let mut found = JpegWalk {
        whole: false,
        only_pixels: true,
        size: None,
    };
    if bytes.get(..2) != Some(&[0xFF, SOI]) {
        found.only_pixels = false;
        return found;
    }
    let mut at = 2usize;
    loop {
        // A marker: FF, any number of fill FFs, then its code.
        if bytes.get(at) != Some(&0xFF) {
            found.only_pixels = false;
            return found;
        }
        while bytes.get(at) == Some(&0xFF) {
            at += 1;
        }
        let Some(&code) = bytes.get(at) else {
            found.only_pixels = false;
            return found;
        };
        at += 1;
        match code {
            EOI => {
                let rest = bytes.get(at..).unwrap_or_default();
                found.whole = rest.iter().all(|&b| b == 0);
                return found;
            }
            // Markers without a length: TEM, restart markers out of a scan, a second SOI.
            0x01 | 0xD0..=0xD7 | SOI | 0x00 => {
                found.only_pixels = false;
                if code == 0x00 || code == SOI {
                    return found;
                }
                continue;
            }
            _ => {}
        }
        let Some(len) = bytes
            .get(at..at + 2)
            .map(|len| usize::from(u16::from_be_bytes([len[0], len[1]])))
        else {
            found.only_pixels = false;
            return found;
        };
        let Some(segment) = (len >= 2).then(|| bytes.get(at + 2..at + len)).flatten() else {
            found.only_pixels = false;
            return found;
        };
        if !draws_pixels(code, segment) {
            found.only_pixels = false;
        }
        if is_frame_header(code) && found.size.is_none() && segment.len() >= 5 {
            let height = u32::from(u16::from_be_bytes([segment[1], segment[2]]));
            let width = u32::from(u16::from_be_bytes([segment[3], segment[4]]));
            found.size = Some((width, height));
        }
        at += len;
        if code == SOS {
            at = scan_end(bytes, at);
        }
    }
}

/// Where the entropy-coded data starting at `from` ends: at the first `FF` that is neither
/// stuffed (`FF 00`), a restart marker nor a fill byte before one; the file's length when none.
fn scan_end(bytes: &[u8], from: usize) -> usize {
    let mut at = from;
    while let Some(offset) = bytes
        .get(at..)
        .and_then(|rest| rest.iter().position(|&b| b == 0xFF))
    {
        let ff = at + offset;
        let mut next = ff + 1;
        while bytes.get(next) == Some(&0xFF) {
            next += 1;
        }
        match bytes.get(next) {
            Some(0x00 | 0xD0..=0xD7) => at = next + 1,
            Some(_) => return ff,
            None => return bytes.len(),
        }
    }
    bytes.len()
}

/// Whether the marker `code` starts a frame header (`SOF0`–`SOF15` but `DHT`, `JPG`, `DAC`).
fn is_frame_header(code: u8) -> bool {
    (0xC0..=0xCF).contains(&code) && !matches!(code, 0xC4 | 0xC8 | 0xCC)
}

/// Whether the segment `code` holding `data` only tells how to draw the pixels: tables, frame
/// and scan headers, restart interval, JFIF/JFXX, an ICC profile, Adobe's colour transform.
fn draws_pixels(code: u8, data: &[u8]) -> bool {
    match code {
        // DHT, DAC, DQT, DRI, SOS.
        0xC4 | 0xCC | 0xDB | 0xDD | SOS => true,
        code if is_frame_header(code) => true,
        0xE0 => data.starts_with(b"JFIF\0") || data.starts_with(b"JFXX\0"),
        0xE2 => data.starts_with(b"ICC_PROFILE\0"),
        0xEE => data.starts_with(b"Adobe"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A segment `code` holding `data`.
    fn segment(code: u8, data: &[u8]) -> Vec<u8> {
        let mut out = vec![0xFF, code];
        out.extend(((data.len() + 2) as u16).to_be_bytes());
        out.extend(data);
        out
    }

    /// A JPEG made of `segments`, a scan with `entropy` data, and its end.
    fn jpeg(segments: &[Vec<u8>], entropy: &[u8]) -> Vec<u8> {
        let mut out = vec![0xFF, SOI];
        for s in segments {
            out.extend(s);
        }
        out.extend(segment(0xC0, &[8, 0, 30, 0, 40, 1, 1, 0x11, 0]));
        out.extend(segment(SOS, &[1, 1, 0, 0, 63, 0]));
        out.extend(entropy);
        out.extend([0xFF, EOI]);
        out
    }

    #[test]
    fn a_plain_jpeg_is_whole_and_only_pixels_with_its_size() {
        let bytes = jpeg(
            &[segment(0xE0, b"JFIF\0\x01\x01"), segment(0xDB, &[0; 65])],
            &[1, 0xFF, 0, 2, 0xFF, 0xD0, 3, 0xFF, 0xFF, 0xD1, 4],
        );
        let found = walk(&bytes);
        assert_eq!(
            found,
            JpegWalk {
                whole: true,
                only_pixels: true,
                size: Some((40, 30))
            }
        );
        let mut padded = bytes.clone();
        padded.extend([0; 8]);
        assert!(walk(&padded).whole);
    }

    #[test]
    fn metadata_segments_are_not_only_pixels() {
        for meta in [
            segment(0xE1, b"Exif\0\0MM"),
            segment(0xE1, b"http://ns.adobe.com/xmp/extension/\0"),
            segment(0xED, b"Photoshop 3.0\08BIM"),
            segment(0xFE, b"GPS 48.8584N"),
            segment(0xE0, b"NOTJFIF"),
            segment(0xEF, b"anything"),
        ] {
            let found = walk(&jpeg(std::slice::from_ref(&meta), &[1, 2]));
            assert!(found.whole && !found.only_pixels, "{meta:?}");
        }
        // Metadata between the scans of a progressive JPEG counts too.
        let mut bytes = jpeg(&[], &[1, 2]);
        bytes.truncate(bytes.len() - 2);
        bytes.extend(segment(0xFE, b"later"));
        bytes.extend(segment(SOS, &[1, 1, 0, 0, 63, 0]));
        bytes.extend([5, 6, 0xFF, EOI]);
        assert!(!walk(&bytes).only_pixels);
    }

    #[test]
    fn data_after_the_end_even_ending_in_an_end_marker_is_not_whole() {
        let mut bytes = jpeg(&[], &[1, 2, 3]);
        bytes.extend(b"PK\x03\x04 a zip \xff\xd9");
        assert!(!walk(&bytes).whole);
        let bytes = jpeg(&[], &[1, 2, 3]);
        assert!(!walk(&bytes[..bytes.len() - 2]).whole);
        let mut cut = bytes.clone();
        cut.truncate(10);
        assert!(!walk(&cut).whole);
        // A length past the end.
        assert!(!walk(&[0xFF, SOI, 0xFF, 0xDB, 0xFF, 0xFF, 0xFF, EOI]).whole);
    }
}
