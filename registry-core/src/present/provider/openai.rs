//! OpenAI (Chat Completions and Responses), every shape and rule in one place: the schema
//! rules (strict mode and not, for each API), the tool object (`strict` as the profile says),
//! the `allowed_tools` allowlist, the calls in a response (`tool_calls` of the one choice's
//! message; `function_call` items) and the result message (`role: tool`;
//! `function_call_output`).

use serde_json::{Map, Value, json};

use crate::content::{Content, Embedded};
use crate::execute::observation::Observation;
use crate::present::provider::Exported;
use crate::present::provider::text;
use crate::present::provider::{
    Composition, Enums, Formats, Holder, Keywords, NameRule, Null, References, Rules, StrictFlag,
    StrictLimits, ToolList, ToolObject,
};
use crate::present::reader::{Parsed, Reader, call_from_text, caller_of, describe, is_message};

/// The string formats OpenAI takes (strict and not).
pub(crate) const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The bounds OpenAI takes (strict and not).
pub(crate) const BOUNDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// Keywords OpenAI refuses beyond composition: the bounds it does not take, and the like.
pub(crate) const REFUSED: &[&str] = &[
    "minLength",
    "maxLength",
    "pattern",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
    "propertyNames",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "prefixItems",
    "additionalItems",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
];

/// Strict mode's limits on one schema.
pub(crate) const STRICT_LIMITS: StrictLimits = StrictLimits {
    max_properties: 5000,
    max_nesting: 10,
    max_enum_values: 1000,
    max_chars: 120_000,
};

/// A Chat Completions tool object: the definition under `function`.
const CHAT_TOOL: ToolObject = ToolObject {
    holder: Holder::Member {
        key: "function",
        rule: "OpenAI Chat Completions: a tool holds its definition under `function`",
    },
    function_type: Some("OpenAI: a function tool has `type: \"function\"`"),
    schema_key: "parameters",
    schema_required: true,
    output_schema: false,
};

/// A Responses tool object: flat.
const RESPONSES_TOOL: ToolObject = ToolObject {
    holder: Holder::Tool,
    ..CHAT_TOOL
};

/// OpenAI's schema rules (Chat Completions), not strict: JSON Schema under `parameters`
/// without `$schema`, `$ref`s without siblings, `anyOf` only, OpenAI's formats and bounds;
/// at most 128 tools.
pub(crate) const CHAT: Rules = Rules {
    consumer: "OpenAI",
    names: NameRule {
        max_chars: 64,
        letter_first: false,
        punctuation: "_-",
        rule: "OpenAI: tool names match `^[a-zA-Z0-9_-]{1,64}$`",
    },
    max_tools: Some(128),
    list: ToolList::Objects,
    tool: CHAT_TOOL,
    strict_flag: StrictFlag::Says {
        value: false,
        rule: "OpenAI (non-strict): the tool must not say `strict: true`, or its schema must \
               follow strict mode's rules",
    },
    strict: None,
    canonical: false,
    dollar_schema: false,
    references: References::NoSiblings,
    composition: Composition {
        taken: &[],
        said: "`anyOf` only",
    },
    const_keyword: true,
    null: Null::TypeUnion,
    enums: Enums::Any,
    additional_properties: true,
    unevaluated_properties: false,
    prefix_items: false,
    boolean_schemas: true,
    formats: Formats::Only(FORMATS),
    keywords: Keywords::Refusing {
        bounds: BOUNDS,
        refused: REFUSED,
        said: "bounds: minimum, maximum, exclusive*, multipleOf, min/maxItems",
    },
    annotations: true,
};

/// OpenAI's strict mode (Chat Completions): the rules of [`CHAT`], and every object closed,
/// every property required (optional ones nullable), no `default`, no annotations, no
/// `true`/`false` schema, and [`STRICT_LIMITS`].
pub(crate) const CHAT_STRICT: Rules = Rules {
    consumer: "OpenAI strict mode",
    strict_flag: StrictFlag::Says {
        value: true,
        rule: "OpenAI strict mode: the tool must say `strict: true`",
    },
    strict: Some(STRICT_LIMITS),
    boolean_schemas: false,
    annotations: false,
    ..CHAT
};

