//! `fetch` through the real daemon against real local web servers
//! (docs/architecture.md#web-access): pages as markdown, redirects checked hop by hop, caps,
//! the timeout, the address guard with and without a rule naming the host, the shared cache,
//! and the `network` permission class asking every client.

use std::time::{Duration, Instant};

use protocol::{Decision, Event, Mode, PermissionClass, RunOptions};
use serde_json::json;
use tests::model_server::anthropic;
use tests::web_server::{Reply, WebServer};
use tests::{TestEnv, answer, next_event, subscribe, tool_results, until_finished};

/// The daemon's config: quick model retries, then `extra`.
fn config(extra: &str) -> String {
    format!("retry_base_ms = 5\nretry_max_ms = 20\n{extra}")
}

/// Rules that let the tests' loopback server be fetched without asking.
const LOOPBACK: &str = "[permissions]\nallow = [\"fetch:127.0.0.1\"]\n";

/// Starts a daemon with `extra` config whose model calls `fetch` on each of `urls` in turn
/// (with the run's `grants`), and returns the environment and the results as (is_error, text).
async fn fetch_all(
    extra: &str,
    urls: &[String],
    grants: &[PermissionClass],
) -> (TestEnv, Vec<(bool, String)>) {
    let mut script: Vec<_> = urls
        .iter()
        .map(|url| anthropic::tool("fetch", json!({ "url": url })))
        .collect();
    script.push(anthropic::text("done"));
    let mut env = TestEnv::builder()
        .config(&config(extra))
        .model(script)
        .start()
        .await;
    let options = RunOptions {
        grants: grants.to_vec(),
        ..env.options()
    };
    let events = env.run_with("read the pages", options).await;
    let results = tool_results(&events)
        .into_iter()
        .map(|(_, is_error, output)| (is_error, output))
        .collect();
    (env, results)
}

/// The one result of fetching `url`.
async fn fetch_one(extra: &str, url: String, grants: &[PermissionClass]) -> (bool, String) {
    let (_env, mut results) = fetch_all(extra, &[url], grants).await;
    assert_eq!(results.len(), 1, "{results:?}");
    results.remove(0)
}

