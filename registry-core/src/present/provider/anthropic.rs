//! Anthropic (Messages), every shape and rule in one place: the schema rules, the tool object
//! (`input_schema`), the `tool_use` blocks of a response and the `tool_result` block that
//! answers one, with the content blocks it can carry.

use serde_json::{Map, Value, json};

use crate::content::{Content, Embedded, Media};
use crate::execute::observation::Observation;
use crate::present::provider::Exported;
use crate::present::provider::text;
use crate::present::provider::{
    Composition, Enums, Formats, Holder, Keywords, NameRule, Null, References, Rules, StrictFlag,
    ToolList, ToolObject,
};
use crate::present::reader::{Parsed, Reader, caller_of, describe};
use crate::resolve::call::ToolCall;

/// The string formats Anthropic takes.
pub(crate) const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Anthropic's schema rules: JSON Schema under `input_schema` without `$schema`, every `$ref`
/// inlined (none recursive), `anyOf` and a limited `allOf`, Anthropic's formats; with
/// `strict: true`, closed objects and no bounds.
pub(crate) const RULES: Rules = Rules {
    consumer: "Anthropic",
    names: NameRule {
        max_chars: 64,
        letter_first: false,
        punctuation: "_-",
        rule: "Anthropic: tool names match `^[a-zA-Z0-9_-]{1,64}$` (128 in the API, 64 in several \
               clients such as Claude Desktop)",
    },
    max_tools: None,
    list: ToolList::Objects,
    tool: ToolObject {
        holder: Holder::Tool,
        function_type: None,
        schema_key: "input_schema",
        schema_required: true,
        output_schema: false,
    },
    strict_flag: StrictFlag::Optional,
    strict: None,
    canonical: false,
    dollar_schema: false,
    references: References::NotRecursive,
    composition: Composition {
        taken: &["allOf"],
        said: "`anyOf` and a limited `allOf`",
    },
    const_keyword: true,
    null: Null::TypeUnion,
    enums: Enums::Any,
    additional_properties: true,
    unevaluated_properties: true,
    prefix_items: true,
    boolean_schemas: true,
    formats: Formats::Only(FORMATS),
    keywords: Keywords::All,
    annotations: true,
};

/// The code execution tool whose code may call a tool declared `callable_from_code`, in
/// `allowed_callers` (programmatic tool calling; `docs/providers.md`).
pub(crate) const CODE_CALLER: &str = "code_execution_20260120";

/// An Anthropic tool: `{name, description, input_schema}`; a tool code may call also says
/// `allowed_callers: ["direct", "code_execution_20260120"]` (without the key, Anthropic lets
/// only the model call it).
pub(crate) fn tool_object(tool: &Exported<'_>) -> Value {
    let definition = tool.definition;
    let mut object = json!({
        "name": definition.name,
        "description": definition.description,
        "input_schema": tool.parameters,
    });
    if tool.callable_from_code {
        object["allowed_callers"] = json!(["direct", CODE_CALLER]);
    }
    object
}

/// A tool left out of the model's context until a search references it:
/// `defer_loading: true`.
pub(crate) fn deferred(mut tool: Value) -> Value {
    if let Value::Object(object) = &mut tool {
        object.insert("defer_loading".into(), Value::Bool(true));
    }
    tool
}

/// The `tool_result` of the search tool: a `tool_reference` block per tool it loads (and
/// nothing else, so that the API expands them into the tools' definitions).
pub(crate) fn search_result(call_id: &str, names: &[&str]) -> Value {
    let references: Vec<Value> = names
        .iter()
        .map(|name| json!({"type": "tool_reference", "tool_name": name}))
        .collect();
    json!({
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": references,
    })
}

/// The image types a `tool_result` may carry.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// A `tool_result` block; `is_error: true` for an error.
///
/// Its content is the text of a plain result or of an error; for a result of content, an
/// array of blocks: `text`, `image` (base64 source) for JPEG, PNG, GIF and WebP, `document`
/// for an embedded PDF, the text of an embedded text resource, and a text saying what was
/// left out for anything else (audio, resource links, other files and images); then the
/// structured value's JSON text, if there is one.
pub(crate) fn result(observation: &Observation) -> Value {
    let content = match observation.rich_items(block, text_block) {
        Some(items) => Value::Array(items),
        None => Value::String(text(observation)),
    };
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": observation.call_id(),
        "content": content,
    });
    if observation.is_error() {
        block["is_error"] = Value::Bool(true);
    }
    block
}

fn text_block(text: String) -> Value {
    json!({"type": "text", "text": text})
}

/// `{"type": kind, "source": {"type": "base64", "media_type", "data"}}`.
fn base64_block(kind: &str, media: &Media) -> Value {
    json!({
        "type": kind,
        "source": {"type": "base64", "media_type": media.mime_type(), "data": media.base64()},
    })
}

/// One block of a `tool_result`'s content.
fn block(content: &Content) -> Value {
    match content {
        Content::Text(text) => text_block(text.clone()),
        Content::Image(media) if media.is_one_of(&IMAGE_TYPES) => base64_block("image", media),
        Content::Resource(resource) => match resource.contents() {
            Embedded::Blob(media) if media.is_one_of(&["application/pdf"]) => {
                base64_block("document", media)
            }
            Embedded::Text { .. } | Embedded::Blob(_) => text_block(content.describe()),
        },
        Content::Image(_) | Content::Audio(_) | Content::ResourceLink(_) => {
            text_block(content.describe())
        }
    }
}

impl Reader {
    pub(crate) fn anthropic(&mut self, response: &Value) -> Parsed<()> {
        match response {
            Value::Object(object) if object.contains_key("content") => match &object["content"] {
                // A message written as a plain string has no tool calls.
                Value::String(_) => Ok(()),
                Value::Array(blocks) => self.anthropic_blocks(blocks, "/content"),
                other => Err(self.error(
                    "/content",
                    format!(
                        "expected an array of content blocks, found {}",
                        describe(other)
                    ),
                )),
            },
            Value::Object(object) if object.contains_key("type") => {
                self.anthropic_block(object, "")
            }
            Value::Array(blocks) => self.anthropic_blocks(blocks, ""),
            other => Err(self.error(
                "",
                format!(
                    "expected a message (with `content`), a list of content blocks or one block (with `type`), found {}",
                    describe(other)
                ),
            )),
        }
    }

    pub(crate) fn anthropic_blocks(&mut self, blocks: &[Value], pointer: &str) -> Parsed<()> {
        self.each_object(
            blocks,
            pointer,
            "a content block object",
            Self::anthropic_block,
        )
    }

    pub(crate) fn anthropic_block(
        &mut self,
        block: &Map<String, Value>,
        pointer: &str,
    ) -> Parsed<()> {
        // `server_tool_use` blocks are run by Anthropic; only `tool_use` is the client's.
        if !self.kind_is(block, pointer, "tool_use", false)? {
            return Ok(());
        }
        let id = self.string(block, pointer, "id", "the call id")?;
        let name = self.string(block, pointer, "name", "the tool name")?;
        let input = self.member(block, pointer, "input")?;
        let input = self.object(input, &format!("{pointer}/input"), "the arguments object")?;
        // Programmatic tool calling: a call made by code Claude wrote says so in `caller`.
        let call =
            ToolCall::new(id, name, Value::Object(input.clone())).with_caller(caller_of(block));
        self.calls.push(call);
        Ok(())
    }
}