/// OpenAI's schema rules for the Responses API, not strict: those of [`CHAT`] in a flat tool
/// object.
pub(crate) const RESPONSES: Rules = Rules {
    tool: RESPONSES_TOOL,
    ..CHAT
};

/// OpenAI's strict mode for the Responses API: those of [`CHAT_STRICT`] in a flat tool
/// object.
pub(crate) const RESPONSES_STRICT: Rules = Rules {
    tool: RESPONSES_TOOL,
    ..CHAT_STRICT
};

/// A Chat Completions tool: `{type: "function", function: {name, description, parameters, strict}}`.
pub(crate) fn chat_tool_object(tool: &Exported<'_>, strict: bool) -> Value {
    let definition = tool.definition;
    json!({
        "type": "function",
        "function": {
            "name": definition.name,
            "description": definition.description,
            "parameters": tool.parameters,
            "strict": strict,
        },
    })
}

/// A Responses tool: flat, `{type: "function", name, description, parameters, strict}`; a
/// tool code may call also says `allowed_callers: ["direct", "programmatic"]` (programmatic
/// tool calling; without the key only the model calls it).
pub(crate) fn responses_tool_object(tool: &Exported<'_>, strict: bool) -> Value {
    let definition = tool.definition;
    let mut object = json!({
        "type": "function",
        "name": definition.name,
        "description": definition.description,
        "parameters": tool.parameters,
        "strict": strict,
    });
    if tool.callable_from_code {
        object["allowed_callers"] = json!(["direct", "programmatic"]);
    }
    object
}

/// A Responses function marked for loading by tool search: `defer_loading: true`.
pub(crate) fn responses_deferred(mut function: Value) -> Value {
    if let Value::Object(object) = &mut function {
        object.insert("defer_loading".into(), Value::Bool(true));
    }
    function
}

/// A Responses namespace: `{type: "namespace", name, description, tools}`, the functions in
/// name order.
pub(crate) fn responses_namespace(name: &str, description: &str, functions: Vec<Value>) -> Value {
    json!({
        "type": "namespace",
        "name": name,
        "description": description,
        "tools": functions,
    })
}

/// The Responses tool search run by the application: `{type: "tool_search", execution:
/// "client", description, parameters}`; the model's searches come as `tool_search_call` items.
pub(crate) fn responses_tool_search(description: &str, parameters: &Value) -> Value {
    json!({
        "type": "tool_search",
        "execution": "client",
        "description": description,
        "parameters": parameters,
    })
}

/// The answer to a `tool_search_call`: a `tool_search_output` item with the definitions it
/// loads (`tools`: functions and namespaces, their functions `defer_loading: true`).
pub(crate) fn responses_search_output(call_id: &str, tools: Vec<Value>) -> Value {
    json!({
        "type": "tool_search_output",
        "execution": "client",
        "call_id": call_id,
        "status": "completed",
        "tools": tools,
    })
}

/// Chat Completions' `tool_choice` naming the allowed tools.
pub(crate) fn chat_allowlist(names: &[&str]) -> Value {
    let tools: Vec<Value> = names
        .iter()
        .map(|name| json!({"type": "function", "function": {"name": name}}))
        .collect();
    json!({
        "type": "allowed_tools",
        "allowed_tools": {"mode": "auto", "tools": tools},
    })
}

/// Responses' `tool_choice` naming the allowed tools.
pub(crate) fn responses_allowlist(names: &[&str]) -> Value {
    let tools: Vec<Value> = names
        .iter()
        .map(|name| json!({"type": "function", "name": name}))
        .collect();
    json!({"type": "allowed_tools", "mode": "auto", "tools": tools})
}

