//! Export: the tool list in the exact JSON format each consumer takes.
//!
//! | profile | the list (the request's `tools`) | one tool |
//! | --- | --- | --- |
//! | MCP | the `tools` of a `tools/list` result | `{name, title?, description, inputSchema, outputSchema?, annotations, _meta}` |
//! | OpenAI Chat | `tools` | `{"type": "function", "function": {name, description, parameters, strict}}` |
//! | OpenAI Responses | `tools` | `{"type": "function", name, description, parameters, strict}` |
//! | Anthropic | `tools` | `{name, description, input_schema}` |
//! | Gemini | `tools`: one `Tool` holding every declaration | `{name, description, parameters?}` |
//!
//! Keys are sorted (serde_json's map is ordered by key) and tools come in name order, so an
//! export is byte-identical from call to call and process to process.
//!
//! An MCP tool carries its digest in `_meta` (`{"io.github.tool-registry/digest":
//! "sha256:..."}`, [`DIGEST_META_KEY`](crate::lockfile::DIGEST_META_KEY)): the SHA-256 of the tool
//! object without `_meta` ([`Tool::digest`]), which a client can pin and check against a
//! lock file ([`Registry::lock`](crate::Registry::lock)).

use serde_json::{Map, Value};

use crate::execute::tool::Tool;
use crate::present::provider::{Exported, anthropic, gemini, mcp, openai};
use crate::shared::profile::{CompatibilityError, Incompatibility, Profile};

/// The `_meta` key under which an MCP tool carries its digest ([`Tool::digest`](crate::Tool::digest) for
/// [`Profile::Mcp`]), in `run.export(Profile::Mcp)` and so in `registry-mcp`'s `tools/list`:
/// `{"_meta": {"io.github.tool-registry/digest": "sha256:..."}}`.
///
/// The key follows MCP's rules for `_meta` names: a reverse-DNS prefix of dot-separated labels
/// (letters, digits, hyphens; beginning with a letter, ending with a letter or digit) whose
/// second label is neither `modelcontextprotocol` nor `mcp` (those are reserved), a slash,
/// then an alphanumeric name.
pub const DIGEST_META_KEY: &str = "io.github.tool-registry/digest";

/// One tool object of `profile`'s tool list (for Gemini, one function declaration).
pub(crate) fn tool_object(profile: Profile, tool: &Exported<'_>) -> Value {
    match profile {
        Profile::Mcp => mcp::tool_object(tool),
        Profile::OpenAiChat { strict } => openai::chat_tool_object(tool, strict),
        Profile::OpenAiResponses { strict } => openai::responses_tool_object(tool, strict),
        Profile::Anthropic => anthropic::tool_object(tool),
        Profile::Gemini => gemini::tool_object(tool),
    }
}

/// The tool object of `tool` as `profile` exports it, before `_meta` is added: what its
/// digest is taken of. The problems when `profile` cannot express it.
pub(crate) fn unpinned_object(profile: Profile, tool: &Tool) -> Result<Value, &[Incompatibility]> {
    let parameters = tool.lowered(profile).as_ref().map_err(Vec::as_slice)?;
    Ok(tool_object(
        profile,
        &Exported {
            definition: tool.definition_ref(),
            parameters,
            hints: tool.settings().hints,
            output_schema: tool.output_schema(),
            callable_from_code: tool.settings().callable_from_code,
        },
    ))
}

/// The tool object of `tool` as `profile` exports it: for MCP, with its digest in `_meta`.
pub(crate) fn exported_object(profile: Profile, tool: &Tool) -> Result<Value, &[Incompatibility]> {
    let mut object = unpinned_object(profile, tool)?;
    match profile {
        Profile::Mcp => {
            if let (Value::Object(object), Ok(digest)) = (&mut object, tool.digest(profile)) {
                let mut meta = Map::new();
                meta.insert(DIGEST_META_KEY.into(), digest.into());
                object.insert("_meta".into(), Value::Object(meta));
            }
        }
        Profile::OpenAiChat { .. }
        | Profile::OpenAiResponses { .. }
        | Profile::Anthropic
        | Profile::Gemini => {}
    }
    Ok(object)
}

