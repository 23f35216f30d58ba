//! Images from the command line (docs/architecture.md#images): `run -i PATH` and `@shot.png`
//! send the file with the message, the model gets it in its provider's form (Anthropic image
//! blocks, Chat Completions `image_url` and Responses `input_image` data URLs), the views and
//! `--json` name it without its bytes, and `show --images` exports the session's images.

use std::path::Path;
use std::process::{Output, Stdio};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use tests::Daemon;
use tests::images::{png, png_pixels, sha256_hex};
use tests::json_run::JsonRun;
use tests::model_server::wire::Wire;
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

/// `agentctl run ARGS` over `wire` in `cwd`, its model answering "Seen.": the output, and the
/// body of the model's request.
async fn run_over(wire: Wire, daemon: &Daemon, cwd: &Path, args: &[&str]) -> (Output, Value) {
    let server = ModelServer::start(vec![wire.text("Seen.")]).await;
    let mut all = vec!["run"];
    all.extend(wire.flags());
    all.extend(args);
    let mut command = daemon.home.agentctl_against(&server, cwd, &all);
    command.envs(wire.env(&server)).stdin(Stdio::null());
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{wire:?}: {stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Seen.");
    let body = server.received()[0].body.clone();
    (out, body)
}

/// The PNG images of the first user message of `body` over `wire`, checked to be exactly
/// `text` with them in the format's shape; their sizes in pixels.
fn sent_pngs(wire: Wire, body: &Value, text: &str) -> Vec<(u32, u32)> {
    let message = wire.first_user_message(body);
    let images = wire.images_in(message);
    assert_eq!(*message, wire.user_message(text, &images), "{wire:?}");
    images.iter().map(|data| png_pixels(data)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_an_image_flag_sends_it_in_each_wire_format_and_the_view_names_it() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("shot.png"), png(64, 48)).unwrap();
    for wire in Wire::ALL {
        let (out, body) = run_over(
            wire,
            &daemon,
            project.path(),
            &["-i", "shot.png", "what is in this picture?"],
        )
        .await;
        assert_eq!(
            sent_pngs(wire, &body, "what is in this picture?"),
            [(64, 48)]
        );
        // The view names the image under the prompt, with its size in pixels.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("[image: shot.png 64×48]"), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_mentioned_with_at_goes_in_each_wire_format_and_the_text_keeps_the_word() {
    let daemon = Daemon::start();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("My Shot.PNG"), png(30, 20)).unwrap();
    for wire in Wire::ALL {
        let text = r#"look at @"My Shot.PNG", please"#;
        let (out, body) = run_over(wire, &daemon, project.path(), &[text]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("attached @My Shot.PNG (image,"), "{stderr}");
        assert_eq!(sent_pngs(wire, &body, text), [(30, 20)]);
    }
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

    // A FIFO is refused before it is opened (opening it would wait for a writer).
    let fifo = project.path().join("fifo.png");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let out = agentctl(
        &daemon,
        &server,
        project.path(),
        &["run", "-i", "fifo.png", "hm"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("fifo.png is not a file"), "{stderr}");

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

    // A link planted where the file would go, even one that leads nowhere yet, is not written
    // through; a new file is readable by its owner only.
    let planted = export.path().join("planted");
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&planted, &file).unwrap();
    let refused = agentctl(
        &daemon,
        &server,
        project.path(),
        &["show", &session, "--images", dir_arg],
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not a plain file"), "{stderr}");
    assert!(!planted.exists());
    std::fs::remove_file(&file).unwrap();
    let written = agentctl(
        &daemon,
        &server,
        project.path(),
        &["show", &session, "--images", dir_arg],
    );
    assert!(written.status.success());
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
}
