//! Anthropic (Messages), every shape and rule in one place: the schema rules, the tool object
//! (`input_schema`), the `tool_use` blocks of a response and the `tool_result` block that
//! answers one.

use serde_json::{Map, Value, json};

use crate::execute::observation::Observation;
use crate::present::provider::Exported;
use crate::present::provider::text;
use crate::present::provider::{
    Composition, Enums, Formats, Holder, Keywords, NameRule, Null, References, Rules, StrictFlag,
    ToolList, ToolObject,
};
use crate::present::reader::{Parsed, Reader, describe};
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

/// An Anthropic tool: `{name, description, input_schema}`.
pub(crate) fn tool_object(tool: &Exported<'_>) -> Value {
    let definition = tool.definition;
    json!({
        "name": definition.name,
        "description": definition.description,
        "input_schema": tool.parameters,
    })
}

/// A `tool_result` block; `is_error: true` for an error.
pub(crate) fn result(observation: &Observation) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": observation.call_id(),
        "content": text(observation),
    });
    if observation.is_error() {
        block["is_error"] = Value::Bool(true);
    }
    block
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
        for (index, block) in blocks.iter().enumerate() {
            let pointer = format!("{pointer}/{index}");
            let block = self.object(block, &pointer, "a content block object")?;
            self.anthropic_block(block, &pointer)?;
        }
        Ok(())
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
        self.calls
            .push(ToolCall::new(id, name, Value::Object(input.clone())));
        Ok(())
    }
}