/// The image types `input_image` takes.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];

/// A Chat Completions result: a `tool` message, whose content is text only.
///
/// For a result of content, the text is one line or more per block: a text block's text, an
/// embedded text resource's text, and for anything else (images, audio, files, resource
/// links) a short text saying what it is, with its MIME type and size, never its bytes; then
/// the structured value's JSON text, if there is one.
pub(crate) fn chat_result(observation: &Observation) -> Value {
    let content = match observation.rich_items(Content::describe, |text| text) {
        Some(lines) => lines.join("\n"),
        None => text(observation),
    };
    json!({
        "role": "tool",
        "tool_call_id": observation.call_id(),
        "content": content,
    })
}

/// A Responses result: a `function_call_output` item.
///
/// For a result of content, `output` is an array: `input_text` for text blocks and embedded
/// text, `input_image` (a `data:` URL) for PNG, JPEG, WebP and GIF images, `input_file` (a
/// `data:` URL and a file name) for embedded files, and `input_text` saying what was left out
/// for anything else (audio, resource links, other images); then the structured value's JSON
/// text, if there is one.
pub(crate) fn responses_result(observation: &Observation) -> Value {
    let output = match observation.rich_items(responses_item, input_text) {
        Some(items) => Value::Array(items),
        None => Value::String(text(observation)),
    };
    json!({
        "type": "function_call_output",
        "call_id": observation.call_id(),
        "output": output,
    })
}

fn input_text(text: String) -> Value {
    json!({"type": "input_text", "text": text})
}

/// One item of a `function_call_output`'s `output` array.
fn responses_item(content: &Content) -> Value {
    match content {
        Content::Text(text) => input_text(text.clone()),
        Content::Image(media) if media.is_one_of(&IMAGE_TYPES) => {
            json!({"type": "input_image", "image_url": media.data_url()})
        }
        Content::Resource(resource) => match resource.contents() {
            Embedded::Blob(media) => json!({
                "type": "input_file",
                "filename": resource.file_name(),
                "file_data": media.data_url(),
            }),
            Embedded::Text { .. } => input_text(content.describe()),
        },
        Content::Image(_) | Content::Audio(_) | Content::ResourceLink(_) => {
            input_text(content.describe())
        }
    }
}

impl Reader {
    pub(crate) fn chat(&mut self, response: &Value) -> Parsed<()> {
        match response {
            Value::Object(object) if object.contains_key("choices") => {
                let choices = self.array(object, "", "choices", "an array of choices")?;
                self.single_choice(choices.len(), "/choices", "choice")?;
                for (index, choice) in choices.iter().enumerate() {
                    let pointer = format!("/choices/{index}");
                    let choice = self.object(choice, &pointer, "a choice object")?;
                    let message = self.member(choice, &pointer, "message")?;
                    let pointer = format!("{pointer}/message");
                    let message = self.object(message, &pointer, "an assistant message")?;
                    self.chat_message(message, &pointer)?;
                }
                Ok(())
            }
            Value::Object(object) if is_message(object) => self.chat_message(object, ""),
            Value::Array(tool_calls) => self.chat_tool_calls(tool_calls, ""),
            other => Err(self.error(
                "",
                format!(
                    "expected a chat completion (with `choices`), an assistant message (with `role` and `tool_calls`) or a `tool_calls` array, found {}",
                    describe(other)
                ),
            )),
        }
    }

