//! The daemon's images (docs/architecture.md#images): an image sent with a message is checked,
//! scaled when too large, stored once by its hash next to the session's log, named by its ref
//! in the history, and sent to the model from the store on each call; it survives a restart
//! and a fork, goes with a deleted session, and `read` of an image gives it to the model.

use agentctl::client::{Client, ClientError, Incoming};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use protocol::{
    Delivery, Event, ImageRef, ImageUpload, Reply, Request, RunOptions, SessionEvent, SessionId,
};
use serde_json::{Value, json};
use tests::images::{jpeg, pixels, png, screenshot, sha256_hex, upload};
use tests::model_server::{Received, anthropic};
use tests::{TestEnv, next_event, subscribe, until_finished};
use tokio::sync::mpsc::UnboundedReceiver;

mod hostile;
mod metadata;

/// Sends `text` with `images` to `session`; the daemon's reply or refusal.
async fn send(
    client: &Client,
    session: &SessionId,
    text: &str,
    images: Vec<ImageUpload>,
    options: RunOptions,
) -> Result<Reply, ClientError> {
    client
        .request(Request::Send {
            session: session.clone(),
            text: text.to_string(),
            images,
            delivery: Delivery::FollowUp,
            options,
        })
        .await
}

/// Sends `text` with `images` in the test's session and returns the run's events.
async fn run_with_images(
    env: &mut TestEnv,
    text: &str,
    images: Vec<ImageUpload>,
) -> Vec<SessionEvent> {
    let reply = send(&env.client, &env.session, text, images, env.options()).await;
    assert!(
        matches!(reply, Ok(Reply::Sent { started: Some(_) })),
        "{reply:?}"
    );
    until_finished(&mut env.incoming).await
}

/// The images of the first `UserMessage` of `events`.
fn user_images(events: &[SessionEvent]) -> Vec<ImageRef> {
    events
        .iter()
        .find_map(|e| match &e.event {
            Event::UserMessage { images, .. } => Some(images.clone()),
            _ => None,
        })
        .expect("a user message")
}

/// The base64 data of every Anthropic image block anywhere in `body` (in user messages and in
/// tool results), in order.
fn image_data(body: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect_images(body, &mut found);
    found
}

/// Adds the base64 data of each image block under `value` to `found`.
fn collect_images(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if map.get("type") == Some(&json!("image")) {
                let data = value["source"]["data"].as_str().unwrap_or_default();
                found.push(data.to_string());
            }
            map.values().for_each(|v| collect_images(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_images(v, found)),
        _ => {}
    }
}

/// The bytes of the image blocks of `request`, decoded.
fn sent_images(request: &Received) -> Vec<Vec<u8>> {
    image_data(&request.body)
        .iter()
        .map(|data| STANDARD.decode(data).expect("base64 image data"))
        .collect()
}

/// The files in the session's `images/` directory.
fn stored_files(env: &TestEnv, session: &SessionId) -> Vec<String> {
    let dir = env
        .daemon
        .paths()
        .sessions_dir()
        .join(session.as_str())
        .join("images");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn an_attached_image_is_named_by_its_ref_and_reaches_the_model() {
    let mut env = TestEnv::builder()
        .model(vec![anthropic::text("A small picture.")])
        .start()
        .await;
    let bytes = png(64, 48);
    let events = run_with_images(
        &mut env,
        "what is this?",
        vec![upload("shots/small.png", bytes.clone())],
    )
    .await;
    let images = user_images(&events);
    assert_eq!(images.len(), 1);
    let image = &images[0];
    assert_eq!(image.hash, sha256_hex(&bytes), "stored unchanged");
    assert_eq!((image.width, image.height), (64, 48));
    assert_eq!(
        (image.media_type.as_str(), image.size),
        ("image/png", bytes.len() as u64)
    );
    assert_eq!(image.name, "shots/small.png");
    let requests = env.server.received();
    assert_eq!(sent_images(&requests[0]), vec![bytes]);
    let content = &requests[0].body["messages"][0]["content"];
    let block = content
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "image")
        .unwrap();
    assert_eq!(block["source"]["type"], "base64");
    assert_eq!(block["source"]["media_type"], "image/png");
    assert_eq!(
        stored_files(&env, &env.session),
        vec![format!("{}.png", image.hash)]
    );
}

