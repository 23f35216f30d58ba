//! One `fetch`: the cache first, then GET with redirects followed by hand, each hop checked
//! again (scheme, deny rules, whether the rules reach its host, the address guard), the body
//! streamed up to a cap and turned into text (docs/architecture.md#web-access).

use std::sync::Arc;
use std::time::Instant;

use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use url::Url;

use super::body::{self, Kind};
use super::page::{Hop, Page};
use super::reach::HostVerdict;
use super::resolver::check_literal;
use super::{WebCall, client, markdown};
use crate::tools::output::cap;

/// The most redirects one fetch follows.
pub(crate) const MAX_REDIRECTS: usize = 10;
/// The most bytes of a page that are downloaded.
pub(crate) const MAX_DOWNLOAD_BYTES: usize = 5 << 20;
/// What the daemon says it accepts.
const ACCEPTS: &str =
    "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.9,text/*;q=0.8";

/// What a fetch came to.
#[derive(Debug)]
pub(crate) enum Fetched {
    /// The page, from the network or the cache.
    Page {
        /// The address asked for, as read (without its fragment).
        asked: String,
        /// The page.
        page: Arc<Page>,
        /// Whether it came from the cache.
        cached: bool,
    },
    /// A redirect to a host the call may not reach without asking: not followed.
    Redirect {
        /// The address that redirected.
        from: String,
        /// Where it points.
        to: String,
    },
}

/// An `http` or `https` URL with a host, without its fragment.
pub(crate) fn parse(text: &str) -> Result<Url, String> {
    let mut url = Url::parse(text.trim())
        .map_err(|e| format!("`{text}` is not a URL ({e}); give a full http or https URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!(
            "`{text}` is not an http or https URL; fetch reads web pages only"
        ));
    }
    url.set_fragment(None);
    // `host.` is the same host as `host`: rules and the address guard see one spelling.
    if let Some(url::Host::Domain(name)) = url.host()
        && name.ends_with('.')
    {
        let name = name.trim_end_matches('.').to_string();
        if name.is_empty() || url.set_host(Some(&name)).is_err() {
            return Err(format!(
                "`{text}` has no host name; give a full http or https URL"
            ));
        }
    }
    Ok(url)
}

/// Fetches `url` for `call`; the page's text is capped at `limit` bytes.
pub(crate) async fn fetch(call: &WebCall, url: &str, limit: usize) -> Result<Fetched, String> {
    let asked = parse(url)?;
    let key = asked.as_str().to_string();
    if let Some(page) = call.web.cache().get(&key, Instant::now())
        && page.servable_to(call.reach.as_ref())
    {
        return Ok(Fetched::Page {
            asked: key,
            page,
            cached: true,
        });
    }
    let fetched = tokio::time::timeout(call.timeout, follow(call, asked, limit))
        .await
        .map_err(|_| {
            format!(
                "{url} did not answer within {} s ([web] timeout_secs in config.toml)",
                call.timeout.as_secs()
            )
        })??;
    Ok(match fetched {
        Followed::Page(page) => {
            let page = Arc::new(page);
            call.web
                .cache()
                .put(key.clone(), page.clone(), Instant::now());
            Fetched::Page {
                asked: key,
                page,
                cached: false,
            }
        }
        Followed::Redirect { from, to } => Fetched::Redirect { from, to },
    })
}

/// Where following the redirects ended.
enum Followed {
    /// At a page.
    Page(Page),
    /// At a redirect not followed ([`Fetched::Redirect`]).
    Redirect {
        /// The address that redirected.
        from: String,
        /// Where it points.
        to: String,
    },
}

