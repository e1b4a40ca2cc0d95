//! Gemini, every shape and rule in one place: the schema rules, the function declaration (no
//! `parameters` for a function without any), the list wrapped in `functionDeclarations`, the
//! `VALIDATED` allowlist, the `functionCall` parts of a response and the `functionResponse`
//! part.

use serde_json::{Map, Value, json};

use crate::content::{Content, Embedded, Media};
use crate::execute::observation::Observation;
use crate::present::provider::Exported;
use crate::present::provider::{
    Composition, Enums, Formats, Holder, Keywords, NameRule, Null, References, Rules, StrictFlag,
    ToolList, ToolObject,
};
use crate::present::reader::{Parsed, Reader, describe};
use crate::resolve::call::ToolCall;

/// Gemini's string formats.
pub(crate) const STRING_FORMATS: &[&str] = &["enum", "date-time"];

/// Gemini's numeric formats.
pub(crate) const NUMBER_FORMATS: &[&str] = &["int32", "int64", "float", "double"];

/// The bounds Gemini takes.
pub(crate) const BOUNDS: &[&str] = &[
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
];

/// The fields of Gemini's `Schema` that the rules allow.
pub(crate) const FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "anyOf",
    "items",
    "default",
    "example",
    "propertyOrdering",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
];

/// Gemini's schema rules: the fields of its `Schema` (OpenAPI 3.0's) under `parameters`, left
/// out for a function without any: no `$schema`, `$defs` or `$ref` (everything inlined), no
/// `additionalProperties`, no `const` or `allOf`, `nullable: true`, string enums with
/// `format: "enum"`, formats by type, Gemini's bounds; at most 512 declarations.
pub(crate) const RULES: Rules = Rules {
    consumer: "Gemini",
    names: NameRule {
        max_chars: 64,
        letter_first: true,
        punctuation: "_.:-",
        rule: "Gemini: tool names start with a letter or `_`, then letters, digits, `_ . : -`, at \
               most 64 characters (128 in newer documentation)",
    },
    max_tools: Some(512),
    list: ToolList::Grouped {
        key: "functionDeclarations",
    },
    tool: ToolObject {
        holder: Holder::Tool,
        function_type: None,
        schema_key: "parameters",
        schema_required: false,
        output_schema: false,
    },
    strict_flag: StrictFlag::Ignored,
    strict: None,
    canonical: false,
    dollar_schema: false,
    references: References::Refused,
    composition: Composition {
        taken: &[],
        said: "`anyOf` only",
    },
    const_keyword: false,
    null: Null::Nullable,
    enums: Enums::Strings,
    additional_properties: false,
    unevaluated_properties: false,
    prefix_items: false,
    boolean_schemas: false,
    formats: Formats::ByType {
        strings: STRING_FORMATS,
        numbers: NUMBER_FORMATS,
        said: "`enum` and `date-time` for strings, int32, int64, float and double for numbers",
    },
    keywords: Keywords::Fields {
        bounds: BOUNDS,
        fields: FIELDS,
        said: "bounds: minimum, maximum, min/maxItems, min/maxLength",
    },
    annotations: false,
};

/// A function declaration: `{name, description, parameters?}`.
pub(crate) fn tool_object(tool: &Exported<'_>) -> Value {
    let definition = tool.definition;
    let mut declaration = Map::new();
    declaration.insert("name".into(), definition.name.clone().into());
    declaration.insert("description".into(), definition.description.clone().into());
    // Gemini rejects an object schema without properties ("parameters.properties:
    // should be non-empty for OBJECT type"); a function without parameters is
    // declared without `parameters`.
    if has_properties(tool.parameters) {
        declaration.insert("parameters".into(), tool.parameters.clone());
    }
    Value::Object(declaration)
}

/// Whether `schema` lists at least one property.
fn has_properties(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| !properties.is_empty())
}

/// The tool list: `[{functionDeclarations: [...]}]`, or nothing at all without tools.
pub(crate) fn tool_list(tools: Vec<Value>) -> Value {
    if tools.is_empty() {
        Value::Array(Vec::new())
    } else {
        json!([{ "functionDeclarations": tools }])
    }
}

/// `toolConfig` naming the allowed functions.
///
/// `VALIDATED`, not `ANY`: `ANY` forces a function call on every turn, so the model could
/// never answer in text; `VALIDATED` lets it choose, like OpenAI's `auto`, and limits its calls
/// to `allowedFunctionNames` (which Gemini takes only with `ANY` or `VALIDATED`).
pub(crate) fn allowlist(names: &[&str]) -> Value {
    json!({
        "functionCallingConfig": {"mode": "VALIDATED", "allowedFunctionNames": names},
    })
}

/// The MIME types a function response's `parts` take (multimodal function responses, Gemini 3
/// and later): images and PDF documents. (Plain text is listed in the guide too, but the
/// API's `FunctionResponseBlob` says text must not be sent as bytes: the stricter holds.)
const PART_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "application/pdf"];

