//! Images in each provider's wire format (docs/architecture.md#images): an image sent with a
//! message and one `read` returns reach the recorded request in the exact shape Anthropic
//! Messages, Chat Completions and the Responses API take, with the stored image's bytes.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use protocol::{Delivery, Event, ImageRef, ImageUpload, Reply, Request, StopReason};
use serde_json::{Value, json};
use tests::images::png;
use tests::model_server::wire::Wire;
use tests::{TestEnv, finished, until_finished};

/// The stored bytes of `image` in the session, as the daemon hands them out.
async fn stored(env: &TestEnv, image: &ImageRef) -> Vec<u8> {
    let reply = env
        .client
        .request(Request::GetImage {
            session: env.session.clone(),
            hash: image.hash.clone(),
        })
        .await
        .expect("the stored image");
    let Reply::Image(bytes) = reply else {
        panic!("expected the image, got {reply:?}");
    };
    assert_eq!(image::load_from_memory(&bytes.data).unwrap().width(), 64);
    bytes.data
}

/// `data` as the `data:` URL both of OpenAI's APIs take.
fn data_url(data: &[u8]) -> String {
    format!("data:image/png;base64,{}", STANDARD.encode(data))
}

/// Sends "what is this?" with a 64×48 PNG over `wire`; the model's request and the stored
/// image's bytes.
async fn attached(wire: Wire) -> (Value, Vec<u8>) {
    let mut env = TestEnv::builder()
        .model(vec![wire.text("A gradient.")])
        .start()
        .await;
    let reply = env
        .client
        .request(Request::Send {
            session: env.session.clone(),
            text: "what is this?".into(),
            images: vec![ImageUpload {
                name: "shot.png".into(),
                data: png(64, 48),
            }],
            delivery: Delivery::FollowUp,
            options: wire.options(&env.server),
        })
        .await
        .expect("message sent");
    assert!(
        matches!(reply, Reply::Sent { started: Some(_) }),
        "{reply:?}"
    );
    let events = until_finished(&mut env.incoming).await;
    let image = events
        .iter()
        .find_map(|e| match &e.event {
            Event::UserMessage { images, .. } => images.first().cloned(),
            _ => None,
        })
        .expect("the message names its image");
    let data = stored(&env, &image).await;
    (env.server.received()[0].body.clone(), data)
}

/// A run over `wire` whose model reads `shot.png` (a 64×48 PNG) and then answers: the model's
/// second request, the result's text and the stored image's bytes.
async fn read_back(wire: Wire) -> (Value, String, Vec<u8>) {
    let mut env = TestEnv::builder()
        .model(vec![wire.read("shot.png"), wire.text("A gradient.")])
        .start()
        .await;
    std::fs::write(env.project().join("shot.png"), png(64, 48)).unwrap();
    let events = env
        .run_with("look at shot.png", wire.options(&env.server))
        .await;
    assert!(matches!(
        finished(&events),
        Event::RunFinished {
            stop_reason: StopReason::Completed,
            ..
        }
    ));
    let (output, image) = events
        .iter()
        .find_map(|e| match &e.event {
            Event::ToolResult {
                output,
                images,
                is_error: false,
                ..
            } => Some((output.clone(), images.first().cloned()?)),
            _ => None,
        })
        .expect("the read result carries the image");
    let data = stored(&env, &image).await;
    (env.server.received()[1].body.clone(), output, data)
}

#[tokio::test]
async fn an_attached_image_is_an_anthropic_image_block_before_the_text() {
    let (body, data) = attached(Wire::Anthropic).await;
    let content = &body["messages"][0]["content"];
    assert_eq!(
        content[0],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                            "data": STANDARD.encode(&data)}})
    );
    assert_eq!(content[1]["type"], "text");
    assert_eq!(content[1]["text"], "what is this?");
    assert_eq!(content.as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn an_attached_image_is_a_chat_completions_image_url_part() {
    let (body, data) = attached(Wire::Chat).await;
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": data_url(&data)}},
        ]})
    );
}

#[tokio::test]
async fn an_attached_image_is_a_responses_input_image() {
    let (body, data) = attached(Wire::Responses).await;
    assert_eq!(
        body["input"][0],
        json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "what is this?"},
            {"type": "input_image", "image_url": data_url(&data), "detail": "auto"},
        ]})
    );
}

#[tokio::test]
async fn a_read_image_is_an_anthropic_tool_result_image() {
    let (body, output, data) = read_back(Wire::Anthropic).await;
    let result = &body["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "call_1");
    assert_eq!(
        result["content"],
        json!([
            {"type": "text", "text": output},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": STANDARD.encode(&data)}},
        ])
    );
}

#[tokio::test]
async fn a_read_image_follows_the_chat_completions_tool_message_as_a_user_message() {
    let (body, output, data) = read_back(Wire::Chat).await;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": output})
    );
    assert_eq!(
        messages[4],
        json!({"role": "user", "content": [
            {"type": "text", "text": "The images returned by the tool call read (call_1):"},
            {"type": "image_url", "image_url": {"url": data_url(&data)}},
        ]})
    );
    assert_eq!(messages.len(), 5);
}

#[tokio::test]
async fn a_read_image_is_part_of_the_responses_function_call_output() {
    let (body, output, data) = read_back(Wire::Responses).await;
    assert_eq!(
        body["input"][2],
        json!({"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": output},
            {"type": "input_image", "image_url": data_url(&data), "detail": "auto"},
        ]})
    );
}
