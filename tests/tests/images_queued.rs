//! Images in queued messages (docs/architecture.md#images): `agentctl steer` and `agentctl
//! queue` with `@shot.png` while a run is going queue the image with the text; a steer's image
//! reaches the model's next request, and a queued follow-up's image survives a daemon restart
//! and reaches the request that delivers it.

use agentctl::client::Incoming;
use protocol::{Event, ImageRef, ResumeReason, SessionEvent, StopReason};
use serde_json::{Value, json};
use tests::images::{png, png_pixels};
use tests::model_server::wire::Wire;
use tests::model_server::{Gate, anthropic};
use tests::restart::{after_restart, resumed};
use tests::{TestEnv, WAIT, next_event, until_finished};
use tokio::sync::mpsc::UnboundedReceiver;

/// `agentctl COMMAND ID TEXT` in the test's project, to its end; it must succeed.
async fn agentctl(env: &TestEnv, command: &str, text: &str) {
    let run = env
        .daemon
        .home
        .agentctl_with(&env.server, env.project(), &[command, &env.session.0, text])
        .output();
    let out = tokio::time::timeout(WAIT, run)
        .await
        .expect("agentctl finishes")
        .expect("agentctl runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("attached @shot.png (image,"), "{stderr}");
}

/// The images of the steers and of the follow-ups of the next queue change that holds one.
async fn queued_images(
    incoming: &mut UnboundedReceiver<Incoming>,
) -> (Vec<Vec<ImageRef>>, Vec<Vec<ImageRef>>) {
    loop {
        if let Event::QueueChanged {
            steer_images,
            follow_up_images,
            ..
        } = next_event(incoming).await.event
            && steer_images.len() + follow_up_images.len() > 0
        {
            return (steer_images, follow_up_images);
        }
    }
}

/// The images of the user message of `events` whose text is `text`.
fn message_images(events: &[SessionEvent], text: &str) -> Vec<ImageRef> {
    events
        .iter()
        .find_map(|e| match &e.event {
            Event::UserMessage {
                text: said, images, ..
            } if said == text => Some(images.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no user message {text:?} in {events:?}"))
}

/// The last message of the request `body` (Anthropic's form).
fn last_message(body: &Value) -> Value {
    body["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_steer_with_an_image_reaches_the_next_request() {
    let gate = Gate::new();
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::reply()
                .tool_with_id("call_1", "glob", json!({"pattern": "*.txt"}))
                .build()
                .hold_after(2, &gate),
            anthropic::text("I see the picture."),
        ])
        .start()
        .await;
    std::fs::write(env.project().join("shot.png"), png(32, 24)).unwrap();
    env.start_run("look around").await;
    env.server.wait_for_requests(1).await;

    let steer = "and look at @shot.png";
    agentctl(&env, "steer", steer).await;
    let (steers, follow_ups) = queued_images(&mut env.incoming).await;
    assert!(follow_ups.is_empty(), "{follow_ups:?}");
    assert_eq!(steers.len(), 1);
    assert_eq!((steers[0][0].width, steers[0][0].height), (32, 24));
    gate.release();
    let events = until_finished(&mut env.incoming).await;
    assert_eq!(message_images(&events, steer), steers[0]);

    // The next request: the tool's result, then the steer with its image.
    let second = &env.server.wait_for_requests(2).await[1].body;
    let last = last_message(second);
    let images = Wire::Anthropic.images_in(&last);
    assert_eq!(images.len(), 1, "{last}");
    assert_eq!(png_pixels(&images[0]), (32, 24));
    let content = last["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "tool_result", "{last}");
    assert_eq!(content[0]["tool_use_id"], "call_1");
    let steered = json!({"role": "user", "content": content[1..]});
    assert_eq!(steered, Wire::Anthropic.user_message(steer, &images));
}

#[tokio::test]
async fn a_queued_follow_up_with_an_image_survives_a_restart_and_reaches_its_request() {
    let gate = Gate::new();
    let mut env = TestEnv::builder()
        .model(vec![
            anthropic::text("Working on it, slowly.").hold_after(2, &gate),
            anthropic::text("Done with the first."),
            anthropic::text("I see the picture."),
        ])
        .provider_in_daemon()
        .start()
        .await;
    std::fs::write(env.project().join("shot.png"), png(40, 30)).unwrap();
    env.start_run("first this").await;
    env.server.wait_for_requests(1).await;

    let follow_up = "then describe @shot.png";
    agentctl(&env, "queue", follow_up).await;
    let (steers, follow_ups) = queued_images(&mut env.incoming).await;
    assert!(steers.is_empty(), "{steers:?}");
    assert_eq!(follow_ups.len(), 1);
    let queued = follow_ups[0].clone();
    assert_eq!((queued[0].width, queued[0].height), (40, 30));
    // The picture is gone from the project: what is delivered comes from the session's store.
    std::fs::remove_file(env.project().join("shot.png")).unwrap();

    // The daemon restarts while the model's reply is held.
    assert!(env.daemon.terminate(), "the daemon exits cleanly");
    gate.release();
    env.daemon.restart();
    let events = after_restart(&env.daemon, &env.session).await;
    assert_eq!(resumed(&events), [ResumeReason::Restart]);
    let (stop, error) = tests::stop_and_error(&events);
    assert_eq!(stop, StopReason::Completed, "{error:?}");
    assert_eq!(message_images(&events, follow_up), queued);

    let third = &env.server.wait_for_requests(3).await[2].body;
    let last = last_message(third);
    let images = Wire::Anthropic.images_in(&last);
    assert_eq!(last, Wire::Anthropic.user_message(follow_up, &images));
    assert_eq!(png_pixels(&images[0]), (40, 30));
}