/// Requests `url`, following redirects hop by hop.
async fn follow(call: &WebCall, mut url: Url, limit: usize) -> Result<Followed, String> {
    let first = url.host_str().unwrap_or_default().to_string();
    let mut hops: Vec<Hop> = Vec::new();
    // The address that redirected to `url`.
    let mut from = url.clone();
    // Made once for the call, when a host its rules name is met.
    let mut private = None;
    for redirects in 0..=MAX_REDIRECTS {
        let host = url.host_str().unwrap_or_default().to_string();
        if host != first {
            match call.reach.verdict(&host) {
                HostVerdict::Allowed => {}
                HostVerdict::Ask => {
                    return Ok(Followed::Redirect {
                        from: from.to_string(),
                        to: url.to_string(),
                    });
                }
                HostVerdict::Denied(why) => {
                    return Err(format!("{from} redirects to {url}: {why}"));
                }
            }
        }
        let named = call.reach.names(&host);
        if let Some(literal) = url.host() {
            check_literal(&literal, named, "fetch").map_err(|e| e.to_string())?;
        }
        hops.push(Hop {
            host: host.clone(),
            named,
        });
        let client = if named {
            if private.is_none() {
                let reach = call.reach.clone();
                private = Some(client::build(
                    Some(Arc::new(move |host: &str| reach.names(host))),
                    "fetch",
                )?);
            }
            private.as_ref()
        } else {
            None
        };
        let client = match client {
            Some(client) => client,
            None => call.web.public_client()?,
        };
        let response = client
            .get(url.clone())
            .header(ACCEPT, ACCEPTS)
            .send()
            .await
            .map_err(|e| {
                let why = client::describe(&e);
                // The guard's refusal says what happened and what to do.
                if why.starts_with("refused:") {
                    why
                } else {
                    format!("cannot fetch {url}: {why}")
                }
            })?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response.headers().get(LOCATION)
        {
            if redirects == MAX_REDIRECTS {
                return Err(format!(
                    "refused: more than {MAX_REDIRECTS} redirects (the last from {url}); fetch the final address directly if you know it"
                ));
            }
            let location = location.to_str().unwrap_or_default();
            from = url.clone();
            url = url
                .join(location)
                .map_err(|e| format!("{url} redirects to `{location}`, which is not a URL ({e})"))
                .and_then(|next| parse(next.as_str()))?;
            continue;
        }
        if !status.is_success() {
            return Err(format!("{url} answered {status}"));
        }
        return read_page(url, response, hops, limit)
            .await
            .map(Followed::Page);
    }
    Err(format!("refused: more than {MAX_REDIRECTS} redirects"))
}

/// Reads the page at `url` from `response` and turns it into text.
async fn read_page(
    url: Url,
    response: reqwest::Response,
    hops: Vec<Hop>,
    limit: usize,
) -> Result<Page, String> {
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    // A type that is not text is refused before anything is downloaded.
    if let Some(content_type) = &content_type
        && let Err(other) = body::kind(Some(content_type), b"")
    {
        return Err(refused_type(&url, &other));
    }
    let (bytes, cut) = body::read_capped(response, MAX_DOWNLOAD_BYTES).await?;
    let kind =
        body::kind(content_type.as_deref(), &bytes).map_err(|other| refused_type(&url, &other))?;
    let mut notes = Vec::new();
    if cut {
        notes.push(format!(
            "the page is larger than {} MB: only its first {} MB were read",
            MAX_DOWNLOAD_BYTES >> 20,
            MAX_DOWNLOAD_BYTES >> 20
        ));
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    drop(bytes);
    let shown_type = content_type.unwrap_or_else(|| "no content type".to_string());
    let (text, kind) = match kind {
        Kind::Html => {
            let converted = markdown::to_markdown(text).await?;
            notes.extend(converted.note);
            (converted.text, format!("{shown_type}, as markdown"))
        }
        Kind::Text => (text, shown_type),
    };
    let mut shown = String::new();
    for note in notes {
        shown.push_str(&format!("[{note}]\n"));
    }
    if !shown.is_empty() {
        shown.push('\n');
    }
    shown.push_str(&cap(&text, limit.saturating_sub(shown.len())));
    Ok(Page {
        url: url.to_string(),
        kind,
        text: shown,
        hops,
    })
}

/// The refusal of a page that is not text.
fn refused_type(url: &Url, content_type: &str) -> String {
    format!(
        "refused: {url} is {content_type}, not text; fetch returns web pages (as markdown), JSON and plain text"
    )
}