    pub(crate) fn chat_message(
        &mut self,
        message: &Map<String, Value>,
        pointer: &str,
    ) -> Parsed<()> {
        match message.get("tool_calls") {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Array(tool_calls)) => {
                self.chat_tool_calls(tool_calls, &format!("{pointer}/tool_calls"))
            }
            Some(other) => Err(self.error(
                &format!("{pointer}/tool_calls"),
                format!("expected an array of tool calls, found {}", describe(other)),
            )),
        }
    }

    pub(crate) fn chat_tool_calls(&mut self, tool_calls: &[Value], pointer: &str) -> Parsed<()> {
        for (index, call) in tool_calls.iter().enumerate() {
            let pointer = format!("{pointer}/{index}");
            let call = self.object(call, &pointer, "a tool call object")?;
            // Only function calls are the registry's; a custom tool's call is the
            // application's own.
            if !self.kind_is(call, &pointer, "function", true)? {
                continue;
            }
            let id = self.string(call, &pointer, "id", "the call id")?;
            let function = self.member(call, &pointer, "function")?;
            let function_pointer = format!("{pointer}/function");
            let function = self.object(function, &function_pointer, "a function call object")?;
            let name = self.string(function, &function_pointer, "name", "the tool name")?;
            let arguments = self.string(
                function,
                &function_pointer,
                "arguments",
                "the arguments as JSON text",
            )?;
            self.calls.push(call_from_text(id, name, arguments));
        }
        Ok(())
    }

    pub(crate) fn single_choice(&self, count: usize, pointer: &str, what: &str) -> Parsed<()> {
        if count > 1 {
            return Err(self.error(
                pointer,
                format!(
                    "found {count} {what}s, which are alternatives, not calls to make together; pass the {what} to continue with (e.g. `{pointer}/0`)"
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn responses(&mut self, response: &Value) -> Parsed<()> {
        match response {
            Value::Object(object) if object.contains_key("output") => {
                let items = self.array(object, "", "output", "an array of output items")?;
                self.responses_items(items, "/output")
            }
            Value::Object(object) if object.contains_key("type") => {
                self.responses_item(object, "")
            }
            Value::Array(items) => self.responses_items(items, ""),
            other => Err(self.error(
                "",
                format!(
                    "expected a response (with `output`), a list of items or one item (with `type`), found {}",
                    describe(other)
                ),
            )),
        }
    }

    pub(crate) fn responses_items(&mut self, items: &[Value], pointer: &str) -> Parsed<()> {
        self.each_object(items, pointer, "an item object", Self::responses_item)
    }

    pub(crate) fn responses_item(
        &mut self,
        item: &Map<String, Value>,
        pointer: &str,
    ) -> Parsed<()> {
        // Input messages may leave out their type; every other item has one.
        if !item.contains_key("type") && item.contains_key("role") {
            return Ok(());
        }
        if self.searches.is_some() && self.kind_is(item, pointer, "tool_search_call", false)? {
            return self.responses_tool_search_call(item, pointer);
        }
        if !self.kind_is(item, pointer, "function_call", false)? {
            return Ok(());
        }
        let id = self.string(item, pointer, "call_id", "the call id")?;
        let name = self.string(item, pointer, "name", "the tool name")?;
        let arguments = self.string(item, pointer, "arguments", "the arguments as JSON text")?;
        // Programmatic tool calling: a call made by a program says so in `caller`.
        let call = call_from_text(id, name, arguments).with_caller(caller_of(item));
        self.calls.push(call);
        Ok(())
    }

    /// A `tool_search_call` item of a tool search the application runs (`execution:
    /// "client"`): its `call_id` and `arguments` (an object; JSON text is read too). One that
    /// OpenAI ran itself (`execution: "server"`) is skipped: it carries its own output.
    pub(crate) fn responses_tool_search_call(
        &mut self,
        item: &Map<String, Value>,
        pointer: &str,
    ) -> Parsed<()> {
        if item.get("execution").and_then(Value::as_str) == Some("server") {
            return Ok(());
        }
        let id = self
            .string(item, pointer, "call_id", "the call id")?
            .to_owned();
        let arguments = match item.get("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::String(text)) if text.trim().is_empty() => Value::Object(Map::new()),
            Some(Value::String(text)) => {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
            }
            Some(other) => other.clone(),
        };
        let position = self.calls.len();
        if let Some(searches) = &mut self.searches {
            searches.push((position, id, arguments));
        }
        Ok(())
    }
}
