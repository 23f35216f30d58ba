//! The store's behaviour on images from outside: fitted, refused, stored once.

use std::io::Cursor;

use image::codecs::gif::GifEncoder;
use image::{DynamicImage, Frame, ImageFormat, Rgba, RgbaImage};
use protocol::ImageUpload;
use sha2::{Digest, Sha256};

use super::ImageStore;

mod exif;
mod hostile;
mod limits;
mod metadata;

/// A PNG of `width`×`height` with some detail (so it compresses as a real picture would not).
fn png(width: u32, height: u32) -> Vec<u8> {
    let image = RgbaImage::from_fn(width, height, |x, y| {
        Rgba([(x % 251) as u8, (y % 241) as u8, ((x ^ y) % 256) as u8, 255])
    });
    encode(DynamicImage::ImageRgba8(image), ImageFormat::Png)
}

/// `image` encoded as `format`.
fn encode(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    out.into_inner()
}

/// A store in a fresh directory.
fn store() -> (tempfile::TempDir, ImageStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = ImageStore::new(dir.path());
    (dir, store)
}

/// The files in the store's directory.
fn files(dir: &tempfile::TempDir) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.path().join("images"))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The SHA-256 of `bytes` in lowercase hex.
fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// CRC-32 (IEEE) of `bytes`, as PNG chunks carry it.
fn crc32(bytes: &[u8]) -> u32 {
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

#[test]
fn a_small_image_is_stored_unchanged_once_by_its_hash() {
    let (dir, store) = store();
    let bytes = png(64, 32);
    let first = store.put("shots/small.png", &bytes).unwrap();
    assert_eq!(first.hash, sha256(&bytes));
    assert_eq!(
        (first.media_type.as_str(), first.width, first.height),
        ("image/png", 64, 32)
    );
    assert_eq!(first.size, bytes.len() as u64);
    assert_eq!(first.name, "shots/small.png");
    let path = dir
        .path()
        .join("images")
        .join(format!("{}.png", first.hash));
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    let again = store.put("other-name.png", &bytes).unwrap();
    assert_eq!(again.hash, first.hash);
    assert_eq!(files(&dir), vec![format!("{}.png", first.hash)]);
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        modified
    );
}

#[test]
fn a_6000_px_png_is_scaled_to_2000_px_on_its_long_side() {
    let (dir, store) = store();
    let image = store.put("wide.png", &png(6000, 1500)).unwrap();
    assert_eq!((image.width, image.height), (2000, 500));
    assert_eq!(image.media_type, "image/png");
    let bytes = std::fs::read(
        dir.path()
            .join("images")
            .join(format!("{}.png", image.hash)),
    );
    let bytes = bytes.unwrap();
    assert_eq!(image.hash, sha256(&bytes));
    let stored = image::load_from_memory(&bytes).unwrap();
    assert_eq!((stored.width(), stored.height()), (2000, 500));
}

#[test]
fn a_large_jpeg_stays_a_jpeg() {
    let (_dir, store) = store();
    let photo = RgbaImage::from_fn(3000, 2000, |x, y| {
        Rgba([(x % 200) as u8, (y % 200) as u8, 90, 255])
    });
    let jpeg = encode(
        DynamicImage::ImageRgba8(photo).to_rgb8().into(),
        ImageFormat::Jpeg,
    );
    let image = store.put("photo.jpg", &jpeg).unwrap();
    assert_eq!(image.media_type, "image/jpeg");
    assert_eq!((image.width, image.height), (2000, 1333));
}

#[test]
fn a_text_file_named_png_is_refused_saying_what_it_looks_like() {
    let (dir, store) = store();
    let err = store.put("shot.png", b"not an image at all\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "shot.png is not a PNG, JPEG, GIF or WebP image (it looks like text): attach an image file"
    );
    assert!(files(&dir).is_empty());
}

#[test]
fn a_header_claiming_100000_px_a_side_is_refused_before_decoding() {
    let (_dir, store) = store();
    let mut bytes = png(1, 1);
    // IHDR's data starts at byte 16: width, height; its CRC covers type and data (12..29).
    bytes[16..20].copy_from_slice(&100_000u32.to_be_bytes());
    bytes[20..24].copy_from_slice(&100_000u32.to_be_bytes());
    let crc = crc32(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.to_be_bytes());
    let started = std::time::Instant::now();
    let err = store.put("huge.png", &bytes).unwrap_err();
    assert!(
        err.to_string()
            .contains("huge.png is 100000×100000 pixels, more than an attached image may have"),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn a_truncated_image_is_refused_as_damaged() {
    let (_dir, store) = store();
    let bytes = png(300, 300);
    let err = store.put("cut.png", &bytes[..bytes.len() / 2]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cut.png is a damaged or unsupported PNG image"),
        "{err}"
    );
}

#[test]
fn an_animated_gif_becomes_its_first_frame() {
    let (dir, store) = store();
    let mut gif = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut gif);
        for colour in [[255, 0, 0, 255], [0, 0, 255, 255]] {
            let frame = RgbaImage::from_pixel(40, 30, Rgba(colour));
            encoder.encode_frame(Frame::new(frame)).unwrap();
        }
    }
    let image = store.put("anim.gif", &gif).unwrap();
    assert_eq!(image.media_type, "image/png");
    assert_eq!((image.width, image.height), (40, 30));
    let stored = std::fs::read(
        dir.path()
            .join("images")
            .join(format!("{}.png", image.hash)),
    );
    let stored = image::load_from_memory(&stored.unwrap())
        .unwrap()
        .to_rgba8();
    assert_eq!(stored.get_pixel(5, 5), &Rgba([255, 0, 0, 255]));
}