#[tokio::test]
async fn a_jpeg_and_a_screenshot_travel_together_as_sent() {
    let mut env = TestEnv::builder()
        .model(vec![anthropic::text("Two pictures.")])
        .start()
        .await;
    let (photo, shot) = (jpeg(640, 480), screenshot());
    // A screenshot compresses as a real one does: not a few kB, and under the stored cap.
    assert!((100_000..3_750_000).contains(&shot.len()), "{}", shot.len());
    let uploads = vec![
        upload("photo.jpg", photo.clone()),
        upload("shot.png", shot.clone()),
    ];
    let events = run_with_images(&mut env, "compare", uploads).await;
    let images = user_images(&events);
    assert_eq!(images[0].media_type, "image/jpeg");
    assert_eq!((images[1].width, images[1].height), (1920, 1080));
    assert_eq!(sent_images(&env.server.received()[0]), vec![photo, shot]);
}

/// An EXIF chunk (little-endian TIFF): Make (13 ASCII bytes at offset 38) a camera serial,
/// Orientation 6 (turn 90° clockwise for display).
const EXIF: &[u8] =
    b"II*\0\x08\0\0\0\x02\0\x0f\x01\x02\0\x0d\0\0\0\x26\0\0\0\x12\x01\x03\0\x01\0\0\0\
    \x06\0\0\0\0\0\0\0SERIAL-12345\0";

/// A 40×30 JPEG (its left half red) with [`EXIF`]: displayed 30×40.
fn jpeg_with_exif() -> Vec<u8> {
    use image::ImageEncoder;
    let photo = image::RgbImage::from_fn(40, 30, |x, _| {
        image::Rgb([if x < 20 { 250 } else { 5 }, 5, 5])
    });
    let mut out = Vec::new();
    let mut encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90);
    encoder.set_exif_metadata(EXIF.to_vec()).unwrap();
    photo.write_with_encoder(encoder).unwrap();
    out
}

#[tokio::test]
async fn a_photo_reaches_the_model_upright_without_its_exif() {
    let mut env = TestEnv::builder()
        .model(vec![anthropic::text("A photo.")])
        .start()
        .await;
    let photo = jpeg_with_exif();
    let has = |bytes: &[u8], needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(has(&photo, b"SERIAL-12345"));
    let events = run_with_images(&mut env, "where?", vec![upload("photo.jpg", photo)]).await;
    let image = &user_images(&events)[0];
    assert_eq!(
        (image.media_type.as_str(), image.width, image.height),
        ("image/jpeg", 30, 40)
    );
    assert_eq!(image.label(), "[image: photo.jpg 30×40]");
    let sent = sent_images(&env.server.received()[0]);
    assert_eq!(sent.len(), 1);
    assert!(!has(&sent[0], b"SERIAL-12345") && !has(&sent[0], b"Exif\0\0"));
    assert_eq!(sha256_hex(&sent[0]), image.hash, "sent as stored");
    let upright = image::load_from_memory(&sent[0]).unwrap().to_rgb8();
    assert_eq!(upright.dimensions(), (30, 40));
    assert!(upright.get_pixel(15, 5)[0] > 200, "red on top");
}

