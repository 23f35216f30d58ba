//! The HTTP clients of web calls (docs/architecture.md#web-access): no proxy from the
//! environment, no redirect followed by the client (the caller checks each hop), our own
//! User-Agent, and the guarded resolver. A client that may reach private addresses is made for
//! the one call whose rules allow them, so that no connection it opened is ever handed to a
//! call whose rules do not.

use std::time::Duration;

use super::resolver::{GuardedResolver, NamedHosts};

/// The User-Agent of the daemon's web calls.
pub(crate) const USER_AGENT: &str = concat!("agentd/", env!("CARGO_PKG_VERSION"), " (fetch)");
/// The longest a connection may take to open (the whole call has its own timeout too).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A client for `tool` (`fetch`, `web_search`) whose resolver allows the non-public addresses
/// of the hosts `named` accepts, and of no host when `None`.
pub(crate) fn build(
    named: Option<NamedHosts>,
    tool: &'static str,
) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(USER_AGENT)
        .connect_timeout(CONNECT_TIMEOUT)
        .dns_resolver(GuardedResolver { named, tool })
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// What a failed request is to the model: the refused address when the guard refused it,
/// else the error with its causes, in one line.
pub(crate) fn describe(err: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut parts = Vec::new();
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<super::resolver::AddressRefused>() {
            return refused.to_string();
        }
        let text = cause.to_string();
        if !parts.iter().any(|p: &String| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn a_client_connects_only_to_addresses_its_resolver_let_through() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://localhost:{port}/");
        let public = build(None, "fetch").unwrap();
        let err = public.get(&url).send().await.unwrap_err();
        let text = describe(&err);
        assert!(
            text.starts_with("refused: localhost resolves to "),
            "{text}"
        );
        assert!(
            listener.accept().is_err(),
            "nothing connected to the refused address"
        );
        // The same name, named by a rule: the client connects.
        listener.set_nonblocking(false).unwrap();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request).unwrap();
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                .unwrap();
        });
        let named = build(Some(Arc::new(|host: &str| host == "localhost")), "fetch").unwrap();
        let answer = named.get(&url).send().await.unwrap();
        assert_eq!(answer.text().await.unwrap(), "ok");
        server.join().unwrap();
    }
}
