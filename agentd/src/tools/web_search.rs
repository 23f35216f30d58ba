//! `web_search`: search the web with the configured service (docs/architecture.md#web-access),
//! offered only when `[web_search]` is configured; the work is in [`crate::web::search`].

use serde::Deserialize;
use serde_json::json;

use super::{MAX_OUTPUT_BYTES, ToolContext, ToolOutput};
use crate::tool_spec::ToolSpec;

/// The most characters of a query.
const MAX_QUERY_CHARS: usize = 400;

/// The model's description of `web_search`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "web_search".into(),
        description: "Search the web and return the top results as title, URL and snippet. Use it to find current documentation, an error message, a release or an API you do not know; then read a result with fetch.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What to search for, as you would type it into a search engine"
                }
            },
            "required": ["query"],
            "additionalProperties": false
        }),
    }
}

/// The arguments of `web_search`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// What to search for.
    query: String,
}

/// Runs the call.
pub(crate) async fn run(args: Args, ctx: ToolContext) -> ToolOutput {
    let query = args.query.trim();
    if query.is_empty() {
        return ToolOutput::error("the query is empty; say what to search for");
    }
    if query.chars().count() > MAX_QUERY_CHARS {
        return ToolOutput::error(format!(
            "the query is longer than {MAX_QUERY_CHARS} characters; shorten it"
        ));
    }
    let work = crate::web::search::search(&ctx.web, query, MAX_OUTPUT_BYTES);
    let found = tokio::select! {
        found = work => found,
        () = ctx.cancel.cancelled() => return ToolOutput::error("cancelled"),
    };
    match found {
        Ok(results) => ToolOutput::ok(results),
        Err(err) => ToolOutput::error(err),
    }
}
