//! Images with EXIF metadata: stored (and so sent) turned upright, without it.

use image::{DynamicImage, ImageFormat, Rgba, RgbaImage};

use super::{sha256, store};

/// An EXIF chunk (little-endian TIFF) with `orientation` and a camera serial in its `Make`.
fn exif(orientation: u16) -> Vec<u8> {
    let mut out = b"II*\0".to_vec();
    out.extend(8u32.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    // Make (ASCII, 13 bytes at offset 38), then Orientation (SHORT).
    out.extend(0x010Fu16.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(13u32.to_le_bytes());
    out.extend(38u32.to_le_bytes());
    out.extend(0x0112u16.to_le_bytes());
    out.extend(3u16.to_le_bytes());
    out.extend(1u32.to_le_bytes());
    out.extend(u32::from(orientation).to_le_bytes());
    out.extend(0u32.to_le_bytes());
    out.extend(b"SERIAL-12345\0");
    out
}

/// `image` encoded as `format` with the EXIF chunk `exif`.
fn encode_with_exif(image: DynamicImage, format: ImageFormat, exif: Vec<u8>) -> Vec<u8> {
    use image::ImageEncoder;
    let mut out = Vec::new();
    match format {
        ImageFormat::Jpeg => {
            let mut encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90);
            encoder.set_exif_metadata(exif).unwrap();
            image.to_rgb8().write_with_encoder(encoder).unwrap();
        }
        ImageFormat::Png => {
            let mut encoder = image::codecs::png::PngEncoder::new(&mut out);
            encoder.set_exif_metadata(exif).unwrap();
            image.write_with_encoder(encoder).unwrap();
        }
        _ => {
            let mut encoder = image::codecs::webp::WebPEncoder::new_lossless(&mut out);
            encoder.set_exif_metadata(exif).unwrap();
            image.to_rgba8().write_with_encoder(encoder).unwrap();
        }
    }
    out
}

/// The stored bytes of `image`.
fn stored(dir: &tempfile::TempDir, image: &protocol::ImageRef) -> Vec<u8> {
    let format = crate::images::Format::from_media_type(&image.media_type).unwrap();
    let name = format!("{}.{}", image.hash, format.extension());
    std::fs::read(dir.path().join("images").join(name)).unwrap()
}

/// Whether `bytes` contain `needle`.
fn contains(bytes: &[u8], needle: &[u8]) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn a_jpeg_with_exif_is_stored_upright_without_it() {
    let (dir, store) = store();
    // 40×30 as stored in the file; orientation 6 turns it 90° clockwise for display: 30×40.
    let photo = RgbaImage::from_fn(40, 30, |x, _| {
        Rgba([if x < 20 { 250 } else { 5 }, 5, 5, 255])
    });
    let jpeg = encode_with_exif(DynamicImage::ImageRgba8(photo), ImageFormat::Jpeg, exif(6));
    assert!(contains(&jpeg, b"SERIAL-12345"));
    let image = store.put("photo.jpg", &jpeg).unwrap();
    assert_eq!(
        (image.media_type.as_str(), image.width, image.height),
        ("image/jpeg", 30, 40)
    );
    let bytes = stored(&dir, &image);
    assert_ne!(bytes, jpeg);
    assert_eq!(image.hash, sha256(&bytes));
    assert!(!contains(&bytes, b"SERIAL-12345"));
    assert!(!contains(&bytes, b"Exif\0\0"));
    let upright = image::load_from_memory(&bytes).unwrap().to_rgb8();
    assert_eq!(upright.dimensions(), (30, 40));
    // The left half (red) is on top once turned clockwise.
    assert!(
        upright.get_pixel(15, 5)[0] > 200,
        "{:?}",
        upright.get_pixel(15, 5)
    );
    assert!(
        upright.get_pixel(15, 35)[0] < 60,
        "{:?}",
        upright.get_pixel(15, 35)
    );
}

#[test]
fn a_png_or_webp_with_exif_is_stored_without_it() {
    let (dir, store) = store();
    let picture = || {
        DynamicImage::ImageRgba8(RgbaImage::from_fn(24, 16, |x, y| {
            Rgba([x as u8 * 10, y as u8 * 10, 7, 255])
        }))
    };
    for (name, format) in [("a.png", ImageFormat::Png), ("a.webp", ImageFormat::WebP)] {
        let bytes = encode_with_exif(picture(), format, exif(1));
        assert!(contains(&bytes, b"SERIAL-12345"), "{name}");
        let image = store.put(name, &bytes).unwrap();
        assert_eq!(
            (image.media_type.as_str(), image.width, image.height),
            ("image/png", 24, 16),
            "{name}"
        );
        let kept = stored(&dir, &image);
        assert!(!contains(&kept, b"SERIAL-12345"), "{name}");
        assert!(!contains(&kept, b"eXIf"), "{name}");
        let pixels = image::load_from_memory(&kept).unwrap().to_rgba8();
        assert_eq!(pixels, picture().to_rgba8(), "{name}: lossless");
    }
}
