//! Metadata wherever a file carries it, end to end: a PNG's EXIF after its pixels, XMP in a
//! text chunk, a JPEG's IPTC and comment, and a zip appended to a JPEG that itself ends like
//! one, never reach the model nor the store.

use tests::TestEnv;
use tests::images::{contains, crc32, jpeg, png, sha256_hex, upload};
use tests::model_server::anthropic;

use super::{run_with_images, sent_images, user_images};

/// `png` with the chunk `kind` holding `data` just before its `IEND` (after the pixels).
fn before_iend(png: &[u8], kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut chunk = (data.len() as u32).to_be_bytes().to_vec();
    chunk.extend(kind);
    chunk.extend(data);
    chunk.extend(crc32(&chunk[4..]).to_be_bytes());
    let mut out = png[..png.len() - 12].to_vec();
    out.extend(chunk);
    out.extend(&png[png.len() - 12..]);
    out
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_anywhere_in_a_file_never_reaches_the_model() {
    let mut env = TestEnv::builder()
        .model(vec![anthropic::text("Seen.")])
        .start()
        .await;
    let exif = b"MM\0*\0\0\0\x08\0\x01\x01\x0f\0\x02\0\0\0\x0cSECRET-EXIF\0";
    // Each of its own size: the same pixels would be stored (and sent) once.
    let mut zip = jpeg(44, 30);
    zip.extend(b"PK\x03\x04 SECRET-ZIP \xff\xd9");
    let files = [
        before_iend(&png(30, 20), b"eXIf", exif),
        before_iend(
            &png(31, 20),
            b"tEXt",
            b"XML:com.adobe.xmp\0<x:xmpmeta>SECRET-XMP</x:xmpmeta>",
        ),
        with_segment(&jpeg(42, 30), 0xED, b"Photoshop 3.0\08BIM SECRET-IPTC"),
        with_segment(&jpeg(40, 30), 0xFE, b"SECRET-COMMENT"),
        zip,
    ];
    let uploads = files
        .iter()
        .enumerate()
        .map(|(i, bytes)| upload(&format!("{i}.img"), bytes.clone()))
        .collect();
    let events = run_with_images(&mut env, "look", uploads).await;
    let images = user_images(&events);
    assert_eq!(images.len(), files.len());
    for (image, file) in images.iter().zip(&files) {
        assert_ne!(
            image.hash,
            sha256_hex(file),
            "{}: stored as sent",
            image.name
        );
    }
    let requests = env.server.wait_for_requests(1).await;
    let sent = sent_images(&requests[0]);
    assert_eq!(sent.len(), files.len());
    for (bytes, image) in sent.iter().zip(&images) {
        assert_eq!(sha256_hex(bytes), image.hash);
        assert!(!contains(bytes, b"SECRET"), "{}", image.name);
    }
}
