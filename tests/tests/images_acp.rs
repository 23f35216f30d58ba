//! Images from editors (docs/architecture.md#images): `initialize` advertises image prompts, a
//! prompt's image block reaches the model, and `session/load` replays it as an image block.

use agent_client_protocol::v1::schema::{
    ContentBlock, ImageContent, LoadSessionRequest, PromptRequest, SessionUpdate, StopReason,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use tests::Daemon;
use tests::acp::with_editor;
use tests::images::{pixels, png};
use tests::model_server::{ModelServer, anthropic};

/// The image blocks of the first user message of the model's first request.
fn image_blocks(model: &ModelServer) -> Vec<Value> {
    model.received()[0].body["messages"][0]["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "image")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn an_image_block_reaches_the_model_and_a_load_replays_it() {
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![anthropic::text("A small picture.")]).await;
    let daemon = Daemon::start();
    let cwd = project.path().to_path_buf();
    let shot = STANDARD.encode(png(24, 16));
    let prompt = vec![
        ContentBlock::from("what is this?"),
        ContentBlock::Image(
            ImageContent::new(shot.clone(), "image/png")
                .uri("file:///home/me/shot.png".to_string()),
        ),
    ];
    let (session, _child) = with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, _got, init| {
            assert!(init.agent_capabilities.prompt_capabilities.image);
            let session = tests::acp::new_session(&cx, &cwd).await;
            let answer = cx
                .send_request(PromptRequest::new(session.clone(), prompt))
                .block_task()
                .await
                .unwrap();
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
            session
        },
    )
    .await;
    let blocks = image_blocks(&model);
    assert_eq!(blocks.len(), 1, "{}", model.received()[0].body);
    assert_eq!(blocks[0]["source"]["type"], "base64");
    assert_eq!(blocks[0]["source"]["media_type"], "image/png");
    let sent = STANDARD
        .decode(blocks[0]["source"]["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(pixels(&sent), (24, 16));
    let text = model.received()[0].body["messages"][0]["content"].to_string();
    assert!(text.contains("what is this?"), "{text}");

    // Another editor opens the session: the history comes with the image as an image block.
    let cwd = project.path().to_path_buf();
    let (replayed, _child) = with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, _| {
            cx.send_request(LoadSessionRequest::new(session, cwd))
                .block_task()
                .await
                .unwrap();
            got.drain()
        },
    )
    .await;
    let image = replayed
        .iter()
        .find_map(|u| match u {
            SessionUpdate::UserMessageChunk(chunk) => match &chunk.content {
                ContentBlock::Image(image) => Some(image.clone()),
                _ => None,
            },
            _ => None,
        })
        .expect("the replay has the image");
    assert_eq!(image.mime_type, "image/png");
    assert_eq!(
        image.uri.as_deref(),
        Some("file:///home/me/shot.png"),
        "{replayed:?}"
    );
    assert_eq!(pixels(&STANDARD.decode(&image.data).unwrap()), (24, 16));
}

#[tokio::test]
async fn an_image_block_past_the_caps_is_refused_with_an_error_the_editor_shows() {
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![anthropic::text("never")]).await;
    let daemon = Daemon::start();
    let cwd = project.path().to_path_buf();
    let one = ContentBlock::Image(ImageContent::new(STANDARD.encode(png(2, 2)), "image/png"));
    let mut prompt = vec![ContentBlock::from("so many")];
    prompt.extend(std::iter::repeat_n(one, protocol::MAX_MESSAGE_IMAGES + 1));
    let (message, _child) = with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, _got, _| {
            let session = tests::acp::new_session(&cx, &cwd).await;
            let refused = cx
                .send_request(PromptRequest::new(session, prompt))
                .block_task()
                .await
                .unwrap_err();
            serde_json::to_string(&refused).unwrap()
        },
    )
    .await;
    assert!(message.contains("at most 10"), "{message}");
    assert!(model.received().is_empty());
}
