//! Files made to hurt, end to end: a PNG whose ICC profile inflates to 512 MB, a JPEG cut in
//! half, and a link planted in a session's store.

use std::time::{Duration, Instant};

use protocol::{Reply, Request};
use tests::images::{contains, crc32, jpeg, png, sha256_hex, upload};
use tests::model_server::anthropic;
use tests::{TestEnv, until_finished};

use super::{run_with_images, sent_images, stored_files, user_images};

/// A zlib stream that inflates to `count` zero bytes (a fixed-Huffman block of one literal,
/// then back-references of length 258, distance 1: 13 bits each).
fn zeros_zlib(count: usize) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let mut used = 16u32;
    let mut put = |value: u32, len: u32, msb_first: bool| {
        for i in 0..len {
            let bit = if msb_first {
                (value >> (len - 1 - i)) & 1
            } else {
                (value >> i) & 1
            };
            if used.is_multiple_of(8) {
                out.push(0);
            }
            *out.last_mut().unwrap() |= (bit as u8) << (used % 8);
            used += 1;
        }
    };
    put(1, 1, false);
    put(1, 2, false);
    put(0x30, 8, true);
    for _ in 0..(count - 1) / 258 {
        put(0b1100_0101, 8, true);
        put(0, 5, true);
    }
    for _ in 0..(count - 1) % 258 {
        put(0x30, 8, true);
    }
    put(0, 7, true);
    out.extend((((count % 65521) as u32) << 16 | 1).to_be_bytes());
    out
}

/// An 8×8 PNG with an ICC profile of `size` zero bytes, compressed.
fn png_with_icc(size: usize) -> Vec<u8> {
    let plain = png(8, 8);
    let mut chunk = Vec::new();
    let mut data = b"p\0\0".to_vec();
    data.extend(zeros_zlib(size));
    chunk.extend((data.len() as u32).to_be_bytes());
    chunk.extend(b"iCCP");
    chunk.extend(&data);
    chunk.extend(crc32(&chunk[4..]).to_be_bytes());
    // Signature (8) and IHDR (25), then the profile.
    let mut out = plain[..33].to_vec();
    out.extend(chunk);
    out.extend(&plain[33..]);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_png_whose_profile_inflates_to_512_mb_is_stored_without_it_and_got_cheaply() {
    let mut env = TestEnv::builder()
        .model(vec![anthropic::text("A dot.")])
        .start()
        .await;
    let bomb = png_with_icc(512 << 20);
    let events = run_with_images(&mut env, "look", vec![upload("icc.png", bomb.clone())]).await;
    let image = user_images(&events).remove(0);
    assert_ne!(image.hash, sha256_hex(&bomb));
    assert_eq!((image.width, image.height), (8, 8));
    let requests = env.server.wait_for_requests(1).await;
    let sent = sent_images(&requests[0]);
    assert_eq!(sent.len(), 1);
    assert!(!contains(&sent[0], b"iCCP"));
    assert!(sent[0].len() < 1000, "{}", sent[0].len());
    for _ in 0..8 {
        let started = Instant::now();
        let reply = env
            .client
            .request(Request::GetImage {
                session: env.session.clone(),
                hash: image.hash.clone(),
            })
            .await
            .unwrap();
        let Reply::Image(got) = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(got.data, sent[0]);
        assert_eq!((got.image.width, got.image.height), (8, 8));
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_jpeg_cut_in_half_is_stored_and_sent_whole() {
    let mut env = TestEnv::builder()
        .model(vec![anthropic::text("Half a photo.")])
        .start()
        .await;
    let whole = jpeg(160, 120);
    let half = whole[..whole.len() / 2].to_vec();
    let events = run_with_images(&mut env, "look", vec![upload("cut.jpg", half.clone())]).await;
    let image = user_images(&events).remove(0);
    assert_ne!(image.hash, sha256_hex(&half));
    assert_eq!(
        (image.media_type.as_str(), image.width, image.height),
        ("image/jpeg", 160, 120)
    );
    let requests = env.server.wait_for_requests(1).await;
    let sent = sent_images(&requests[0]);
    assert_eq!(sha256_hex(&sent[0]), image.hash);
    assert!(sent[0].ends_with(&[0xFF, 0xD9]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_planted_in_the_store_is_never_followed_and_is_replaced() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::text("Seen."),
            anthropic::text("Seen again."),
            anthropic::text("Once more."),
        ])
        .start()
        .await;
    let bytes = png(12, 12);
    let events = run_with_images(&mut env, "look", vec![upload("a.png", bytes.clone())]).await;
    let image = user_images(&events).remove(0);
    let dir = env
        .daemon
        .paths()
        .sessions_dir()
        .join(env.session.as_str())
        .join("images");
    let path = dir.join(format!("{}.png", image.hash));
    let secret = env.daemon.paths().sessions_dir().join("secret.txt");
    std::fs::write(&secret, b"password=hunter2").unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&secret, &path).unwrap();
    let err = env
        .client
        .request(Request::GetImage {
            session: env.session.clone(),
            hash: image.hash.clone(),
        })
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("a symbolic link"), "{err}");
    env.start_run("and now?").await;
    until_finished(&mut env.incoming).await;
    let requests = env.server.wait_for_requests(2).await;
    assert!(sent_images(&requests[1]).is_empty());
    assert!(!requests[1].body.to_string().contains("hunter2"));
    assert!(
        requests[1]
            .body
            .to_string()
            .contains("[image: a.png 12×12]")
    );
    // Sending the image again replaces the link with the stored file.
    let reply = env
        .client
        .request(Request::Send {
            session: env.session.clone(),
            text: "once more".into(),
            images: vec![upload("a.png", bytes.clone())],
            delivery: protocol::Delivery::FollowUp,
            options: env.options(),
        })
        .await;
    assert!(reply.is_ok(), "{reply:?}");
    assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(std::fs::read(&secret).unwrap(), b"password=hunter2");
    assert_eq!(
        stored_files(&env, &env.session),
        vec![format!("{}.png", image.hash)]
    );
}
