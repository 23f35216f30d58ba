//! A GIF's blocks, walked without decoding (docs/architecture.md#images): header, logical
//! screen, global colour table, then extension and image blocks with their sub-blocks, to the
//! trailer. Whether the file ends there, whether it carries anything but pixels (comments, XMP
//! or other application data), and the largest area its frames claim.

/// What walking a GIF's blocks found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GifWalk {
    /// Whether the file ends at its trailer (zero padding after it allowed).
    pub(crate) whole: bool,
    /// Whether every extension is a graphic control or the animation loop.
    pub(crate) only_pixels: bool,
    /// The largest width and height the logical screen or a frame claims.
    pub(crate) size: (u32, u32),
}

/// Walks the GIF file `bytes` to its trailer; a walk that cannot go on says the file is
/// neither whole nor only pixels, with the size found so far.
pub(crate) fn walk(bytes: &[u8]) -> GifWalk {
    let mut found = GifWalk {
        whole: false,
        only_pixels: false,
        size: (0, 0),
    };
    let Some(screen) = bytes.get(6..13) else {
        return found;
    };
    found.size = (
        u32::from(u16::from_le_bytes([screen[0], screen[1]])),
        u32::from(u16::from_le_bytes([screen[2], screen[3]])),
    );
    let mut at = 13 + colour_table(screen[4]);
    let mut only_pixels = true;
    loop {
        match bytes.get(at) {
            Some(0x3B) => {
                let rest = bytes.get(at + 1..).unwrap_or_default();
                found.whole = rest.iter().all(|&b| b == 0);
                found.only_pixels = only_pixels;
                return found;
            }
            Some(0x21) => {
                let Some(&label) = bytes.get(at + 1) else {
                    return found;
                };
                let first = bytes.get(at + 3..).and_then(|rest| {
                    let len = usize::from(*bytes.get(at + 2)?);
                    rest.get(..len)
                });
                let loops = label == 0xFF
                    && first.is_some_and(|id| id == b"NETSCAPE2.0" || id == b"ANIMEXTS1.0");
                if label != 0xF9 && !loops {
                    only_pixels = false;
                }
                let Some(end) = sub_blocks_end(bytes, at + 2) else {
                    return found;
                };
                at = end;
            }
            Some(0x2C) => {
                let Some(descriptor) = bytes.get(at + 1..at + 10) else {
                    return found;
                };
                let side =
                    |lo: usize| u32::from(u16::from_le_bytes([descriptor[lo], descriptor[lo + 1]]));
                found.size = (
                    found.size.0.max(side(0) + side(4)),
                    found.size.1.max(side(2) + side(6)),
                );
                // Descriptor, local colour table, LZW minimum code size, then the data.
                let data = at + 10 + colour_table(descriptor[8]) + 1;
                let Some(end) = sub_blocks_end(bytes, data) else {
                    return found;
                };
                at = end;
            }
            _ => return found,
        }
    }
}

/// The bytes of the colour table a packed field `flags` announces (none without its flag).
fn colour_table(flags: u8) -> usize {
    if flags & 0x80 == 0 {
        0
    } else {
        3 << ((flags & 0x07) + 1)
    }
}

/// Where the sub-blocks starting at `at` end: after the empty one; `None` past the file's end.
fn sub_blocks_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = usize::from(*bytes.get(at)?);
        at += 1;
        if len == 0 {
            return Some(at);
        }
        at += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2×1 GIF with a global colour table, `extra` blocks before its image, and its trailer.
    fn gif(extra: &[u8]) -> Vec<u8> {
        let mut out = b"GIF89a\x02\x00\x01\x00\x80\x00\x00".to_vec();
        out.extend([0, 0, 0, 255, 255, 255]);
        out.extend(extra);
        out.extend(b"\x2c\x00\x00\x00\x00\x02\x00\x01\x00\x00\x02\x02\x44\x01\x00");
        out.push(0x3B);
        out
    }

    #[test]
    fn a_plain_gif_is_whole_and_only_pixels() {
        let bytes = gif(b"\x21\xf9\x04\x00\x00\x00\x00\x00");
        assert_eq!(
            walk(&bytes),
            GifWalk {
                whole: true,
                only_pixels: true,
                size: (2, 1)
            }
        );
        let mut padded = bytes.clone();
        padded.extend([0, 0]);
        assert!(walk(&padded).whole);
    }

    #[test]
    fn data_after_the_trailer_even_ending_in_one_is_not_whole() {
        let mut bytes = gif(b"");
        bytes.extend(b"PK\x03\x04 a zip;");
        assert!(!walk(&bytes).whole);
        let bytes = gif(b"");
        assert!(!walk(&bytes[..bytes.len() - 1]).whole);
        // A sub-block whose data holds a trailer byte is not the end.
        let bytes = gif(b"\x21\xfe\x01\x3b\x00");
        assert!(walk(&bytes).whole);
        assert!(!walk(&bytes[..bytes.len() - 2]).whole);
    }

    #[test]
    fn comments_and_application_data_are_not_only_pixels() {
        assert!(!walk(&gif(b"\x21\xfe\x03GPS\x00")).only_pixels);
        assert!(!walk(&gif(b"\x21\xff\x0bXMP DataXMP\x02<x\x00")).only_pixels);
        assert!(walk(&gif(b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00")).only_pixels);
    }

    #[test]
    fn a_frame_larger_than_the_screen_counts() {
        let mut bytes = b"GIF89a\x02\x00\x01\x00\x00\x00\x00".to_vec();
        bytes.extend(b"\x2c\x10\x00\x00\x00\x00\x01\x00\x02\x00\x02\x02\x44\x01\x00\x3b");
        assert_eq!(walk(&bytes).size, (16 + 256, 512));
    }
}
