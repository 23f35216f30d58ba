//! Metadata wherever a file carries it: only the chunks and segments that draw the pixels keep
//! a file byte for byte; anything else (EXIF after the pixels, EXIF or XMP as text, Extended
//! XMP, IPTC, comments) is re-encoded away. And data after an image's end that itself ends like
//! an image.

use image::{DynamicImage, ImageFormat, Rgba, RgbaImage};

use super::{crc32, encode, png, sha256, store};

/// The chunk `kind` holding `data`, as a PNG carries it.
fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    out.extend(kind);
    out.extend(data);
    out.extend(crc32(&out[4..]).to_be_bytes());
    out
}

/// `png` with `chunk` inserted just before its `IEND` (after the pixels).
fn before_iend(png: &[u8], chunk: &[u8]) -> Vec<u8> {
    let mut out = png[..png.len() - 12].to_vec();
    out.extend(chunk);
    out.extend(&png[png.len() - 12..]);
    out
}

/// A small JPEG photo.
fn jpeg() -> Vec<u8> {
    let photo = RgbaImage::from_fn(48, 32, |x, y| {
        Rgba([(x * 5 % 256) as u8, (y * 7 % 256) as u8, 90, 255])
    });
    encode(
        DynamicImage::ImageRgba8(photo).to_rgb8().into(),
        ImageFormat::Jpeg,
    )
}

/// `jpeg` with the segment `code` holding `data` right after its start marker.
fn with_segment(jpeg: &[u8], code: u8, data: &[u8]) -> Vec<u8> {
    let mut out = jpeg[..2].to_vec();
    out.extend([0xFF, code]);
    out.extend(((data.len() + 2) as u16).to_be_bytes());
    out.extend(data);
    out.extend(&jpeg[2..]);
    out
}

/// Whether `bytes` contain `needle`.
fn contains(bytes: &[u8], needle: &[u8]) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle)
}

/// Stores `bytes` and returns what was stored: it must differ from them and lack `secret`.
fn stored_without(bytes: &[u8], secret: &[u8], what: &str) -> Vec<u8> {
    assert!(contains(bytes, secret), "{what}: the sample carries it");
    let (dir, store) = store();
    let image = store
        .put(what, bytes)
        .unwrap_or_else(|err| panic!("{what}: {err}"));
    assert_ne!(image.hash, sha256(bytes), "{what}: stored as it was");
    let format = crate::images::Format::from_media_type(&image.media_type).unwrap();
    let name = format!("{}.{}", image.hash, format.extension());
    let kept = std::fs::read(dir.path().join("images").join(name)).unwrap();
    assert!(!contains(&kept, secret), "{what}: still carries it");
    kept
}

#[test]
fn png_metadata_after_the_pixels_or_as_text_is_not_kept() {
    let plain = png(20, 10);
    let exif = b"MM\0*\0\0\0\x08\0\x01\x01\x0f\0\x02\0\0\0\x0bSERIAL-9876\0";
    let mut raw_profile = b"Raw profile type exif\0\0".to_vec();
    raw_profile.extend(miniz_like_store(b"exif 48.8584N 2.2945E"));
    let cases: [(&str, Vec<u8>, &[u8]); 5] = [
        ("exif_after.png", chunk(b"eXIf", exif), b"SERIAL-9876"),
        ("raw.png", chunk(b"zTXt", &raw_profile), b"Raw profile"),
        (
            "xmp.png",
            chunk(b"tEXt", b"XML:com.adobe.xmp\0<x:xmpmeta>GPS</x:xmpmeta>"),
            b"xmpmeta",
        ),
        (
            "comment.png",
            chunk(b"tEXt", b"Comment\0GPS 48.8584N"),
            b"48.8584N",
        ),
        (
            "apng.png",
            chunk(b"acTL", &[0, 0, 0, 1, 0, 0, 0, 0]),
            b"acTL",
        ),
    ];
    for (what, extra, secret) in cases {
        let bytes = before_iend(&plain, &extra);
        let kept = stored_without(&bytes, secret, what);
        let pixels = image::load_from_memory(&kept).unwrap().to_rgba8();
        assert_eq!(
            pixels,
            image::load_from_memory(&plain).unwrap().to_rgba8(),
            "{what}"
        );
    }
    // What only tells how to show the pixels keeps the file as it is.
    let shown = before_iend(&plain, &chunk(b"pHYs", &[0, 0, 11, 19, 0, 0, 11, 19, 1]));
    let (_dir, store) = store();
    assert_eq!(store.put("phys.png", &shown).unwrap().hash, sha256(&shown));
}

/// `data` as a zlib stream of stored (uncompressed) blocks.
fn miniz_like_store(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01, 0x01];
    out.extend((data.len() as u16).to_le_bytes());
    out.extend((!(data.len() as u16)).to_le_bytes());
    out.extend(data);
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    out.extend((b << 16 | a).to_be_bytes());
    out
}

#[test]
fn jpeg_extended_xmp_iptc_and_comments_are_not_kept() {
    let plain = jpeg();
    let cases: [(&str, u8, &[u8], &[u8]); 4] = [
        (
            "extxmp.jpg",
            0xE1,
            b"http://ns.adobe.com/xmp/extension/\x000123456789ABCDEF0123456789ABCDEF\
              \0\0\0\x07\0\0\0\0<GPS/>",
            b"ns.adobe.com",
        ),
        (
            "iptc.jpg",
            0xED,
            b"Photoshop 3.0\x008BIM\x04\x04\0\0\0\0\0\x0c\x1c\x02Z\0\x05Paris",
            b"Paris",
        ),
        ("comment.jpg", 0xFE, b"GPS 48.8584N 2.2945E", b"48.8584N"),
        ("app15.jpg", 0xEF, b"camera serial 42", b"serial 42"),
    ];
    for (what, code, data, secret) in cases {
        let bytes = with_segment(&plain, code, data);
        let kept = stored_without(&bytes, secret, what);
        assert!(kept.starts_with(&[0xFF, 0xD8]), "{what}");
    }
    let (_dir, store) = store();
    assert_eq!(store.put("plain.jpg", &plain).unwrap().hash, sha256(&plain));
}

#[test]
fn a_gif_comment_is_not_kept() {
    let gif = encode(
        DynamicImage::ImageRgba8(RgbaImage::from_pixel(8, 8, Rgba([1, 2, 3, 255]))),
        ImageFormat::Gif,
    );
    // Header (6), logical screen (7), then the global colour table its flags announce.
    let table = if gif[10] & 0x80 != 0 {
        3 << ((gif[10] & 7) + 1)
    } else {
        0
    };
    let mut bytes = gif[..13 + table].to_vec();
    bytes.extend(b"\x21\xfe\x14GPS 48.8584N 2.2945E\x00");
    bytes.extend(&gif[13 + table..]);
    stored_without(&bytes, b"48.8584N", "comment.gif");
}

#[test]
fn data_after_the_end_that_ends_like_an_image_is_not_kept() {
    let mut jpeg = jpeg();
    jpeg.extend(b"PK\x03\x04 secret.txt password=hunter2 \xff\xd9");
    let kept = stored_without(&jpeg, b"hunter2", "trail.jpg");
    assert!(kept.ends_with(&[0xFF, 0xD9]));
    let mut gif = encode(
        DynamicImage::ImageRgba8(RgbaImage::from_pixel(8, 8, Rgba([1, 2, 3, 255]))),
        ImageFormat::Gif,
    );
    gif.extend(b"PK\x03\x04 password=hunter2;");
    stored_without(&gif, b"hunter2", "trail.gif");
}
