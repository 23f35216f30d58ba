//! Files made to hurt: a PNG whose ICC profile inflates to hundreds of megabytes, cut or padded
//! files a decoder reads leniently, and links planted in the store.

use std::time::{Duration, Instant};

use image::{DynamicImage, ImageFormat, Rgba, RgbaImage};

use super::{crc32, encode, files, png, sha256, store};

/// A zlib stream that inflates to `count` zero bytes in a few bits each 258 (a fixed-Huffman
/// block of one literal and back-references of length 258, distance 1).
fn zeros_zlib(count: usize) -> Vec<u8> {
    /// Bits written from the least significant.
    struct Bits {
        /// The bytes so far.
        out: Vec<u8>,
        /// The bits of the last byte used.
        used: u32,
    }
    impl Bits {
        /// Writes the `len` low bits of `value`, least significant first.
        fn put(&mut self, value: u32, len: u32) {
            for i in 0..len {
                if self.used.is_multiple_of(8) {
                    self.out.push(0);
                }
                let bit = ((value >> i) & 1) as u8;
                *self.out.last_mut().unwrap() |= bit << (self.used % 8);
                self.used += 1;
            }
        }
        /// Writes a Huffman code of `len` bits, most significant first.
        fn code(&mut self, code: u32, len: u32) {
            let reversed = code.reverse_bits() >> (32 - len);
            self.put(reversed, len);
        }
    }
    let mut bits = Bits {
        out: vec![0x78, 0x01],
        used: 16,
    };
    bits.put(1, 1);
    bits.put(1, 2);
    bits.code(0x30, 8);
    let repeats = (count - 1) / 258;
    for _ in 0..repeats {
        bits.code(0b1100_0101, 8);
        bits.code(0, 5);
    }
    for _ in 0..(count - 1) % 258 {
        bits.code(0x30, 8);
    }
    bits.code(0, 7);
    let adler = ((count % 65521) as u32) << 16 | 1;
    bits.out.extend(adler.to_be_bytes());
    bits.out
}

/// `png` with the chunk `kind` holding `data` inserted after its header.
fn with_chunk(png: &[u8], kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut chunk = (data.len() as u32).to_be_bytes().to_vec();
    chunk.extend(kind);
    chunk.extend(data);
    chunk.extend(crc32(&chunk[4..]).to_be_bytes());
    // Signature (8) and IHDR (25).
    let mut out = png[..33].to_vec();
    out.extend(chunk);
    out.extend(&png[33..]);
    out
}

/// A PNG with an ICC profile of `size` zero bytes, compressed.
fn png_with_icc(size: usize) -> Vec<u8> {
    let mut icc = b"p\0\0".to_vec();
    icc.extend(zeros_zlib(size));
    with_chunk(&png(8, 8), b"iCCP", &icc)
}

/// The stored bytes of `image` in the store in `dir`.
fn stored(dir: &tempfile::TempDir, image: &protocol::ImageRef) -> Vec<u8> {
    std::fs::read(dir.path().join("images").join(name(image))).unwrap()
}

/// The file name of `image` in its store.
fn name(image: &protocol::ImageRef) -> String {
    let format = crate::images::Format::from_media_type(&image.media_type).unwrap();
    format!("{}.{}", image.hash, format.extension())
}

/// Whether `bytes` contain `needle`.
fn contains(bytes: &[u8], needle: &[u8]) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_test_bomb_inflates_as_it_says() {
    let stream = zeros_zlib(1_000_003);
    let inflated = fdeflate::decompress_to_vec(&stream).unwrap();
    assert_eq!(inflated.len(), 1_000_003);
    assert!(stream.len() < 10_000);
}

