//! Test images made on the spot with the `image` crate: a PNG of any size, a JPEG, a
//! screenshot-like PNG that compresses as a real one does, and what a test checks on them.

use std::io::Cursor;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use protocol::ImageUpload;
use sha2::{Digest, Sha256};

/// A PNG of `width`×`height` pixels: gradients and blocks, which compress well (a 6000 px
/// one stays within what a message may carry).
pub fn png(width: u32, height: u32) -> Vec<u8> {
    let image = RgbImage::from_fn(width, height, |x, y| {
        Rgb([
            (x % 251) as u8,
            (y % 241) as u8,
            ((x / 8 + y / 8) % 256) as u8,
        ])
    });
    encode(DynamicImage::ImageRgb8(image), ImageFormat::Png)
}

/// A JPEG of `width`×`height` pixels (a smooth photo-like picture).
pub fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let image = RgbImage::from_fn(width, height, |x, y| {
        Rgb([
            (x * 255 / width.max(1)) as u8,
            (y * 255 / height.max(1)) as u8,
            ((x + y) % 200) as u8,
        ])
    });
    encode(DynamicImage::ImageRgb8(image), ImageFormat::Jpeg)
}

/// A 1920×1080 PNG that looks like a screenshot: flat panels, a title bar, and rows of
/// "text" (short dark strokes placed pseudo-randomly), so it compresses as a real one does
/// (a few hundred kB, not a few kB).
pub fn screenshot() -> Vec<u8> {
    let (width, height) = (1920u32, 1080u32);
    let mut image = RgbImage::from_pixel(width, height, Rgb([250, 250, 250]));
    let mut seed = 0x2545_f491_u32;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    for y in 0..height {
        for x in 0..width {
            let colour = match (x, y) {
                (_, 0..40) => Rgb([40, 44, 52]),
                (0..300, _) => Rgb([235, 237, 240]),
                _ => continue,
            };
            image.put_pixel(x, y, colour);
        }
    }
    // Lines of text: glyph-sized strokes with gaps for words.
    for line in 0..60u32 {
        let top = 60 + line * 17;
        let left = if line % 7 == 0 { 20 } else { 320 };
        let mut x = left + random() % 40;
        while x < width - 40 {
            let glyph = 5 + random() % 5;
            for dy in 0..11 {
                for dx in 0..glyph {
                    if random() % 3 != 0 {
                        let shade = 30 + (random() % 60) as u8;
                        image.put_pixel(x + dx, top + dy, Rgb([shade, shade, shade + 20]));
                    }
                }
            }
            x += glyph + 2 + if random() % 6 == 0 { 8 } else { 0 };
            if random() % 90 == 0 {
                break;
            }
        }
    }
    encode(DynamicImage::ImageRgb8(image), ImageFormat::Png)
}

/// `image` encoded as `format`.
fn encode(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image
        .write_to(&mut out, format)
        .expect("the test image encodes");
    out.into_inner()
}

/// What a client sends for the file `name` holding `data`.
pub fn upload(name: &str, data: Vec<u8>) -> ImageUpload {
    ImageUpload {
        name: name.to_string(),
        data,
    }
}

/// The SHA-256 of `bytes` as 64 lowercase hex digits (an image's hash).
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The size in pixels of the PNG a request carries as base64 `data` (checked to be a PNG).
pub fn png_pixels(data: &str) -> (u32, u32) {
    let bytes = STANDARD.decode(data).expect("the image data is base64");
    assert_eq!(
        image::guess_format(&bytes).expect("an image format"),
        ImageFormat::Png
    );
    pixels(&bytes)
}

/// The size in pixels of the image `bytes` (decoded whole).
pub fn pixels(bytes: &[u8]) -> (u32, u32) {
    let image = image::load_from_memory(bytes).expect("the bytes are an image");
    (image.width(), image.height())
}

/// CRC-32 (IEEE) of `bytes`, as PNG chunks carry it.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Whether `bytes` contain `needle`.
pub fn contains(bytes: &[u8], needle: &[u8]) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle)
}
