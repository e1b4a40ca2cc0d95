//! The application half of the conformance server (`src/bin/conformance_server.rs`): the
//! resources, resource template, prompts and completion that the official MCP conformance
//! suite (`@modelcontextprotocol/conformance`, see `conformance/README.md`) asks a server for.
//!
//! It is plain rmcp code, as an application that already serves resources and prompts with
//! rmcp has it: a [`ServerHandler`] that knows nothing of tools. The binary composes it with
//! the registry's tools (`RegistryServer::with_app`), which then answers `tools/*` and
//! `logging/setLevel` and hands every other request to this handler.

pub mod probes;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use registry_mcp::rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, InputRequiredResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use registry_mcp::rmcp::service::RequestContext;
use registry_mcp::rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A 1x1 red PNG: the image of `test_image_content`, `test://static-binary` and
/// `test_prompt_with_image`.
pub const RED_PIXEL_PNG: &[u8] = include_bytes!("../fixtures/red-pixel.png");

/// Eight samples of 8 kHz, 8-bit mono silence, as a WAV file: the audio of
/// `test_audio_content`.
pub const SILENT_WAV: &[u8] = include_bytes!("../fixtures/silence.wav");

/// The PNG in base64, as MCP carries binary data.
fn png_base64() -> String {
    registry_core::content::Media::new(RED_PIXEL_PNG, "image/png").base64()
}

/// The conformance suite's resources, template, prompts and completion.
#[derive(Debug, Clone, Default)]
pub struct ConformanceApp {
    subscriptions: Arc<Mutex<BTreeSet<String>>>,
}

impl ConformanceApp {
    /// The URIs a client is subscribed to, in order.
    pub fn subscriptions(&self) -> Vec<String> {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }
}

/// An rmcp result from its JSON form: the fixtures below are the suite's own JSON.
fn from_json<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|error| {
        ErrorData::internal_error(format!("a fixture does not parse: {error}"), None)
    })
}

fn resource_not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(
        format!(
            "no resource {uri:?}; this server has test://static-text, test://static-binary and test://template/{{id}}/data"
        ),
        None,
    )
}

impl ServerHandler for ConformanceApp {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::default();
        capabilities.resources = Some(
            serde_json::from_value(json!({ "subscribe": true, "listChanged": false }))
                .unwrap_or_default(),
        );
        capabilities.prompts =
            Some(serde_json::from_value(json!({ "listChanged": false })).unwrap_or_default());
        capabilities.completions = Some(serde_json::Map::new());
        let mut config = ServerConfig::default();
        config.capabilities = capabilities;
        config
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        from_json(json!({ "resources": [
            {
                "uri": "test://static-text",
                "name": "static-text",
                "description": "A static text resource",
                "mimeType": "text/plain"
            },
            {
                "uri": "test://static-binary",
                "name": "static-binary",
                "description": "A static binary resource (a 1x1 PNG)",
                "mimeType": "image/png"
            },
            {
                "uri": "test://watched-resource",
                "name": "watched-resource",
                "description": "A resource a client may subscribe to",
                "mimeType": "text/plain"
            }
        ] }))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        from_json(json!({ "resourceTemplates": [{
            "uriTemplate": "test://template/{id}/data",
            "name": "template-data",
            "description": "Data for one id",
            "mimeType": "application/json"
        }] }))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => json!({
                "uri": uri,
                "mimeType": "text/plain",
                "text": "This is the content of the static text resource."
            }),
            "test://static-binary" => json!({
                "uri": uri,
                "mimeType": "image/png",
                "blob": png_base64()
            }),
            "test://watched-resource" => json!({
                "uri": uri,
                "mimeType": "text/plain",
                "text": "The watched resource."
            }),
            _ => {
                let id = uri
                    .strip_prefix("test://template/")
                    .and_then(|rest| rest.strip_suffix("/data"))
                    .filter(|id| !id.is_empty() && !id.contains('/'))
                    .ok_or_else(|| resource_not_found(uri))?;
                let data =
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                json!({ "uri": uri, "mimeType": "application/json", "text": data.to_string() })
            }
        };
        from_json::<ReadResourceResult>(json!({ "contents": [contents] })).map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        from_json(json!({ "prompts": [
            { "name": "test_simple_prompt", "description": "A prompt without arguments" },
            {
                "name": "test_prompt_with_arguments",
                "description": "A prompt with two arguments",
                "arguments": [
                    { "name": "arg1", "description": "First test argument", "required": true },
                    { "name": "arg2", "description": "Second test argument", "required": true }
                ]
            },
            {
                "name": "test_prompt_with_embedded_resource",
                "description": "A prompt that embeds a resource",
                "arguments": [
                    { "name": "resourceUri", "description": "URI of the resource to embed", "required": true }
                ]
            },
            { "name": "test_prompt_with_image", "description": "A prompt with an image" },
            {
                "name": "test_input_required_result_prompt",
                "description": "Asks the user for context first (an input_required result, protocol 2026-07-28)"
            }
        ] }))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let argument = |name: &str| -> Result<String, ErrorData> {
            request
                .arguments
                .as_ref()
                .and_then(|arguments| arguments.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    ErrorData::invalid_params(
                        format!("prompt {:?} needs the argument {name:?}", request.name),
                        None,
                    )
                })
        };
        let messages = match request.name.as_str() {
            "test_simple_prompt" => json!([
                { "role": "user", "content": { "type": "text", "text": "This is a simple prompt for testing." } }
            ]),
            "test_prompt_with_arguments" => {
                let (arg1, arg2) = (argument("arg1")?, argument("arg2")?);
                json!([{ "role": "user", "content": {
                    "type": "text",
                    "text": format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")
                } }])
            }
            "test_prompt_with_embedded_resource" => json!([
                { "role": "user", "content": { "type": "resource", "resource": {
                    "uri": argument("resourceUri")?,
                    "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."
                } } },
                { "role": "user", "content": { "type": "text", "text": "Please process the embedded resource above." } }
            ]),
            "test_input_required_result_prompt" => {
                let answer = request
                    .input_responses
                    .as_ref()
                    .and_then(|responses| responses.get("user_context"))
                    .and_then(|response| response.get("content")?.get("context")?.as_str());
                let Some(context) = answer else {
                    let question = from_json(json!({
                        "method": "elicitation/create",
                        "params": {
                            "mode": "form",
                            "message": "What context should the prompt use?",
                            "requestedSchema": {
                                "type": "object",
                                "properties": { "context": { "type": "string" } },
                                "required": ["context"]
                            }
                        }
                    }))?;
                    let requests = BTreeMap::from([("user_context".to_owned(), question)]);
                    return Ok(InputRequiredResult::new(Some(requests), None).into());
                };
                json!([{ "role": "user", "content": {
                    "type": "text",
                    "text": format!("Prompt with context: {context}")
                } }])
            }
            "test_prompt_with_image" => json!([
                { "role": "user", "content": { "type": "image", "data": png_base64(), "mimeType": "image/png" } },
                { "role": "user", "content": { "type": "text", "text": "Please analyze the image above." } }
            ]),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no prompt {other:?}"),
                    None,
                ));
            }
        };
        from_json::<GetPromptResult>(json!({ "messages": messages })).map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        const WORDS: [&str; 5] = ["paris", "park", "party", "test", "testing"];
        let typed = request.argument.value.to_lowercase();
        let values: Vec<&str> = WORDS
            .into_iter()
            .filter(|word| word.starts_with(&typed))
            .collect();
        from_json(json!({ "completion": {
            "values": values,
            "total": values.len(),
            "hasMore": false
        } }))
    }
}
