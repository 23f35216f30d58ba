//! A `tools/call` result as the model sees it (docs/architecture.md#mcp-servers): text joined,
//! structured content as JSON, images, audio and resources as a short note, `isError` kept, and the
//! whole capped like every tool's output.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::tools::{MAX_OUTPUT_BYTES, ToolOutput, cap};

/// Converts a server's result.
pub(crate) fn to_output(result: &CallToolResult) -> ToolOutput {
    let mut parts: Vec<String> = Vec::new();
    let mut texts: Vec<&str> = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => {
                texts.push(&text.text);
                parts.push(text.text.clone());
            }
            ContentBlock::Image(image) => parts.push(format!(
                "[image: {}, {} bytes]",
                image.mime_type,
                decoded_len(&image.data)
            )),
            ContentBlock::Audio(audio) => parts.push(format!(
                "[audio: {}, {} bytes]",
                audio.mime_type,
                decoded_len(&audio.data)
            )),
            ContentBlock::Resource(resource) => parts.push(match &resource.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[resource: {uri}, text, {} bytes]", text.len())
                }
                ResourceContents::BlobResourceContents { uri, blob, .. } => {
                    format!("[resource: {uri}, {} bytes]", decoded_len(blob))
                }
                _ => "[resource]".to_string(),
            }),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[resource link: {} ({})]", link.uri, link.name))
            }
            _ => parts.push("[content of a kind agentd does not show]".to_string()),
        }
    }
    // Servers often send structured content also as text: show it once.
    if let Some(structured) = &result.structured_content {
        let shown_as_text = texts.iter().any(|text| {
            serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| &v == structured)
        });
        if !shown_as_text {
            parts.push(structured.to_string());
        }
    }
    let text = if parts.is_empty() {
        "(no output)".to_string()
    } else {
        parts.join("\n")
    };
    ToolOutput {
        output: cap(&text, MAX_OUTPUT_BYTES),
        is_error: result.is_error.unwrap_or(false),
        images: Vec::new(),
    }
}

/// The size of base64 `data` once decoded.
fn decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolResult, ContentBlock};

    #[test]
    fn text_structured_and_images_become_one_text() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::text("first"),
            ContentBlock::image("aGVsbG8=", "image/png"),
        ]);
        result.structured_content = Some(serde_json::json!({"sum": 3}));
        let output = to_output(&result);
        assert_eq!(
            output.output,
            "first\n[image: image/png, 5 bytes]\n{\"sum\":3}"
        );
        assert!(!output.is_error);
        let failed = CallToolResult::error(vec![ContentBlock::text("{\"sum\":3}")]);
        let mut failed = failed;
        failed.structured_content = Some(serde_json::json!({"sum": 3}));
        let output = to_output(&failed);
        assert_eq!(output.output, "{\"sum\":3}");
        assert!(output.is_error);
    }

    #[test]
    fn huge_results_are_capped() {
        let result = CallToolResult::success(vec![ContentBlock::text("x".repeat(1_000_000))]);
        assert!(to_output(&result).output.len() <= MAX_OUTPUT_BYTES + 200);
    }
}
