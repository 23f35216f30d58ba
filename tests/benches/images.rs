//! Image figures (docs/architecture.md#images): a session holding 50 screenshots (1920×1080
//! PNGs, five to a message) through the real daemon. The daemon's resident memory before the
//! images, idle once they are stored and sent, during a model call that carries all 50, and
//! while a second client replays the session and fetches every image's bytes (as an editor's
//! `session/load` does).
//!
//! Run with `cargo build --release && cargo bench -p tests --bench images`.

use std::time::{Duration, Instant};

use image::{DynamicImage, ImageFormat, Rgb};
use protocol::{Event, ImageUpload, Reply, Request};
use tests::model_server::anthropic;
use tests::{TestEnv, peak_rss, rss};

/// Screenshots in all.
const IMAGES: usize = 50;
/// Screenshots per message.
const PER_MESSAGE: usize = 5;

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// Screenshot `n`: the same picture with a mark of its own, so each is stored apart.
fn screenshot(base: &DynamicImage, n: usize) -> Vec<u8> {
    let mut image = base.to_rgb8();
    for i in 0..=n as u32 {
        image.put_pixel(400 + i * 3, 500, Rgb([255, 0, 0]));
    }
    let mut out = std::io::Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(image)
        .write_to(&mut out, ImageFormat::Png)
        .expect("encode");
    out.into_inner()
}

/// Samples the daemon's memory until `done` resolves; the largest sample.
async fn max_rss_while<T>(pid: u32, done: impl Future<Output = T>) -> (T, u64) {
    let mut done = std::pin::pin!(done);
    let mut max = rss(pid);
    loop {
        tokio::select! {
            value = &mut done => return (value, max.max(rss(pid))),
            () = tokio::time::sleep(Duration::from_millis(5)) => max = max.max(rss(pid)),
        }
    }
}

#[tokio::main]
async fn main() {
    let messages = IMAGES / PER_MESSAGE;
    let replies = (0..=messages + 1)
        .map(|i| anthropic::text(&format!("Seen {i}.")))
        .collect();
    let mut env = TestEnv::builder().model(replies).start().await;
    env.run("warm up").await;
    let pid = env.daemon.pid();
    let before = rss(pid);

    let base = image::load_from_memory(&tests::images::screenshot()).expect("decode");
    let shots: Vec<Vec<u8>> = (0..IMAGES).map(|n| screenshot(&base, n)).collect();
    let sent: usize = shots.iter().map(Vec::len).sum();
    let started = Instant::now();
    let mut during_runs = 0;
    for (m, chunk) in shots.chunks(PER_MESSAGE).enumerate() {
        let images = chunk
            .iter()
            .enumerate()
            .map(|(i, data)| ImageUpload {
                name: format!("shot-{m}-{i}.png"),
                data: data.clone(),
            })
            .collect();
        let request = Request::Send {
            session: env.session.clone(),
            text: format!("Here are screenshots {m}."),
            images,
            delivery: protocol::Delivery::FollowUp,
            options: env.options(),
        };
        let client = &env.client;
        let incoming = &mut env.incoming;
        let run = async move {
            client.request(request).await.expect("message sent");
            tests::until_finished(incoming).await
        };
        let (events, max) = max_rss_while(pid, run).await;
        during_runs = during_runs.max(max);
        let Some(Event::RunFinished { error, .. }) = events.last().map(|e| &e.event) else {
            panic!("the run did not finish")
        };
        assert_eq!(error, &None);
    }
    let stored_in = started.elapsed();
    let requests = env.server.received();
    let last_body = requests
        .last()
        .map(|r| r.body.to_string().len())
        .unwrap_or(0);
    let idle = rss(pid);

    // A second client replays the whole session and fetches each image.
    let mut viewer = env.daemon.client().await;
    let _ = viewer.take_incoming();
    let session = env.session.clone();
    let replay = async {
        let (_, history) = viewer.history(&session).await.expect("history");
        let mut fetched = 0usize;
        for event in &history {
            if let Event::UserMessage { images, .. } = &event.event {
                for image in images {
                    let request = Request::GetImage {
                        session: session.clone(),
                        hash: image.hash.clone(),
                    };
                    match viewer.request(request).await.expect("image") {
                        Reply::Image(bytes) => fetched += bytes.data.len(),
                        other => panic!("GetImage answered {other:?}"),
                    }
                }
            }
        }
        (history.len(), fetched)
    };
    let replay_start = Instant::now();
    let ((events, fetched), during_replay) = max_rss_while(pid, replay).await;
    let replay_time = replay_start.elapsed();
    let after = rss(pid);

    println!(
        "{IMAGES} screenshots (1920×1080 PNG, {:.1} MiB as sent), {messages} messages: stored and sent in {:.2} s; the last request's body {:.1} MiB",
        mib(sent as u64),
        stored_in.as_secs_f64(),
        mib(last_body as u64)
    );
    println!(
        "daemon RSS: before {:.1} MiB, max during the runs {:.1} MiB, idle after {:.1} MiB",
        mib(before),
        mib(during_runs),
        mib(idle)
    );
    println!(
        "replay of {events} events and {:.1} MiB of images in {:.0} ms: daemon RSS max {:.1} MiB, after {:.1} MiB, peak of the process {:.1} MiB",
        mib(fetched as u64),
        replay_time.as_secs_f64() * 1000.0,
        mib(during_replay),
        mib(after),
        mib(peak_rss(pid))
    );
}