#[tokio::test]
async fn a_png_whose_icc_profile_inflates_to_512_mb_is_stored_without_it_and_got_cheaply() {
    let (dir, store) = store();
    let bomb = png_with_icc(512 << 20);
    assert!(bomb.len() < 4_000_000, "{}", bomb.len());
    let started = Instant::now();
    let image = store.put("icc.png", &bomb).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        (image.media_type.as_str(), image.width, image.height),
        ("image/png", 8, 8)
    );
    let kept = stored(&dir, &image);
    assert!(!contains(&kept, b"iCCP"));
    assert!(kept.len() < 1000, "{}", kept.len());
    let pixels = image::load_from_memory(&kept).unwrap().to_rgba8();
    assert_eq!(
        pixels,
        image::load_from_memory(&png(8, 8)).unwrap().to_rgba8()
    );
    let started = Instant::now();
    let (got, _) = store.get(&image.hash).await.unwrap();
    assert_eq!((got.width, got.height), (8, 8));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_bomb_stored_before_is_got_with_its_header_read_only() {
    // A file stored as it was before profiles were measured: `get` reads its size without
    // inflating the profile beyond a few megabytes.
    let (dir, store) = store();
    let bomb = png_with_icc(512 << 20);
    let hash = sha256(&bomb);
    std::fs::create_dir_all(dir.path().join("images")).unwrap();
    std::fs::write(dir.path().join("images").join(format!("{hash}.png")), &bomb).unwrap();
    let started = Instant::now();
    let (got, bytes) = store.get(&hash).await.unwrap();
    assert_eq!(bytes, bomb);
    assert_eq!((got.width, got.height), (8, 8));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_small_icc_profile_is_kept_and_bulky_text_is_not() {
    let (dir, store) = store();
    let profiled = png_with_icc(3000);
    let image = store.put("profiled.png", &profiled).unwrap();
    assert_eq!(image.hash, sha256(&profiled));
    let mut text = b"Comment\0\0".to_vec();
    text.extend(zeros_zlib(100_000));
    let chatty = with_chunk(&png(8, 8), b"zTXt", &text);
    let image = store.put("chatty.png", &chatty).unwrap();
    assert_ne!(image.hash, sha256(&chatty));
    assert!(!contains(&stored(&dir, &image), b"zTXt"));
    let raw = with_chunk(&png(8, 8), b"tEXt", &[b'a'; 70_000]);
    let image = store.put("raw.png", &raw).unwrap();
    assert!(!contains(&stored(&dir, &image), b"tEXt"));
}

/// A JPEG photo of `width`×`height` with some detail.
fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let photo = RgbaImage::from_fn(width, height, |x, y| {
        Rgba([(x * 3 % 256) as u8, (y * 5 % 256) as u8, 90, 255])
    });
    encode(
        DynamicImage::ImageRgba8(photo).to_rgb8().into(),
        ImageFormat::Jpeg,
    )
}

#[test]
fn a_jpeg_cut_in_half_or_without_its_end_is_stored_re_encoded_whole() {
    let (dir, store) = store();
    let whole = jpeg(120, 80);
    assert!(whole.ends_with(&[0xFF, 0xD9]));
    let half = &whole[..whole.len() / 2];
    let no_end = &whole[..whole.len() - 2];
    let mut trailing = whole.clone();
    trailing.extend(b"PK\x03\x04 a zip after the image");
    for (what, bytes) in [("half", half), ("no end", no_end), ("trailing", &trailing)] {
        let image = store.put("cut.jpg", bytes).unwrap();
        assert_ne!(image.hash, sha256(bytes), "{what}");
        assert_eq!(
            (image.media_type.as_str(), image.width, image.height),
            ("image/jpeg", 120, 80)
        );
        let kept = stored(&dir, &image);
        assert!(kept.ends_with(&[0xFF, 0xD9]), "{what}");
        image::load_from_memory(&kept).unwrap();
    }
    let mut padded = whole.clone();
    padded.extend([0; 16]);
    let image = store.put("padded.jpg", &padded).unwrap();
    assert_eq!(image.hash, sha256(&padded));
}