#[tokio::test]
async fn an_html_page_comes_back_as_markdown() {
    let server = WebServer::start().await;
    server.route(
        "/guide",
        Reply::html(
            "<!doctype html><html><head><title>Guide</title><script>var secret = 1;</script></head>\
             <body><h1>Getting started</h1><p>Install with <code>cargo add htmd</code>, then read \
             <a href=\"https://docs.rs/htmd\">the API</a>.</p><ul><li>fast</li><li>safe</li></ul></body></html>",
        ),
    );
    let (is_error, text) = fetch_one(LOOPBACK, server.url("/guide"), &[]).await;
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with(&format!("URL: {}\n", server.url("/guide"))),
        "{text}"
    );
    assert!(
        text.contains("text/html; charset=utf-8, as markdown"),
        "{text}"
    );
    assert!(text.contains("# Getting started"), "{text}");
    assert!(text.contains("`cargo add htmd`"), "{text}");
    assert!(text.contains("[the API](https://docs.rs/htmd)"), "{text}");
    assert!(!text.contains("secret"), "scripts are dropped: {text}");
    let seen = &server.seen()[0];
    assert_eq!(seen.method, "GET");
    assert!(
        seen.header("user-agent").unwrap().starts_with("agentd/"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn json_and_plain_text_come_back_as_they_are_and_binary_is_refused() {
    let server = WebServer::start().await;
    server.route(
        "/api",
        Reply::json(&json!({"name": "htmd", "versions": [1, 2]})),
    );
    server.route(
        "/notes.txt",
        Reply::typed("text/plain", "line one\n  <b>not html</b>\n"),
    );
    server.route(
        "/logo.png",
        Reply::typed("image/png", vec![0x89, b'P', b'N', b'G', 0, 0]),
    );
    let urls = [
        server.url("/api"),
        server.url("/notes.txt"),
        server.url("/logo.png"),
    ];
    let (_env, results) = fetch_all(LOOPBACK, &urls, &[]).await;
    assert!(
        results[0]
            .1
            .ends_with("{\"name\":\"htmd\",\"versions\":[1,2]}"),
        "{results:?}"
    );
    assert!(
        results[1].1.ends_with("line one\n  <b>not html</b>\n"),
        "{results:?}"
    );
    assert!(results[2].0, "{results:?}");
    assert!(results[2].1.contains("image/png, not text"), "{results:?}");
}

#[tokio::test]
async fn a_redirect_chain_is_followed_to_the_page() {
    let server = WebServer::start().await;
    server.route("/old", Reply::redirect("/older"));
    server.route("/older", Reply::redirect(&server.url("/new")));
    server.route("/new", Reply::html("<p>moved here</p>"));
    let (is_error, text) = fetch_one(LOOPBACK, server.url("/old"), &[]).await;
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with(&format!(
            "URL: {}\n(redirected from {})",
            server.url("/new"),
            server.url("/old")
        )),
        "{text}"
    );
    assert!(text.ends_with("moved here"), "{text}");
    assert_eq!(server.seen().len(), 3);
}

#[tokio::test]
async fn more_than_ten_redirects_are_refused() {
    let server = WebServer::start().await;
    for i in 0..=11 {
        server.route(&format!("/r{i}"), Reply::redirect(&format!("/r{}", i + 1)));
    }
    let (is_error, text) = fetch_one(LOOPBACK, server.url("/r0"), &[]).await;
    assert!(is_error);
    assert!(text.contains("more than 10 redirects"), "{text}");
    // The first request and ten redirects followed; the eleventh is not.
    assert_eq!(server.seen().len(), 11, "{:?}", server.seen());
    assert_eq!(server.hits("/r11"), 0);
}

#[tokio::test]
async fn a_huge_page_is_cut_on_download_and_in_the_result() {
    let server = WebServer::start().await;
    let line = "all work and no play makes a dull page\n";
    let huge = line.repeat((8 << 20) / line.len());
    server.route("/huge.txt", Reply::typed("text/plain", huge));
    let (is_error, text) = fetch_one(LOOPBACK, server.url("/huge.txt"), &[]).await;
    let start: String = text.chars().take(300).collect();
    assert!(!is_error, "{start}");
    assert!(
        text.contains("[the page is larger than 5 MB: only its first 5 MB were read]"),
        "{start}"
    );
    assert!(text.contains("bytes omitted"), "the result is capped");
    assert!(text.len() <= 31_000, "{} bytes", text.len());
}

#[tokio::test]
async fn a_slow_page_times_out() {
    let server = WebServer::start().await;
    server.route(
        "/slow",
        Reply::html("<p>late</p>").after(Duration::from_secs(10)),
    );
    let started = Instant::now();
    let extra = format!("{LOOPBACK}[web]\ntimeout_secs = 1\n");
    let (is_error, text) = fetch_one(&extra, server.url("/slow"), &[]).await;
    assert!(is_error);
    assert!(
        text.contains("did not answer within 1 s ([web] timeout_secs"),
        "{text}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_loopback_address_is_refused_without_a_rule_naming_it() {
    let server = WebServer::start().await;
    server.route("/page", Reply::html("<p>inside</p>"));
    // Web access granted for the run: the guard still refuses the address.
    let (is_error, text) = fetch_one("", server.url("/page"), &[PermissionClass::Network]).await;
    assert!(is_error);
    assert!(
        text.contains("refused: 127.0.0.1 is a loopback address"),
        "{text}"
    );
    assert!(text.contains("`fetch:127.0.0.1`"), "{text}");
    assert_eq!(server.seen().len(), 0, "nothing reached the server");
}

#[tokio::test]
async fn localhost_is_refused_without_a_rule_naming_it_and_fetched_with_one() {
    let server = WebServer::start().await;
    server.route("/page", Reply::html("<p>local page</p>"));
    let url = server.url_as("localhost", "/page");
    // Refused before anyone is asked: a person's yes would not let it through.
    let (is_error, text) = fetch_one("", url.clone(), &[PermissionClass::Network]).await;
    assert!(is_error);
    assert!(
        text.starts_with("refused: localhost names this machine"),
        "{text}"
    );
    assert!(text.contains("`fetch:localhost`"), "{text}");
    assert_eq!(server.seen().len(), 0);
    // A catch-all rule lets it run without asking, not reach a loopback address.
    let catch_all = "[permissions]\nallow = [\"fetch:*\"]\n";
    let (is_error, text) = fetch_one(catch_all, url.clone(), &[]).await;
    assert!(is_error && text.contains("names this machine"), "{text}");
    let naming = "[permissions]\nallow = [\"fetch:localhost\"]\n";
    let (is_error, text) = fetch_one(naming, url, &[]).await;
    assert!(!is_error, "{text}");
    assert!(text.ends_with("local page"), "{text}");
}

#[tokio::test]
async fn a_redirect_to_localhost_is_refused_without_a_rule_and_followed_with_one() {
    let server = WebServer::start().await;
    server.route(
        "/jump",
        Reply::redirect(&server.url_as("localhost", "/page")),
    );
    server.route("/page", Reply::html("<p>local page</p>"));
    // Web access granted for the run; the first host is named, the redirect's is not.
    let grant = [PermissionClass::Network];
    let (is_error, text) = fetch_one(LOOPBACK, server.url("/jump"), &grant).await;
    assert!(is_error);
    let refusal = format!(
        "{} redirects to {}: refused: localhost names this machine",
        server.url("/jump"),
        server.url_as("localhost", "/page")
    );
    assert!(text.starts_with(&refusal), "{text}");
    assert!(text.contains("`fetch:localhost`"), "{text}");
    assert_eq!(server.hits("/page"), 0);
    let both = "[permissions]\nallow = [\"fetch:127.0.0.1\", \"fetch:localhost\"]\n";
    let (is_error, text) = fetch_one(both, server.url("/jump"), &[]).await;
    assert!(!is_error, "{text}");
    assert!(text.ends_with("local page"), "{text}");
}

#[tokio::test]
async fn a_redirect_to_loopback_is_refused_without_a_rule_and_followed_with_one() {
    let server = WebServer::start().await;
    server.route("/jump", Reply::redirect(&server.url("/inside")));
    server.route("/inside", Reply::html("<p>inside</p>"));
    let start = server.url_as("localhost", "/jump");
    let grant = [PermissionClass::Network];
    let only_localhost = "[permissions]\nallow = [\"fetch:localhost\"]\n";
    let (is_error, text) = fetch_one(only_localhost, start.clone(), &grant).await;
    assert!(is_error);
    assert!(
        text.contains("refused: 127.0.0.1 is a loopback address"),
        "{text}"
    );
    assert_eq!(server.hits("/inside"), 0);
    let both = "[permissions]\nallow = [\"fetch:localhost\", \"fetch:127.0.0.1\"]\n";
    let (is_error, text) = fetch_one(both, start, &[]).await;
    assert!(!is_error, "{text}");
    assert!(text.ends_with("inside"), "{text}");
}

#[tokio::test]
async fn a_redirect_to_a_host_that_would_ask_is_not_followed_but_named() {
    let server = WebServer::start().await;
    let elsewhere = "http://docs.example.invalid/next";
    server.route("/jump", Reply::redirect(elsewhere));
    let (is_error, text) = fetch_one(LOOPBACK, server.url("/jump"), &[]).await;
    assert!(is_error);
    assert!(
        text.contains(&format!(
            "not followed: {} redirects to {elsewhere}",
            server.url("/jump")
        )),
        "{text}"
    );
    assert!(text.contains("call fetch with that URL"), "{text}");
}

#[tokio::test]
async fn deny_rules_refuse_a_host_and_a_redirect_to_it() {
    let server = WebServer::start().await;
    server.route("/page", Reply::html("<p>x</p>"));
    server.route("/jump", Reply::redirect(&server.url("/page")));
    let rules = "[permissions]\nallow = [\"fetch:localhost\", \"fetch:127.0.0.1\"]\ndeny = [\"fetch:127.*\"]\n";
    let urls = [server.url("/page"), server.url_as("localhost", "/jump")];
    let (_env, results) = fetch_all(rules, &urls, &[PermissionClass::Network]).await;
    assert!(
        results[0].0
            && results[0]
                .1
                .contains("denied by the permission rule `fetch:127.*`"),
        "{results:?}"
    );
    assert!(results[1].0, "{results:?}");
    assert!(
        results[1].1.contains("redirects to") && results[1].1.contains("`fetch:127.*`"),
        "{results:?}"
    );
    assert_eq!(server.hits("/page"), 0);
}

#[tokio::test]
async fn a_page_fetched_by_one_session_is_served_to_another_from_the_cache() {
    let server = WebServer::start().await;
    server.route("/cached", Reply::html("<h2>Once</h2>"));
    let url = server.url("/cached");
    let (env, results) = fetch_all(LOOPBACK, std::slice::from_ref(&url), &[]).await;
    assert!(!results[0].1.contains("15-minute cache"), "{results:?}");
    // A second session of the same daemon.
    let mut other = env.daemon.client().await;
    let session = tests::create_session(&other, env.project()).await.id;
    subscribe(&other, &session, 0).await;
    let mut incoming = other.take_incoming().unwrap();
    env.server.push(vec![
        anthropic::tool("fetch", json!({ "url": url })),
        anthropic::text("done"),
    ]);
    tests::start_run(&other, &session, "again", env.options()).await;
    let events = until_finished(&mut incoming).await;
    let results = tool_results(&events);
    assert!(!results[0].1, "{results:?}");
    assert!(
        results[0].2.contains("(from the daemon's 15-minute cache)"),
        "{results:?}"
    );
    assert!(results[0].2.ends_with("## Once"), "{results:?}");
    assert_eq!(server.hits("/cached"), 1, "one request for two fetches");
}

#[tokio::test]
async fn fetch_asks_in_auto_mode_and_every_client_sees_the_question() {
    // A name that never resolves: the question is what this is about.
    let url = "http://docs.example.invalid/page".to_string();
    let mut env = TestEnv::builder()
        .mode(Mode::Auto)
        .model(vec![
            anthropic::tool("fetch", json!({ "url": url })),
            anthropic::text("done"),
        ])
        .start()
        .await;
    let mut second = env.daemon.client().await;
    subscribe(&second, &env.session, 0).await;
    let mut second_events = second.take_incoming().unwrap();
    env.start_run_with("read it", tests::asking_options(&env.server))
        .await;
    let mut asked = Vec::new();
    for incoming in [&mut env.incoming, &mut second_events] {
        loop {
            if let Event::PermissionRequested {
                request,
                tool,
                summary,
                ..
            } = next_event(incoming).await.event
            {
                assert_eq!(tool, "fetch");
                assert_eq!(summary, format!("fetch {url}"));
                asked.push(request);
                break;
            }
        }
    }
    assert_eq!(asked[0], asked[1], "both clients see the same question");
    answer(&second, &env.session, asked[0], Decision::Allow)
        .await
        .expect("answered");
    for incoming in [&mut env.incoming, &mut second_events] {
        loop {
            if let Event::PermissionResolved {
                request, decision, ..
            } = next_event(incoming).await.event
            {
                assert_eq!((request, decision), (asked[0], Decision::Allow));
                break;
            }
        }
    }
    let events = until_finished(&mut env.incoming).await;
    let results = tool_results(&events);
    // Allowed, it ran: the name does not resolve.
    assert!(
        results[0]
            .2
            .starts_with("cannot fetch http://docs.example.invalid/page"),
        "{results:?}"
    );
}
