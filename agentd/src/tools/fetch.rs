//! `fetch`: GET a web page and return its text (docs/architecture.md#web-access). HTML comes
//! back as markdown, JSON and plain text as they are; the work is in [`crate::web::fetcher`].

use serde::Deserialize;
use serde_json::json;

use super::{MAX_OUTPUT_BYTES, ToolContext, ToolOutput};
use crate::tool_spec::ToolSpec;
use crate::web::fetcher::{self, Fetched};

/// Room kept for the lines around the page's text.
const HEADING_ROOM: usize = 1024;

/// The model's description of `fetch`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "fetch".into(),
        description: "Get a web page by its http(s) URL and return its text: HTML as markdown, JSON and plain text as they are. Use it to read documentation, an issue, an API's answer or a page the user names, instead of curl in bash. Long pages are cut (about 30 kB kept, head and tail). Pages are cached for 15 minutes. Local and private addresses are refused unless the user's config allows the host.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "description": "The full http or https URL of the page"
                }
            },
            "required": ["url"],
            "additionalProperties": false
        }),
    }
}

/// The arguments of `fetch`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// The page's address.
    url: String,
}

/// Runs the call.
pub(crate) async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let work = fetcher::fetch(&ctx.web, &args.url, MAX_OUTPUT_BYTES - HEADING_ROOM);
    let fetched = tokio::select! {
        fetched = work => fetched,
        () = ctx.cancel.cancelled() => return ToolOutput::error("cancelled"),
    };
    match fetched {
        Ok(Fetched::Page {
            asked,
            page,
            cached,
        }) => ToolOutput::ok(page.render(&asked, cached)),
        Ok(Fetched::Redirect { from, to }) => ToolOutput::error(format!(
            "not followed: {from} redirects to {to}, another host this session may not reach without asking; call fetch with that URL to ask the user"
        )),
        Err(err) => ToolOutput::error(err),
    }
}
