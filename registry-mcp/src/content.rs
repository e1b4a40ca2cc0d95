//! An observation as rmcp's `CallToolResult`, each block of content as rmcp's `ContentBlock`:
//! the same result as [`Profile::Mcp`](registry_core::Profile::Mcp) renders as JSON, built
//! from the blocks directly, so that each piece of binary data is encoded to base64 once,
//! straight into the string rmcp sends.

use registry_core::{
    Observation, Profile,
    content::{Content, Embedded},
};
use rmcp::model::{CallToolResult, ContentBlock, Resource, ResourceContents};
use serde_json::Value;

/// The `CallToolResult` of an observation that is not a JSON-RPC error: the error text with
/// `isError: true`; or the blocks of a result of content, then the JSON text of the tool's
/// value (a plain result's only block), and `structuredContent` when the tool has an output
/// schema and the value is an object.
pub(crate) fn call_tool_result(observation: &Observation) -> CallToolResult {
    if let Some(error) = observation.error_text() {
        return CallToolResult::error(vec![ContentBlock::text(error)]);
    }
    let mut content: Vec<ContentBlock> = observation
        .blocks()
        .iter()
        .enumerate()
        .map(|(i, content)| block(content).unwrap_or_else(|| rendered_block(observation, i)))
        .collect();
    if let Some(value) = observation.value() {
        let text = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        content.push(ContentBlock::text(text));
    }
    let mut result = CallToolResult::success(content);
    if observation.is_structured() {
        result.structured_content = Some(observation.json().clone());
    }
    result
}

/// One block as rmcp has it; `None` for a kind of block this crate does not know (`Content`
/// may grow).
fn block(content: &Content) -> Option<ContentBlock> {
    Some(match content {
        Content::Text(text) => ContentBlock::text(text.as_str()),
        Content::Image(media) => ContentBlock::image(media.base64(), media.mime_type()),
        Content::Audio(media) => ContentBlock::audio(media.base64(), media.mime_type()),
        Content::ResourceLink(link) => {
            let mut resource = Resource::new(link.uri(), link.name());
            resource.title = link.title().map(str::to_owned);
            resource.description = link.description().map(str::to_owned);
            resource.mime_type = link.mime_type().map(str::to_owned);
            resource.size = link.size();
            ContentBlock::resource_link(resource)
        }
        Content::Resource(resource) => {
            let contents = match resource.contents() {
                Embedded::Text { text, .. } => {
                    ResourceContents::text(text.as_str(), resource.uri())
                }
                Embedded::Blob(blob) => ResourceContents::blob(blob.base64(), resource.uri()),
                _ => return None,
            };
            ContentBlock::resource(contents.with_mime_type(resource.mime_type()))
        }
        _ => return None,
    })
}

/// Block `i` of `observation` as the MCP profile renders it, for a kind of block [`block`]
/// does not know; a text saying so if even that cannot be read.
fn rendered_block(observation: &Observation, i: usize) -> ContentBlock {
    let rendered = Profile::Mcp.render(observation);
    serde_json::from_value(rendered["content"][i].clone())
        .unwrap_or_else(|_| ContentBlock::text("(a block of content this server cannot send)"))
}
