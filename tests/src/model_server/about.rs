//! Questions a client asks the server about itself rather than for a reply: what a local
//! server says of itself (`/props`, `/api/show`) and the models it serves (`/v1/models`, in
//! the format of the API that asks).

use super::*;

/// Paths a client asks a local server about itself on, rather than for a reply.
pub(super) const INFO_PATHS: [&str; 3] = ["/models", "/props", "/api/show"];

/// The answer to a question about the server itself: what the test described, else the models
/// it serves in the asking API's format, else a 404.
pub(super) fn about_itself(
    state: &State,
    route: &str,
    query: &str,
    request: &Received,
) -> Scripted {
    let ok = |body| Scripted::Status {
        status: 200,
        body,
        headers: vec![],
    };
    if let Some(body) = state
        .info
        .get(route)
        .or_else(|| state.info.get(&request.path))
    {
        return ok(body.clone());
    }
    match &state.models {
        Some(ids) if route.ends_with("/v1/models") => {
            if request.header("anthropic-version").is_none() {
                return ok(openai::models_list(ids));
            }
            if request.header("x-api-key").is_none() {
                return anthropic::error(
                    401,
                    "authentication_error",
                    "x-api-key header is required",
                );
            }
            ok(anthropic::models_page(ids, query))
        }
        _ => Scripted::Status {
            status: 404,
            body: json!({"error": "not found"}),
            headers: vec![],
        },
    }
}
