//! Images from the command line (docs/architecture.md#images): `run -i PATH` and `@shot.png`
//! send the file with the message, the model gets an Anthropic image block, the views and
//! `--json` name it without its bytes, and `show --images` exports the session's images.

use std::path::Path;
use std::process::{Output, Stdio};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use tests::Daemon;
use tests::images::{pixels, png, sha256_hex};
use tests::json_run::JsonRun;
use tests::model_server::{ModelServer, anthropic};

/// `agentctl ARGS` in `cwd` against `server`, to its end.
fn agentctl(daemon: &Daemon, server: &ModelServer, cwd: &Path, args: &[&str]) -> Output {
    daemon
        .home
        .agentctl_against(server, cwd, args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The image blocks of the first user message of the model's first request.
fn image_blocks(server: &ModelServer) -> Vec<Value> {
    let body = &server.received()[0].body;
    body["messages"][0]["content"]
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

/// The size in pixels of the PNG an Anthropic image block carries, checked for its shape.
fn png_of(block: &Value) -> (u32, u32) {
    assert_eq!(block["source"]["type"], "base64", "{block}");
    assert_eq!(block["source"]["media_type"], "image/png", "{block}");
    let data = STANDARD
        .decode(block["source"]["data"].as_str().unwrap())
        .unwrap();
    pixels(&data)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_an_image_flag_sends_it_to_the_model_and_the_view_names_it() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("shot.png"), png(64, 48)).unwrap();
    let server = ModelServer::start(vec![anthropic::text("A gradient.")]).await;
    let out = agentctl(
        &daemon,
        &server,
        project.path(),
        &["run", "-i", "shot.png", "what is in this picture?"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let blocks = image_blocks(&server);
    assert_eq!(blocks.len(), 1, "{:?}", server.received()[0].body);
    assert_eq!(png_of(&blocks[0]), (64, 48));
    let text = server.received()[0].body["messages"][0]["content"].to_string();
    assert!(text.contains("what is in this picture?"), "{text}");
    // The view names the image under the prompt, with its size in pixels.
    assert!(stderr.contains("[image: shot.png 64×48]"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "A gradient.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_mentioned_with_at_goes_along_and_the_text_keeps_the_word() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("Shot.PNG"), png(30, 20)).unwrap();
    let server = ModelServer::start(vec![anthropic::text("Seen.")]).await;
    let out = agentctl(
        &daemon,
        &server,
        project.path(),
        &["run", "look at @Shot.PNG, please"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("attached @Shot.PNG (image,"), "{stderr}");
    let blocks = image_blocks(&server);
    assert_eq!(blocks.len(), 1);
    assert_eq!(png_of(&blocks[0]), (30, 20));
    let text = server.received()[0].body["messages"][0]["content"].to_string();
    assert!(text.contains("look at @Shot.PNG, please"), "{text}");
    assert!(!text.contains("<file path"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_file_named_png_is_refused_and_the_model_gets_no_request() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("fake.png"), "not an image at all\n").unwrap();
    let server = ModelServer::start(vec![anthropic::text("never")]).await;
    let out = agentctl(
        &daemon,
        &server,
        project.path(),
        &["run", "-i", "fake.png", "what is this?"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("fake.png"), "{stderr}");
    assert!(server.received().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_image_or_too_many_are_usage_errors_naming_the_file() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![anthropic::text("never")]).await;
    let out = agentctl(
        &daemon,
        &server,
        project.path(),
        &["run", "-i", "nowhere.png", "what is this?"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nowhere.png"), "{stderr}");

    std::fs::write(project.path().join("a.png"), png(4, 4)).unwrap();
    let mut args = vec!["run"];
    for _ in 0..=protocol::MAX_MESSAGE_IMAGES {
        args.extend(["-i", "a.png"]);
    }
    args.push("so many");
    let out = agentctl(&daemon, &server, project.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("at most 10"), "{stderr}");
    assert!(server.received().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_carries_the_image_ref_without_its_bytes_and_show_exports_it() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    let shot = png(40, 30);
    std::fs::write(project.path().join("shot.png"), &shot).unwrap();
    let server = ModelServer::start(vec![anthropic::text("ok")]).await;
    let mut run = JsonRun::start(&daemon, &server, project.path(), "see @shot.png");
    let user = run.until("user_message").await;
    let rest = run.rest().await;
    assert!(run.child.wait().await.unwrap().success());
    let images = user["images"].as_array().expect("the message's images");
    assert_eq!(images.len(), 1, "{user}");
    let image = &images[0];
    assert_eq!(image["media_type"], "image/png");
    assert_eq!(
        (image["width"].as_u64(), image["height"].as_u64()),
        (Some(40), Some(30))
    );
    assert_eq!(image["path"], "shot.png");
    let hash = image["hash"].as_str().unwrap().to_string();
    assert_eq!(hash.len(), 64);
    // No line carries the bytes.
    let encoded = STANDARD.encode(&shot);
    for line in std::iter::once(&user).chain(&rest) {
        let line = line.to_string();
        assert!(!line.contains(&encoded[..64]), "{line}");
    }
    let session = user["session"].as_str().unwrap().to_string();

    let export = tempfile::tempdir().unwrap();
    let dir = export.path().join("images");
    let dir_arg = dir.to_str().unwrap();
    let out = agentctl(
        &daemon,
        &server,
        project.path(),
        &["show", &session, "--images", dir_arg],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.join(format!("{hash}.png"));
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.contains(&*file.to_string_lossy()), "{stdout}");
    assert!(stdout.contains("[image: shot.png 40×30]"), "{stdout}");
    let written = std::fs::read(&file).unwrap();
    assert_eq!(sha256_hex(&written), hash);

    // Again: the same file is left as it is; a different one is not overwritten.
    let again = agentctl(
        &daemon,
        &server,
        project.path(),
        &["show", &session, "--images", dir_arg],
    );
    assert!(again.status.success());
    std::fs::write(&file, b"something else").unwrap();
    let refused = agentctl(
        &daemon,
        &server,
        project.path(),
        &["show", &session, "--images", dir_arg],
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not overwritten"), "{stderr}");
    assert_eq!(std::fs::read(&file).unwrap(), b"something else");
}
