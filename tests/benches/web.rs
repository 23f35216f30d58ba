//! `fetch` of a 1 MB HTML page through the real daemon, from a local server: the time from the
//! call's announcement to its result as a client sees it (and as the daemon timed the tool),
//! a cached fetch, and the peak memory the fetches add to the daemon (`VmHWM`).
//!
//! Run with `cargo build --release && cargo bench -p tests --bench web`.

use std::time::{Duration, Instant};

use protocol::Event;
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::web_server::{Reply, WebServer};
use tests::{Daemon, Home, peak_rss, percentile, rss, run_options, session_in, start_run};

/// Fetches of the page, each a fresh download (a query the cache has not seen).
const FETCHES: usize = 20;

/// A documentation page of about `bytes`: sections with headings, paragraphs with links and
/// inline code, lists, code blocks and a table, in the usual chrome of scripts and styles.
fn page(bytes: usize) -> String {
    let mut html = String::from(
        "<!doctype html><html><head><title>Reference</title><style>body{font:14px sans-serif}</style>\
         <script>window.analytics = function () { return 1; };</script></head><body><nav><ul>\
         <li><a href=\"/\">Home</a></li><li><a href=\"/docs\">Docs</a></li></ul></nav><main>",
    );
    let mut n = 0;
    while html.len() < bytes {
        n += 1;
        html.push_str(&format!(
            "<section id=\"s{n}\"><h2>Section {n}: <code>Client::fetch_{n}</code></h2>\
             <p>The <a href=\"/docs/item{n}\">item {n}</a> takes a <code>Request</code> and returns a \
             <em>future</em> that resolves once the <strong>whole body</strong> was read; see \
             <a href=\"https://example.org/spec#{n}\">the specification</a> for the details of \
             redirects, timeouts and caching.</p>\
             <ul><li>first point about {n}</li><li>second point, with <code>flag_{n}</code></li>\
             <li>third point</li></ul>\
             <pre><code>let answer = client.fetch_{n}(url).await?;\nprintln!(\"{{answer}}\");</code></pre>\
             <table><tr><th>option</th><th>default</th></tr><tr><td>timeout</td><td>30 s</td></tr></table>\
             <script>track({n});</script></section>"
        ));
    }
    html.push_str("</main></body></html>");
    html
}

/// The call-to-result times (as the client sees them, and as the daemon timed the tool) of the
/// fetches the model makes in one run.
async fn fetch_times(daemon: &Daemon, urls: &[String]) -> Vec<(Duration, Duration)> {
    let project = tempfile::tempdir().unwrap();
    let mut script: Vec<_> = urls
        .iter()
        .map(|url| anthropic::tool("fetch", json!({ "url": url })))
        .collect();
    script.push(anthropic::text("done"));
    let server = ModelServer::start(script).await;
    let (client, session, mut incoming) = session_in(daemon, project.path()).await;
    start_run(&client, &session, "read", run_options(&server)).await;
    let mut times = Vec::new();
    let mut called = None;
    loop {
        match tests::next_event(&mut incoming).await.event {
            Event::ToolCall(_) => called = Some(Instant::now()),
            Event::ToolResult {
                is_error,
                output,
                duration_ms,
                ..
            } => {
                assert!(!is_error, "{output}");
                if let Some(at) = called.take() {
                    times.push((at.elapsed(), Duration::from_millis(duration_ms)));
                }
            }
            Event::RunFinished { .. } => break,
            _ => {}
        }
    }
    times
}

#[tokio::main]
async fn main() {
    let html = page(1 << 20);
    let web = WebServer::start().await;
    web.route("/small", Reply::html("<p>warm up</p>"));
    web.route("/page", Reply::html(&html));
    let daemon = Daemon::start_in(Home::with_config(
        "retry_base_ms = 5\nretry_max_ms = 20\n[permissions]\nallow = [\"fetch:127.0.0.1\"]\n",
    ));
    // A first run and a small fetch: the session machinery and the HTTP client are set up.
    fetch_times(&daemon, &[web.url("/small")]).await;
    let pid = daemon.pid();
    let (hwm_before, rss_before) = (peak_rss(pid), rss(pid));
    let urls: Vec<String> = (0..FETCHES)
        .map(|i| web.url(&format!("/page?i={i}")))
        .collect();
    let times = fetch_times(&daemon, &urls).await;
    let (hwm_after, rss_after) = (peak_rss(pid), rss(pid));
    let cached = fetch_times(&daemon, &urls[..1]).await;
    let mut seen: Vec<Duration> = times.iter().map(|t| t.0).collect();
    let mut tool: Vec<Duration> = times.iter().map(|t| t.1).collect();
    seen.sort();
    tool.sort();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "page: {} bytes of HTML, {} fetches (each a fresh download)",
        html.len(),
        times.len()
    );
    println!(
        "call to result (client): p50 {:?}, p90 {:?}, max {:?}",
        percentile(&seen, 0.5),
        percentile(&seen, 0.9),
        seen[seen.len() - 1]
    );
    println!(
        "the tool itself (daemon): p50 {:?}, p90 {:?}",
        percentile(&tool, 0.5),
        percentile(&tool, 0.9)
    );
    println!("cached fetch, call to result: {:?}", cached[0].0);
    println!(
        "daemon peak RSS (VmHWM): {:.1} MiB before, {:.1} MiB after: +{:.1} MiB; RSS now {:.1} MiB (was {:.1} MiB)",
        mib(hwm_before),
        mib(hwm_after),
        mib(hwm_after.saturating_sub(hwm_before)),
        mib(rss_after),
        mib(rss_before)
    );
}