#[tokio::test]
async fn a_text_file_renamed_png_is_refused_and_nothing_reaches_the_model() {
    let env = TestEnv::builder()
        .model(vec![anthropic::text("unused")])
        .start()
        .await;
    let notes = upload("shot.png", b"TODO: take a screenshot\n".to_vec());
    let err = send(
        &env.client,
        &env.session,
        "look",
        vec![notes],
        env.options(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(
            "shot.png is not a PNG, JPEG, GIF or WebP image (it looks like text): attach an \
             image file"
        ),
        "{err}"
    );
    assert!(env.server.received().is_empty());
    assert!(stored_files(&env, &env.session).is_empty());
}

#[tokio::test]
async fn more_than_ten_images_are_refused_with_what_to_do() {
    let env = TestEnv::builder().start().await;
    let many = (0..11)
        .map(|i| upload(&format!("{i}.png"), png(4, 4)))
        .collect();
    let err = send(&env.client, &env.session, "look", many, env.options())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("a message carries at most 10 images"), "{err}");
    assert!(err.contains("send the rest in a follow-up"), "{err}");
}

#[tokio::test]
async fn a_6000_px_png_is_scaled_to_2000_px_on_its_long_side() {
    let mut env = TestEnv::builder()
        .model(vec![anthropic::text("A wide picture.")])
        .start()
        .await;
    let events = run_with_images(&mut env, "look", vec![upload("wide.png", png(6000, 3000))]).await;
    let image = &user_images(&events)[0];
    assert_eq!((image.width, image.height), (2000, 1000));
    let sent = sent_images(&env.server.received()[0]);
    assert_eq!(sent.len(), 1);
    assert_eq!(pixels(&sent[0]), (2000, 1000));
    assert_eq!(sha256_hex(&sent[0]), image.hash);
    assert!(sent[0].len() <= 3_750_000, "{}", sent[0].len());
}

/// Events replayed to a new subscriber of `session` until its `UserMessage`.
async fn replayed_user_message(incoming: &mut UnboundedReceiver<Incoming>) -> Vec<ImageRef> {
    loop {
        if let Event::UserMessage { images, .. } = next_event(incoming).await.event {
            return images;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_survives_a_daemon_restart() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::text("Seen."),
            anthropic::text("Still seen."),
        ])
        .start()
        .await;
    let bytes = screenshot();
    let events = run_with_images(&mut env, "look", vec![upload("shot.png", bytes.clone())]).await;
    let image = user_images(&events).remove(0);
    assert!(env.daemon.terminate());
    env.daemon.restart();
    let mut client = env.daemon.client().await;
    subscribe(&client, &env.session, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    assert_eq!(
        replayed_user_message(&mut incoming).await,
        vec![image.clone()]
    );
    let reply = client
        .request(Request::GetImage {
            session: env.session.clone(),
            hash: image.hash.clone(),
        })
        .await
        .unwrap();
    let Reply::Image(stored) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(sha256_hex(&stored.data), image.hash);
    assert_eq!(stored.data, bytes);
    assert_eq!((stored.image.width, stored.image.height), (1920, 1080));
    let bad = client
        .request(Request::GetImage {
            session: env.session.clone(),
            hash: "../../config.toml".into(),
        })
        .await
        .unwrap_err()
        .to_string();
    assert!(bad.contains("is not an image hash"), "{bad}");
    tests::start_run(&client, &env.session, "and now?", env.options()).await;
    let requests = env.server.wait_for_requests(2).await;
    assert_eq!(sent_images(&requests[1]), vec![bytes]);
}

#[tokio::test]
async fn a_fork_sends_the_image_on_its_next_call() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::text("Seen."),
            anthropic::text("Seen in the fork."),
        ])
        .start()
        .await;
    let bytes = png(300, 200);
    run_with_images(&mut env, "look", vec![upload("a.png", bytes.clone())]).await;
    let reply = env
        .client
        .request(Request::Fork {
            session: env.session.clone(),
            turn: None,
        })
        .await
        .unwrap();
    let Reply::SessionCreated(fork) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(
        stored_files(&env, &fork.id),
        stored_files(&env, &env.session)
    );
    tests::start_run(&env.client, &fork.id, "again", env.options()).await;
    let requests = env.server.wait_for_requests(2).await;
    assert_eq!(sent_images(&requests[1]), vec![bytes]);
}

