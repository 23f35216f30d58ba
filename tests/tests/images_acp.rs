//! Images from editors (docs/architecture.md#images): `initialize` advertises image prompts, a
//! prompt's image block reaches the model (in Anthropic's form and in the Responses API's),
//! and `session/load` replays it as an image block.

use agent_client_protocol::v1::schema::{
    ContentBlock, ImageContent, LoadSessionRequest, PromptRequest, SessionUpdate, StopReason,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use tests::acp::with_editor;
use tests::images::{pixels, png, png_pixels};
use tests::model_server::wire::Wire;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home};

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
    let body = &model.received()[0].body;
    let message = Wire::Anthropic.first_user_message(body);
    let images = Wire::Anthropic.images_in(message);
    assert_eq!(
        *message,
        Wire::Anthropic.user_message("what is this?", &images)
    );
    assert_eq!(png_pixels(&images[0]), (24, 16));

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
async fn an_image_block_reaches_a_responses_model_as_an_input_image() {
    let project = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![Wire::Responses.text("A small picture.")]).await;
    // The editor's bridge hands on only its own environment: the daemon's default provider and
    // address choose the Responses API.
    let env = Wire::Responses.env(&model);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let daemon = Daemon::start_with(
        Home::with_config("provider = \"responses\"\nmodel = \"gpt-5\"\n"),
        &env,
    );
    let cwd = project.path().to_path_buf();
    let prompt = vec![
        ContentBlock::from("what is this?"),
        ContentBlock::Image(ImageContent::new(STANDARD.encode(png(24, 16)), "image/png")),
    ];
    let (stop, _child) = with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, _got, _| {
            let session = tests::acp::new_session(&cx, &cwd).await;
            cx.send_request(PromptRequest::new(session, prompt))
                .block_task()
                .await
                .unwrap()
                .stop_reason
        },
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    let request = &model.received()[0];
    assert_eq!(request.path, "/v1/responses");
    let message = Wire::Responses.first_user_message(&request.body);
    let images = Wire::Responses.images_in(message);
    assert_eq!(
        *message,
        Wire::Responses.user_message("what is this?", &images)
    );
    assert_eq!(png_pixels(&images[0]), (24, 16));
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