#[test]
fn a_still_gif_is_kept_as_it_is() {
    let (_dir, store) = store();
    let gif = encode(
        DynamicImage::ImageRgba8(RgbaImage::from_pixel(8, 8, Rgba([1, 2, 3, 255]))),
        ImageFormat::Gif,
    );
    let image = store.put("still.gif", &gif).unwrap();
    assert_eq!(image.media_type, "image/gif");
    assert_eq!(image.hash, sha256(&gif));
}

#[test]
fn a_webp_within_the_limits_is_kept_and_a_large_one_becomes_a_png() {
    let (_dir, store) = store();
    let small = RgbaImage::from_fn(30, 20, |x, y| Rgba([x as u8, y as u8, 7, 255]));
    let webp = encode(DynamicImage::ImageRgba8(small), ImageFormat::WebP);
    let image = store.put("small.webp", &webp).unwrap();
    assert_eq!(image.media_type, "image/webp");
    assert_eq!(image.hash, sha256(&webp));
    let large = RgbaImage::from_fn(2400, 1200, |x, y| {
        Rgba([(x % 256) as u8, (y % 256) as u8, 7, 255])
    });
    let webp = encode(DynamicImage::ImageRgba8(large), ImageFormat::WebP);
    let image = store.put("large.webp", &webp).unwrap();
    assert_eq!(image.media_type, "image/png");
    assert_eq!((image.width, image.height), (2000, 1000));
}

#[test]
fn a_16_bit_png_is_scaled_and_stays_a_png() {
    let (_dir, store) = store();
    let deep = image::ImageBuffer::<Rgba<u16>, _>::from_fn(2500, 100, |x, y| {
        Rgba([(x * 20) as u16, (y * 600) as u16, 1000, 65535])
    });
    let bytes = encode(DynamicImage::ImageRgba16(deep), ImageFormat::Png);
    let image = store.put("deep.png", &bytes).unwrap();
    assert_eq!(
        (image.media_type.as_str(), image.width, image.height),
        ("image/png", 2000, 80)
    );
}

#[test]
fn a_long_name_keeps_its_end() {
    let (_dir, store) = store();
    let name = format!("{}/shot.png", "d".repeat(500));
    let image = store.put(&name, &png(4, 4)).unwrap();
    assert!(image.name.ends_with("/shot.png"));
    assert!(image.name.chars().count() <= 201);
}

#[tokio::test]
async fn get_returns_the_bytes_and_refuses_anything_but_a_hash() {
    let (_dir, store) = store();
    let bytes = png(10, 20);
    let image = store.put("a.png", &bytes).unwrap();
    let (got, data) = store.get(&image.hash).await.unwrap();
    assert_eq!(data, bytes);
    assert_eq!(
        (got.width, got.height, got.size),
        (10, 20, bytes.len() as u64)
    );
    assert_eq!(got.name, format!("{}.png", image.hash));
    for bad in [
        "../../etc/passwd",
        &image.hash.to_uppercase(),
        &image.hash.chars().skip(1).collect::<String>(),
        &format!("{}/", "a".repeat(63)),
        "",
    ] {
        let err = store.get(bad).await.unwrap_err();
        assert!(
            err.to_string().contains("is not an image hash"),
            "{bad}: {err}"
        );
    }
    let err = store.get(&"0".repeat(64)).await.unwrap_err();
    assert!(
        err.to_string().contains("this session has no image"),
        "{err}"
    );
}

#[tokio::test]
async fn load_gives_the_stored_bytes_and_leaves_out_what_is_gone() {
    let (_dir, store) = store();
    let bytes = png(3, 3);
    let image = store.put("a.png", &bytes).unwrap();
    let mut gone = image.clone();
    gone.hash = "f".repeat(64);
    let data = store.load(vec![image.clone(), gone.clone()]).await;
    assert_eq!(data.get(&image.hash), Some(("image/png", bytes.as_slice())));
    assert!(data.has(&image));
    assert_eq!(data.get(&gone.hash), None);
    assert!(!data.has(&gone));
}

#[tokio::test]
async fn put_all_caps_the_count_and_bytes_of_a_message() {
    let (dir, store) = store();
    let upload = |name: &str, data: Vec<u8>| ImageUpload {
        name: name.into(),
        data,
    };
    let eleven = (0..11)
        .map(|i| upload(&format!("{i}.png"), png(2, 2)))
        .collect();
    let err = store.put_all(eleven).await.unwrap_err();
    assert!(
        err.to_string()
            .starts_with("a message carries at most 10 images")
            && err.to_string().contains("follow-up"),
        "{err}"
    );
    let big = vec![
        upload("a.png", vec![0; 7 << 20]),
        upload("b.png", vec![0; 7 << 20]),
    ];
    let err = store.put_all(big).await.unwrap_err();
    assert!(err.to_string().contains("at most 12 MB together"), "{err}");
    let refs = store
        .put_all(vec![upload("a.png", png(5, 5)), upload("b.png", png(6, 6))])
        .await
        .unwrap();
    assert_eq!(refs.len(), 2);
    assert_eq!(files(&dir).len(), 2);
    let err = store
        .put_all(vec![
            upload("ok.png", png(7, 7)),
            upload("notes.png", b"hi".to_vec()),
        ])
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with("notes.png is not a PNG"),
        "{err}"
    );
}
