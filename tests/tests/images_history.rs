//! A session's images over its history (docs/architecture.md#images): one model call sends the
//! newest images within what every provider takes, older ones as their labels; a run whose
//! model takes no images sends every image as its label and says so.

use protocol::{Delivery, Event, ImageUpload, Reply, Request, SessionEvent};
use serde_json::Value;
use tests::images::{png, upload};
use tests::model_server::anthropic;
use tests::{TestEnv, until_finished};

/// Sends `text` with `images` in the test's session and returns the run's events.
async fn send(env: &mut TestEnv, text: &str, images: Vec<ImageUpload>) -> Vec<SessionEvent> {
    let request = Request::Send {
        session: env.session.clone(),
        text: text.to_string(),
        images,
        delivery: Delivery::FollowUp,
        options: env.options(),
    };
    let reply = env.client.request(request).await;
    assert!(matches!(reply, Ok(Reply::Sent { .. })), "{reply:?}");
    until_finished(&mut env.incoming).await
}

/// The content blocks of every user message of an Anthropic request, in order.
fn user_blocks(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// How many blocks of `blocks` are images, and how many texts are image labels.
fn images_and_labels(blocks: &[Value]) -> (usize, usize) {
    let images = blocks.iter().filter(|b| b["type"] == "image").count();
    let labels = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter(|b| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("[image: "))
        })
        .count();
    (images, labels)
}

#[tokio::test]
async fn a_call_sends_the_newest_twenty_images_and_labels_the_older_ones() {
    let mut env = TestEnv::builder()
        .model(
            (0..3)
                .map(|i| anthropic::text(&format!("Seen {i}.")))
                .collect(),
        )
        .start()
        .await;
    for message in 0..3u32 {
        let images = (0..10u32)
            .map(|i| {
                upload(
                    &format!("shot-{message}-{i}.png"),
                    png(8 + message * 10 + i, 8),
                )
            })
            .collect();
        send(&mut env, &format!("batch {message}"), images).await;
    }
    let requests = env.server.received();
    let (images, labels) = images_and_labels(&user_blocks(&requests[2].body));
    assert_eq!((images, labels), (20, 10));
    // The labels are the oldest: the first message's.
    let first = user_blocks(&requests[2].body);
    assert_eq!(first[0]["type"], "text");
    assert!(first[0]["text"].as_str().unwrap().contains("shot-0-0.png"));
}

#[tokio::test]
async fn a_model_that_takes_no_images_gets_labels_and_the_user_is_told() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::text("A button."),
            anthropic::text("Noted."),
        ])
        .start()
        .await;
    send(&mut env, "look", vec![upload("shot.png", png(40, 30))]).await;
    let set = Request::SetModel {
        session: env.session.clone(),
        model: "qwen2.5-coder-7b-instruct".into(),
    };
    env.client.request(set).await.expect("model set");
    let events = send(&mut env, "and now?", Vec::new()).await;
    let notice = events.iter().find_map(|e| match &e.event {
        Event::Notice { text } => Some(text.clone()),
        _ => None,
    });
    let notice = notice.expect("a notice that the images go as labels");
    assert!(notice.contains("does not take images"), "{notice}");
    let requests = env.server.received();
    assert_eq!(requests[1].body["model"], "qwen2.5-coder-7b-instruct");
    let (images, labels) = images_and_labels(&user_blocks(&requests[1].body));
    assert_eq!((images, labels), (0, 1));
}

#[tokio::test]
async fn an_image_the_provider_refuses_goes_as_its_label_and_the_run_goes_on() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::error(
                400,
                "invalid_request_error",
                "messages.0.content.0.image.source.base64: Could not process image",
            ),
            anthropic::text("I cannot see it, but go on."),
        ])
        .start()
        .await;
    let events = send(&mut env, "look", vec![upload("shot.png", png(40, 30))]).await;
    let Some(Event::RunFinished { error, .. }) = events.last().map(|e| &e.event) else {
        panic!("no end")
    };
    assert_eq!(error, &None);
    assert!(events.iter().any(|e| matches!(
        &e.event,
        Event::Notice { text } if text.contains("refused an image")
    )));
    let requests = env.server.received();
    assert_eq!(requests.len(), 2);
    assert_eq!(images_and_labels(&user_blocks(&requests[0].body)), (1, 0));
    assert_eq!(images_and_labels(&user_blocks(&requests[1].body)), (0, 1));
}

#[tokio::test]
async fn an_image_sent_again_goes_once_per_request_and_its_repeats_as_labels() {
    let mut env = TestEnv::builder()
        .model(
            (0..3)
                .map(|i| anthropic::text(&format!("Seen {i}.")))
                .collect(),
        )
        .start()
        .await;
    let shot = png(60, 40);
    for message in 0..3 {
        let images = vec![upload("shot.png", shot.clone())];
        send(&mut env, &format!("look again {message}"), images).await;
    }
    let requests = env.server.received();
    let blocks = user_blocks(&requests[2].body);
    assert_eq!(images_and_labels(&blocks), (1, 2));
    let repeats = blocks
        .iter()
        .filter(|b| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.contains("the same image as above"))
        })
        .count();
    assert_eq!(repeats, 2);
    // The first mention carries it.
    assert_eq!(blocks[0]["type"], "image");
}

#[tokio::test]
async fn a_request_too_large_for_its_images_goes_again_with_labels() {
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::error(413, "request_too_large", "Request exceeds the maximum size"),
            anthropic::text("Fine."),
        ])
        .start()
        .await;
    let events = send(&mut env, "look", vec![upload("shot.png", png(40, 30))]).await;
    let Some(Event::RunFinished { error, .. }) = events.last().map(|e| &e.event) else {
        panic!("no end")
    };
    assert_eq!(error, &None);
    let requests = env.server.received();
    assert_eq!(images_and_labels(&user_blocks(&requests[1].body)), (0, 1));
}