#[test]
fn a_png_gif_or_webp_with_bytes_after_its_end_is_re_encoded() {
    let (dir, store) = store();
    let mut png = png(10, 10);
    png.extend(b"trailing");
    let gif = encode(
        DynamicImage::ImageRgba8(RgbaImage::from_pixel(8, 8, Rgba([1, 2, 3, 255]))),
        ImageFormat::Gif,
    );
    let webp = encode(
        DynamicImage::ImageRgba8(RgbaImage::from_pixel(8, 8, Rgba([1, 2, 3, 255]))),
        ImageFormat::WebP,
    );
    let mut gif_cut = gif.clone();
    gif_cut.pop();
    let mut webp_more = webp.clone();
    webp_more.extend(b"more");
    for (what, bytes) in [("png", png), ("gif", gif_cut), ("webp", webp_more)] {
        let image = store.put(what, &bytes).unwrap();
        assert_ne!(image.hash, sha256(&bytes), "{what}");
        assert_eq!(image.media_type, "image/png", "{what}");
        let kept = stored(&dir, &image);
        assert!(kept.ends_with(b"IEND\xae\x42\x60\x82"), "{what}");
    }
}

#[tokio::test]
async fn a_planted_link_is_replaced_by_put_and_never_followed_by_get_or_load() {
    let (dir, store) = store();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, b"password=hunter2").unwrap();
    let bytes = png(6, 6);
    let hash = sha256(&bytes);
    let images = dir.path().join("images");
    std::fs::create_dir_all(&images).unwrap();
    let path = images.join(format!("{hash}.png"));
    std::os::unix::fs::symlink(&secret, &path).unwrap();
    let err = store.get(&hash).await.unwrap_err().to_string();
    assert!(err.contains("a symbolic link"), "{err}");
    let planted = protocol::ImageRef {
        hash: hash.clone(),
        media_type: "image/png".into(),
        size: 16,
        width: 6,
        height: 6,
        name: "x.png".into(),
    };
    assert_eq!(store.load(vec![planted]).await.get(&hash), None);
    let image = store.put("a.png", &bytes).unwrap();
    assert_eq!(image.hash, hash);
    assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(std::fs::read(&secret).unwrap(), b"password=hunter2");
    let (_, got) = store.get(&hash).await.unwrap();
    assert_eq!(got, bytes);
    assert_eq!(files(&dir), vec![format!("{hash}.png")]);
}

#[tokio::test]
async fn a_file_with_other_bytes_or_a_fifo_is_not_the_image() {
    let (dir, store) = store();
    let bytes = png(5, 5);
    let image = store.put("a.png", &bytes).unwrap();
    let path = dir.path().join("images").join(name(&image));
    // Another file (a hard link to a secret) under the image's name.
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, b"password=hunter2").unwrap();
    let err = store.get(&image.hash).await.unwrap_err().to_string();
    assert!(err.contains("do not match its name"), "{err}");
    assert_eq!(store.load(vec![image.clone()]).await.get(&image.hash), None);
    let again = store.put("a.png", &bytes).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(again.hash, image.hash);
    std::fs::remove_file(&path).unwrap();
    let fifo = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let err = store.get(&image.hash).await.unwrap_err().to_string();
    assert!(
        err.contains("a FIFO (named pipe), not a regular file"),
        "{err}"
    );
    assert_eq!(store.load(vec![image.clone()]).await.get(&image.hash), None);
}

#[tokio::test]
async fn an_images_directory_that_is_a_link_is_refused() {
    let (dir, store) = store();
    let elsewhere = tempfile::tempdir().unwrap();
    let bytes = png(4, 4);
    let hash = sha256(&bytes);
    std::fs::write(elsewhere.path().join(format!("{hash}.png")), &bytes).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("images")).unwrap();
    let err = store.get(&hash).await.unwrap_err().to_string();
    assert!(err.contains("a symbolic link"), "{err}");
    let image = protocol::ImageRef {
        hash: hash.clone(),
        media_type: "image/png".into(),
        size: bytes.len() as u64,
        width: 4,
        height: 4,
        name: "a.png".into(),
    };
    assert_eq!(store.load(vec![image]).await.get(&hash), None);
    let err = store.put("b.png", &png(3, 3)).unwrap_err().to_string();
    assert!(err.contains("a symbolic link, not a directory"), "{err}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 1);
}
