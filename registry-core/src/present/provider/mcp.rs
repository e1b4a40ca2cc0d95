//! MCP, every shape and rule in one place: the schema rules (the canonical schema as it is),
//! the `Tool` object (every hint stated), the `tools/call` request a client sends, and the
//! `CallToolResult` that answers it, with every kind of content block.

use serde_json::{Map, Value, json};

use crate::content::{Content, Embedded};
use crate::execute::observation::Observation;
use crate::present::provider::Exported;
use crate::present::provider::text;
use crate::present::provider::{
    Composition, Enums, Formats, Holder, Keywords, NameRule, Null, References, Rules, StrictFlag,
    ToolList, ToolObject,
};
use crate::present::reader::{Parsed, Reader, describe, describe_member};
use crate::present::rules::COMPOSITION;
use crate::resolve::call::ToolCall;

/// MCP's schema rules: the canonical schema as it is (JSON Schema 2020-12, the whole vocabulary
/// since 2026-07-28, SEP-2106), under `inputSchema`; an `outputSchema` is an object schema. The
/// revision's resource bounds (same-document `$ref`s, bounded composition) are checked on every
/// tool's schemas when a registry is built (`register/bounds.rs`), whatever the profile.
pub(crate) const RULES: Rules = Rules {
    consumer: "MCP",
    names: NameRule {
        max_chars: 128,
        letter_first: false,
        punctuation: "_-.",
        rule: "MCP: tool names are 1 to 128 of `A-Za-z0-9_-.`",
    },
    max_tools: None,
    list: ToolList::Objects,
    tool: ToolObject {
        holder: Holder::Tool,
        function_type: None,
        schema_key: "inputSchema",
        schema_required: true,
        output_schema: true,
    },
    strict_flag: StrictFlag::Ignored,
    strict: None,
    canonical: true,
    dollar_schema: true,
    references: References::Any,
    composition: Composition {
        taken: COMPOSITION,
        said: "any",
    },
    const_keyword: true,
    null: Null::TypeUnion,
    enums: Enums::Any,
    additional_properties: true,
    unevaluated_properties: true,
    prefix_items: true,
    boolean_schemas: true,
    formats: Formats::Any,
    keywords: Keywords::All,
    annotations: true,
};

/// An MCP `Tool`: every behaviour hint is stated, since a client assumes MCP's defaults
/// (`destructiveHint` and `openWorldHint` true) for the ones left out.
pub(crate) fn tool_object(tool: &Exported<'_>) -> Value {
    let definition = tool.definition;
    let hints = tool.hints;
    let mut annotations = Map::new();
    annotations.insert("readOnlyHint".into(), hints.read_only.into());
    annotations.insert("destructiveHint".into(), hints.destructive.into());
    annotations.insert("idempotentHint".into(), hints.idempotent.into());
    annotations.insert("openWorldHint".into(), hints.open_world.into());
    let mut object = Map::new();
    object.insert("name".into(), definition.name.clone().into());
    if let Some(title) = &definition.title {
        object.insert("title".into(), title.clone().into());
        annotations.insert("title".into(), title.clone().into());
    }
    object.insert("description".into(), definition.description.clone().into());
    let parameters = if definition.headers.is_empty() {
        tool.parameters.clone()
    } else {
        crate::declare::header::annotated(tool.parameters, &definition.headers)
    };
    object.insert("inputSchema".into(), parameters);
    if let Some(output) = tool.output_schema {
        object.insert("outputSchema".into(), output.clone());
    }
    object.insert("annotations".into(), Value::Object(annotations));
    Value::Object(object)
}

/// A `CallToolResult`: the content, `isError`, and `structuredContent` when the tool has an
/// output schema and the result is an object.
///
/// The content is the text of a plain result or of an error; for a result of content, its
/// blocks, each as MCP has it, then the structured value's JSON text, if there is one (MCP
/// asks servers to mirror `structuredContent` as text, for clients that ignore it).
pub(crate) fn result(observation: &Observation) -> Value {
    let content = observation
        .rich_items(block, text_block)
        .unwrap_or_else(|| vec![text_block(text(observation))]);
    let mut result = json!({
        "content": content,
        "isError": observation.is_error(),
    });
    if observation.is_structured() {
        result["structuredContent"] = observation.json().clone();
    }
    result
}

fn text_block(text: String) -> Value {
    json!({"type": "text", "text": text})
}

/// One content block: `text`, `image` and `audio` (`data` in base64, `mimeType`),
/// `resource_link`, `resource` (`{resource: {uri, mimeType, text | blob}}`).
fn block(content: &Content) -> Value {
    match content {
        Content::Text(text) => text_block(text.clone()),
        Content::Image(media) => {
            json!({"type": "image", "data": media.base64(), "mimeType": media.mime_type()})
        }
        Content::Audio(media) => {
            json!({"type": "audio", "data": media.base64(), "mimeType": media.mime_type()})
        }
        Content::ResourceLink(link) => link.to_json(),
        Content::Resource(resource) => {
            let mut inner = Map::new();
            inner.insert("uri".into(), resource.uri().into());
            inner.insert("mimeType".into(), resource.mime_type().into());
            match resource.contents() {
                Embedded::Text { text, .. } => inner.insert("text".into(), text.as_str().into()),
                Embedded::Blob(blob) => inner.insert("blob".into(), blob.base64().into()),
            };
            json!({"type": "resource", "resource": inner})
        }
    }
}

impl Reader {
    pub(crate) fn mcp(&mut self, message: &Value) -> Parsed<()> {
        match message {
            Value::Object(object) if object.contains_key("method") => {
                self.mcp_request(object, "")
            }
            Value::Object(object) if object.contains_key("name") => {
                let position = self.calls.len();
                let call = self.mcp_params(object, "", format!("call_{position}"))?;
                self.calls.push(call.with_generated_id());
                Ok(())
            }
            Value::Array(batch) => {
                self.each_object(batch, "", "a JSON-RPC request", Self::mcp_request)
            }
            other => Err(self.error(
                "",
                format!(
                    "expected a `tools/call` request (with `method`) or its `params` (with `name`), found {}",
                    describe(other)
                ),
            )),
        }
    }

    pub(crate) fn mcp_request(
        &mut self,
        request: &Map<String, Value>,
        pointer: &str,
    ) -> Parsed<()> {
        let method = self.string(request, pointer, "method", "the JSON-RPC method")?;
        // Other requests and notifications carry no tool call.
        if method != "tools/call" {
            return Ok(());
        }
        let id = match request.get("id") {
            Some(Value::String(id)) => id.clone(),
            Some(Value::Number(id)) => id.to_string(),
            other => {
                return Err(self.error(
                    &format!("{pointer}/id"),
                    format!(
                        "expected the request id (a string or a number), found {}",
                        describe_member(other)
                    ),
                ));
            }
        };
        let params = self.member(request, pointer, "params")?;
        let pointer = format!("{pointer}/params");
        let params = self.object(params, &pointer, "the `tools/call` params object")?;
        let call = self.mcp_params(params, &pointer, id)?;
        self.calls.push(call);
        Ok(())
    }

    pub(crate) fn mcp_params(
        &self,
        params: &Map<String, Value>,
        pointer: &str,
        id: String,
    ) -> Parsed<ToolCall> {
        let name = self.string(params, pointer, "name", "the tool name")?;
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(arguments) => Value::Object(
                self.object(
                    arguments,
                    &format!("{pointer}/arguments"),
                    "the arguments object",
                )?
                .clone(),
            ),
        };
        Ok(ToolCall::new(id, name, arguments))
    }
}