#[tokio::test]
async fn deleting_the_session_deletes_its_images() {
    let mut env = TestEnv::builder()
        .model(vec![anthropic::text("Seen.")])
        .start()
        .await;
    run_with_images(&mut env, "look", vec![upload("a.png", png(10, 10))]).await;
    assert_eq!(stored_files(&env, &env.session).len(), 1);
    env.client
        .request(Request::DeleteSession {
            session: env.session.clone(),
            force: true,
        })
        .await
        .unwrap();
    let dir = env.daemon.paths().sessions_dir().join(env.session.as_str());
    assert!(!dir.join("images").exists(), "{}", dir.display());
}

#[tokio::test]
async fn read_of_a_png_gives_the_image_to_the_model() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::tool("read", json!({"path": "docs/shot.png"})),
            anthropic::text("It shows a window."),
        ])
        .start()
        .await;
    let bytes = png(120, 80);
    std::fs::create_dir_all(env.project().join("docs")).unwrap();
    std::fs::write(env.project().join("docs/shot.png"), &bytes).unwrap();
    let events = env.run("what does docs/shot.png show?").await;
    let (output, images) = events
        .iter()
        .find_map(|e| match &e.event {
            Event::ToolResult {
                output,
                images,
                is_error: false,
                ..
            } => Some((output.clone(), images.clone())),
            _ => None,
        })
        .expect("a successful tool result");
    let kb = (bytes.len() as u64).div_ceil(1000);
    assert_eq!(
        output,
        format!("[image: shot.png 120×80] ({kb} kB, image/png)")
    );
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].hash, sha256_hex(&bytes));
    let requests = env.server.received();
    assert_eq!(sent_images(&requests[1]), vec![bytes]);
}

#[tokio::test]
async fn a_model_that_reads_text_only_is_refused_before_anything_is_sent() {
    let env = TestEnv::builder()
        .model(vec![anthropic::text("unused")])
        .start()
        .await;
    let options = RunOptions {
        model: Some("qwen2.5-coder-7b".into()),
        ..env.options()
    };
    let err = send(
        &env.client,
        &env.session,
        "look",
        vec![upload("a.png", png(8, 8))],
        options,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("qwen2.5-coder-7b does not take images"),
        "{err}"
    );
    assert!(env.server.received().is_empty());
    assert!(stored_files(&env, &env.session).is_empty());
}

#[tokio::test]
async fn a_profile_without_images_refuses_read_of_an_image() {
    let mut env = TestEnv::builder()
        .config("retry_base_ms = 5\nretry_max_ms = 20\n\n[providers.plain]\nkind = \"anthropic\"\nimages = false\n")
        .model(vec![
            anthropic::tool("read", json!({"path": "shot.png"})),
            anthropic::text("I cannot see it."),
        ])
        .start()
        .await;
    std::fs::write(env.project().join("shot.png"), png(8, 8)).unwrap();
    let options = RunOptions {
        provider: Some("plain".into()),
        ..env.options()
    };
    let err = send(
        &env.client,
        &env.session,
        "look",
        vec![upload("a.png", png(8, 8))],
        options.clone(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("images = false"), "{err}");
    assert!(env.server.received().is_empty());
    let events = env.run_with("what does shot.png show?", options).await;
    let result = tests::tool_results(&events);
    assert!(result[0].1, "an error: {result:?}");
    assert!(
        result[0].2.starts_with("shot.png is an image, and "),
        "{result:?}"
    );
    // Worded for the model: what it can do, not the user's setting or `--model`.
    assert!(
        result[0]
            .2
            .contains("the model of this run takes no images: describe what you need"),
        "{result:?}"
    );
    assert!(!result[0].2.contains("--model"), "{result:?}");
    assert!(sent_images(&env.server.received()[1]).is_empty());
}