/// The whole tool list of `profile` as JSON text: `export_run(..)?.to_string()`, made from each
/// tool's object text, kept with the tool once made (Gemini's list, one object holding every
/// declaration, is made whole).
pub(crate) fn export_run_text<'a>(
    profile: Profile,
    tools: impl Iterator<Item = &'a Tool>,
) -> Result<String, CompatibilityError> {
    match profile {
        Profile::Gemini => return export_run(profile, tools).map(|list| list.to_string()),
        Profile::Mcp
        | Profile::OpenAiChat { .. }
        | Profile::OpenAiResponses { .. }
        | Profile::Anthropic => {}
    }
    let mut tools: Vec<&Tool> = tools.collect();
    tools.sort_by(|a, b| a.name().cmp(b.name()));
    let mut texts = Vec::with_capacity(tools.len());
    let mut problems = Vec::new();
    for tool in tools {
        let text = tool.text_cell(profile).get_or_init(|| {
            exported_object(profile, tool)
                .ok()
                .map(|object| object.to_string().into_boxed_str())
        });
        match text {
            Some(text) => texts.push(&**text),
            None => {
                if let Err(found) = unpinned_object(profile, tool) {
                    problems.extend(found.iter().cloned());
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(CompatibilityError(problems));
    }
    let mut list =
        String::with_capacity(2 + texts.iter().map(|text| text.len() + 1).sum::<usize>());
    list.push('[');
    for (at, text) in texts.into_iter().enumerate() {
        if at > 0 {
            list.push(',');
        }
        list.push_str(text);
    }
    list.push(']');
    Ok(list)
}

/// The whole tool list of `profile`, from its tool objects in name order.
pub(crate) fn tool_list(profile: Profile, tools: Vec<Value>) -> Value {
    match profile {
        Profile::Gemini => gemini::tool_list(tools),
        Profile::Mcp
        | Profile::OpenAiChat { .. }
        | Profile::OpenAiResponses { .. }
        | Profile::Anthropic => Value::Array(tools),
    }
}

/// The per-request allowlist of `profile` naming `names`, where the profile has one: the
/// value of OpenAI's `tool_choice`, or of Gemini's `toolConfig`. `None` for MCP and
/// Anthropic, and when `names` is empty (there are no tools to send, and OpenAI refuses a
/// `tool_choice` without tools).
pub(crate) fn allowlist(profile: Profile, names: &[&str]) -> Option<Value> {
    if names.is_empty() {
        return None;
    }
    match profile {
        Profile::OpenAiChat { .. } => Some(openai::chat_allowlist(names)),
        Profile::OpenAiResponses { .. } => Some(openai::responses_allowlist(names)),
        Profile::Gemini => Some(gemini::allowlist(names)),
        Profile::Mcp | Profile::Anthropic => None,
    }
}

/// The export of `tools` (in name order) for `profile`.
pub(crate) fn export_run<'a>(
    profile: Profile,
    tools: impl Iterator<Item = &'a Tool>,
) -> Result<Value, CompatibilityError> {
    let (list, problems) = export_all(profile, tools);
    if problems.is_empty() {
        Ok(list)
    } else {
        Err(CompatibilityError(problems))
    }
}

/// The export of every tool of `tools` that `profile` can express, and the problems of
/// those it cannot.
pub(crate) fn export_all<'a>(
    profile: Profile,
    tools: impl Iterator<Item = &'a Tool>,
) -> (Value, Vec<Incompatibility>) {
    let mut tools: Vec<&Tool> = tools.collect();
    tools.sort_by(|a, b| a.name().cmp(b.name()));
    let mut objects = Vec::new();
    let mut problems = Vec::new();
    for tool in tools {
        match exported_object(profile, tool) {
            Ok(object) => objects.push(object),
            Err(found) => problems.extend(found.iter().cloned()),
        }
    }
    (tool_list(profile, objects), problems)
}