/// A `functionResponse` part: the result as JSON (`output`), or the error text (`error`);
/// the call's `id` echoed only when the call had one.
///
/// For a result of content, the images (PNG, JPEG, WebP) and embedded PDF files go in the function response's `parts` as `inlineData` (MIME type and base64 data);
/// the text of every other block (text, embedded text, and a short text saying what was left
/// out for audio, resource links and other types), one line each, is `output` when there is
/// no structured value, `content` beside the structured value's `output` when there is one.
pub(crate) fn result(observation: &Observation) -> Value {
    let mut parts = Vec::new();
    let response = match (observation.error_text(), observation.rich()) {
        (Some(error), _) => json!({ "error": error }),
        (None, None) => json!({ "output": observation.json() }),
        (None, Some((blocks, value))) => {
            let mut lines = Vec::new();
            for block in blocks {
                match inline_data(block) {
                    Some(part) => parts.push(part),
                    None => lines.push(block.describe()),
                }
            }
            let mut response = Map::new();
            match value {
                Some(value) => {
                    response.insert("output".into(), value.clone());
                    if !lines.is_empty() {
                        response.insert("content".into(), lines.join("\n").into());
                    }
                }
                None if lines.is_empty() => {}
                None => {
                    response.insert("output".into(), lines.join("\n").into());
                }
            }
            Value::Object(response)
        }
    };
    let mut function_response = Map::new();
    function_response.insert("name".into(), observation.tool_name().into());
    function_response.insert("response".into(), response);
    if !parts.is_empty() {
        function_response.insert("parts".into(), Value::Array(parts));
    }
    if !observation.has_generated_id() {
        function_response.insert("id".into(), observation.call_id().into());
    }
    json!({ "functionResponse": function_response })
}

/// A block as a part of the function response, `{"inlineData": {"mimeType", "data"}}`, where
/// Gemini takes its type.
fn inline_data(content: &Content) -> Option<Value> {
    let media = match content {
        Content::Image(media) => media,
        Content::Resource(resource) => match resource.contents() {
            Embedded::Blob(media) => media,
            Embedded::Text { .. } => return None,
        },
        Content::Text(_) | Content::Audio(_) | Content::ResourceLink(_) => return None,
    };
    media.is_one_of(&PART_TYPES).then(|| part(media))
}

fn part(media: &Media) -> Value {
    json!({"inlineData": {"mimeType": media.mime_type(), "data": media.base64()}})
}

impl Reader {
    pub(crate) fn gemini(&mut self, response: &Value) -> Parsed<()> {
        match response {
            Value::Object(object)
                if object.contains_key("candidates") || object.contains_key("promptFeedback") =>
            {
                // A prompt that was blocked has no candidates.
                let Some(candidates) = object.get("candidates") else {
                    return Ok(());
                };
                let candidates = self.as_array(candidates, "/candidates", "an array of candidates")?;
                self.single_choice(candidates.len(), "/candidates", "candidate")?;
                for (index, candidate) in candidates.iter().enumerate() {
                    let pointer = format!("/candidates/{index}");
                    let candidate = self.object(candidate, &pointer, "a candidate object")?;
                    // A candidate stopped for safety or recitation may have no content.
                    match candidate.get("content") {
                        None | Some(Value::Null) => {}
                        Some(content) => {
                            let pointer = format!("{pointer}/content");
                            let content = self.object(content, &pointer, "a content object")?;
                            self.gemini_content(content, &pointer)?;
                        }
                    }
                }
                Ok(())
            }
            Value::Object(object) if object.contains_key("parts") => {
                self.gemini_content(object, "")
            }
            Value::Object(object) if object.contains_key("functionCall") => {
                self.gemini_part(object, "")
            }
            Value::Array(parts) => self.gemini_parts(parts, ""),
            other => Err(self.error(
                "",
                format!(
                    "expected a response (with `candidates`), a content (with `parts`), a list of parts or one part, found {}",
                    describe(other)
                ),
            )),
        }
    }

    pub(crate) fn gemini_content(
        &mut self,
        content: &Map<String, Value>,
        pointer: &str,
    ) -> Parsed<()> {
        match content.get("parts") {
            None | Some(Value::Null) => Ok(()),
            Some(parts) => {
                let pointer = format!("{pointer}/parts");
                let parts = self.as_array(parts, &pointer, "an array of parts")?;
                self.gemini_parts(parts, &pointer)
            }
        }
    }

    pub(crate) fn gemini_parts(&mut self, parts: &[Value], pointer: &str) -> Parsed<()> {
        self.each_object(parts, pointer, "a part object", Self::gemini_part)
    }

    pub(crate) fn gemini_part(&mut self, part: &Map<String, Value>, pointer: &str) -> Parsed<()> {
        let Some(call) = part.get("functionCall") else {
            return Ok(());
        };
        let pointer = format!("{pointer}/functionCall");
        let call = self.object(call, &pointer, "a function call object")?;
        let name = self.string(call, &pointer, "name", "the tool name")?;
        // A function without parameters may be called without `args`.
        let arguments = match call.get("args") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(args) => Value::Object(
                self.object(args, &format!("{pointer}/args"), "the arguments object")?
                    .clone(),
            ),
        };
        // The position of the call among the response's calls: stable for the same response.
        let position = self.calls.len();
        let call = match call.get("id") {
            None | Some(Value::Null) => {
                ToolCall::new(format!("call_{position}"), name, arguments).with_generated_id()
            }
            Some(_) => {
                let id = self.string(call, &pointer, "id", "the call id")?;
                ToolCall::new(id, name, arguments)
            }
        };
        self.calls.push(call);
        Ok(())
    }
}
