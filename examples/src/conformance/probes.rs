//! The conformance suite's protocol probes for MCP 2026-07-28: tools that exist only to
//! exercise the wire (SEP-2322 multi round-trip requests, SEP-2575's missing-capability
//! error), answered by [`Probes`] in front of the composed server.
//!
//! They are not the registry's tools: each one *chooses* what the client is asked (the keys
//! of `inputRequests`, an elicitation, a sampling request, `roots/list`) and reads the
//! `inputResponses` of the retry, which is the protocol itself rather than a tool's work. The
//! registry's own use of the same mechanism is its approval question (`registry-mcp`'s
//! `approval`), whose `requestState` is sealed by the same [`RequestStates`] these probes
//! seal theirs with. Every other request, and every other tool, goes to the composed server.
//!
//! | tool | round 1 | retry |
//! | --- | --- | --- |
//! | `test_input_required_result_elicitation` | asks `user_name` (elicitation) | `Hello, NAME!` |
//! | `test_input_required_result_sampling` | asks `capital_question` (sampling) | the model's text |
//! | `test_input_required_result_list_roots` | asks `client_roots` (`roots/list`) | how many roots |
//! | `test_input_required_result_request_state` | asks `confirm`, with a sealed state | `state-ok` |
//! | `test_input_required_result_multiple_inputs` | asks `user_name`, `greeting`, `client_roots` | all three |
//! | `test_input_required_result_multi_round` | asks `step1`; then `step2` | both answers |
//! | `test_input_required_result_tampered_state` | asks `confirm`, with a sealed state | `integrity-ok`; a changed state is -32602 |
//! | `test_input_required_result_capabilities` | asks only what the client declared | what it got |
//! | `test_missing_capability` | -32021 (HTTP 400) unless the client declared sampling | `Success` |
//! | `test_tool_with_task` (the registry's, `task = "required"`) | asks `user_name`, with a sealed state | the registry's task, started with `user_name` (SEP-2663's MRTR, then a task) |
//!
//! A retry without the answers asked for is asked again (a new `input_required`), never an
//! error; a `requestState` that does not open (altered, expired, used, another request's) is
//! JSON-RPC error -32602.

#![allow(deprecated)] // resource subscriptions and logging, passed on as `Composed` does

use std::borrow::Cow;
use std::time::Duration;

use registry_mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    CancelledNotificationParam, ClientCapabilities, CompleteRequestParams, CompleteResult,
    ContentBlock, CustomNotification, CustomRequest, CustomResult, DiscoverResult, ErrorCode,
    GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams, GetSkillResult,
    GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult, InputRequest,
    InputRequiredResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListSkillsResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult,
    ReadResourceRequestParams, ReadResourceResponse, ServerConfig, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use registry_mcp::rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use registry_mcp::rmcp::{ErrorData, RoleServer, ServerHandler};
use registry_mcp::{RequestDigest, RequestStates};
use serde_json::{Value, json};

/// Who the probes' states are bound to: the suite is the server's one loopback principal.
const PRINCIPAL: &str = "conformance";

/// The probes' tools, in the order they are listed (after the composed server's own).
const PROBES: [(&str, &str); 9] = [
    (
        "test_missing_capability",
        "Needs the client's sampling capability: -32021 without it",
    ),
    (
        "test_input_required_result_elicitation",
        "MRTR: asks the user's name (elicitation)",
    ),
    (
        "test_input_required_result_sampling",
        "MRTR: asks the client's model (sampling)",
    ),
    (
        "test_input_required_result_list_roots",
        "MRTR: asks for the client's roots",
    ),
    (
        "test_input_required_result_request_state",
        "MRTR: asks for a confirmation, with a sealed requestState",
    ),
    (
        "test_input_required_result_multiple_inputs",
        "MRTR: asks three things at once",
    ),
    (
        "test_input_required_result_multi_round",
        "MRTR: asks twice, one round after the other",
    ),
    (
        "test_input_required_result_tampered_state",
        "MRTR: refuses a requestState that was altered",
    ),
    (
        "test_input_required_result_capabilities",
        "MRTR: asks only for what the client declared",
    ),
];

/// The composed server `inner`, with the suite's protocol probes in front (see the module).
#[derive(Clone)]
pub struct Probes<H> {
    inner: H,
    states: RequestStates,
}

impl<H> std::fmt::Debug for Probes<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probes").finish_non_exhaustive()
    }
}

impl<H> Probes<H> {
    /// The probes in front of `inner`, their states sealed by `states`.
    pub fn new(inner: H, states: RequestStates) -> Probes<H> {
        Probes { inner, states }
    }
}

/// States that live a minute, at most 1000 remembered: enough for a suite run.
pub fn probe_states() -> RequestStates {
    RequestStates::new(Duration::from_secs(60), 1000)
}

/// An rmcp input request from its JSON form (`{"method": ..., "params": ...}`).
fn input(request: Value) -> Result<InputRequest, ErrorData> {
    serde_json::from_value(request).map_err(|error| {
        ErrorData::internal_error(
            format!("a probe's input request does not parse: {error}"),
            None,
        )
    })
}

fn elicit(message: &str, field: &str, kind: &str) -> Value {
    json!({ "method": "elicitation/create", "params": {
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { field: { "type": kind } },
            "required": [field]
        }
    } })
}

fn sample(text: &str, max_tokens: u32) -> Value {
    json!({ "method": "sampling/createMessage", "params": {
        "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
        "maxTokens": max_tokens
    } })
}

fn roots() -> Value {
    json!({ "method": "roots/list", "params": {} })
}

fn text(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text.into())]).into()
}

/// The field `field` of an accepted elicitation's content.
fn answered(response: Option<&Value>, field: &str) -> Option<String> {
    let content = response?.get("content")?.get(field)?;
    Some(match content {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}

/// A sampling result's text.
fn sampled(response: Option<&Value>) -> Option<String> {
    let content = response?.get("content")?;
    let content = match content {
        Value::Array(blocks) => blocks.first()?,
        block => block,
    };
    content.get("text")?.as_str().map(str::to_owned)
}

/// How many roots a `roots/list` result holds.
fn root_count(response: Option<&Value>) -> Option<usize> {
    Some(response?.get("roots")?.as_array()?.len())
}

impl<H: ServerHandler> Probes<H> {
    /// `input_required` asking `requests`, with `state` (sealed) if given.
    fn ask(
        &self,
        params: &CallToolRequestParams,
        requests: Vec<(&str, Value)>,
        state: Option<Value>,
    ) -> Result<CallToolResponse, ErrorData> {
        let requests = requests
            .into_iter()
            .map(|(key, request)| Ok((key.to_owned(), input(request)?)))
            .collect::<Result<_, ErrorData>>()?;
        let state = state.map(|state| {
            self.states
                .seal(PRINCIPAL, &digest(params), &state.to_string())
        });
        Ok(InputRequiredResult::new(Some(requests), state).into())
    }

    /// The payload of the retry's `requestState`: `Ok(None)` without one, an error (-32602)
    /// if it does not open.
    fn opened(&self, params: &CallToolRequestParams) -> Result<Option<Value>, ErrorData> {
        let Some(state) = &params.request_state else {
            return Ok(None);
        };
        let payload = self
            .states
            .open(state, PRINCIPAL, &digest(params))
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        Ok(serde_json::from_str(&payload).ok())
    }

    /// Answers a probe's `tools/call`; `None` for any other tool.
    fn probe(
        &self,
        params: &CallToolRequestParams,
        capabilities: Option<&ClientCapabilities>,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        let responses = params.input_responses.as_ref();
        let response = |key: &str| responses.and_then(|responses| responses.get(key));
        let name = params.name.as_ref();
        let answer = match name {
            "test_missing_capability" => {
                if capabilities.is_some_and(|capabilities| capabilities.sampling.is_some()) {
                    Ok(text("Success"))
                } else {
                    Err(ErrorData::new(
                        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                        "test_missing_capability needs the client's sampling capability; declare it in _meta",
                        Some(json!({ "requiredCapabilities": { "sampling": {} } })),
                    ))
                }
            }
            "test_input_required_result_elicitation" => {
                match answered(response("user_name"), "name") {
                    Some(name) => Ok(text(format!("Hello, {name}!"))),
                    None => self.ask(
                        params,
                        vec![("user_name", elicit("What is your name?", "name", "string"))],
                        None,
                    ),
                }
            }
            "test_input_required_result_sampling" => match sampled(response("capital_question")) {
                Some(reply) => Ok(text(format!("Sampling result: {reply}"))),
                None => self.ask(
                    params,
                    vec![(
                        "capital_question",
                        sample("What is the capital of France?", 100),
                    )],
                    None,
                ),
            },
            "test_input_required_result_list_roots" => match root_count(response("client_roots")) {
                Some(count) => Ok(text(format!("Found {count} root(s)"))),
                None => self.ask(params, vec![("client_roots", roots())], None),
            },
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => {
                let (kind, ok) = if name.ends_with("request_state") {
                    ("request-state", "state-ok: requestState validated")
                } else {
                    ("tamper-test", "integrity-ok: state verified")
                };
                match self.opened(params) {
                    Err(refused) => Err(refused),
                    Ok(Some(state))
                        if state["kind"] == kind
                            && answered(response("confirm"), "ok").as_deref() == Some("true") =>
                    {
                        Ok(text(ok))
                    }
                    Ok(_) => self.ask(
                        params,
                        vec![("confirm", elicit("Please confirm", "ok", "boolean"))],
                        Some(json!({ "kind": kind })),
                    ),
                }
            }
            "test_input_required_result_multiple_inputs" => {
                let all = (
                    answered(response("user_name"), "name"),
                    sampled(response("greeting")),
                    root_count(response("client_roots")),
                );
                match (self.opened(params), all) {
                    (Err(refused), _) => Err(refused),
                    (Ok(Some(state)), (Some(name), Some(greeting), Some(roots)))
                        if state["kind"] == "multiple-inputs" =>
                    {
                        Ok(text(format!(
                            "Name: {name}; Greeting: {greeting}; Roots: {roots}"
                        )))
                    }
                    _ => self.ask(
                        params,
                        vec![
                            ("user_name", elicit("What is your name?", "name", "string")),
                            ("greeting", sample("Generate a greeting", 50)),
                            ("client_roots", roots()),
                        ],
                        Some(json!({ "kind": "multiple-inputs" })),
                    ),
                }
            }
            "test_input_required_result_multi_round" => {
                let step1 = || {
                    self.ask(
                        params,
                        vec![(
                            "step1",
                            elicit("Step 1: What is your name?", "name", "string"),
                        )],
                        Some(json!({ "round": 1 })),
                    )
                };
                match self.opened(params) {
                    Err(refused) => Err(refused),
                    Ok(Some(state)) if state["round"] == 1 => {
                        match answered(response("step1"), "name") {
                            Some(name) => self.ask(
                                params,
                                vec![(
                                    "step2",
                                    elicit(
                                        "Step 2: What is your favorite color?",
                                        "color",
                                        "string",
                                    ),
                                )],
                                Some(json!({ "round": 2, "name": name })),
                            ),
                            None => step1(),
                        }
                    }
                    Ok(Some(state)) if state["round"] == 2 => {
                        match answered(response("step2"), "color") {
                            Some(color) => {
                                let name = state["name"].as_str().unwrap_or("friend");
                                Ok(text(format!(
                                    "Multi-round complete for {name} who likes {color}"
                                )))
                            }
                            None => step1(),
                        }
                    }
                    Ok(_) => step1(),
                }
            }
            "test_input_required_result_capabilities" => {
                if responses.is_some_and(|responses| !responses.is_empty()) {
                    let keys: Vec<&str> = responses
                        .into_iter()
                        .flat_map(|responses| responses.keys().map(String::as_str))
                        .collect();
                    return Some(Ok(text(format!(
                        "capabilities-ok: received {}",
                        keys.join(",")
                    ))));
                }
                let mut requests = Vec::new();
                if capabilities.is_some_and(|capabilities| capabilities.elicitation.is_some()) {
                    requests.push((
                        "elicit_input",
                        elicit("Elicitation input", "value", "string"),
                    ));
                }
                if capabilities.is_some_and(|capabilities| capabilities.sampling.is_some()) {
                    requests.push(("sample_input", sample("Sample request", 50)));
                }
                if requests.is_empty() {
                    Ok(text("No supported capabilities declared"))
                } else {
                    self.ask(
                        params,
                        requests,
                        Some(json!({ "kind": "capabilities-test" })),
                    )
                }
            }
            _ => return None,
        };
        Some(answer)
    }
}

/// The registry's tool whose first round (the user's name) is asked here, before the task.
const TASK_AFTER_INPUT: &str = "test_tool_with_task";

impl<H: ServerHandler> Probes<H> {
    /// The name the client gave for `test_tool_with_task`, with the state sealed for it:
    /// `None` to ask (again); an error (-32602) for a state that does not open.
    fn gathered(&self, params: &CallToolRequestParams) -> Result<Option<String>, ErrorData> {
        let state = self.opened(params)?;
        let responses = params.input_responses.as_ref();
        let name = answered(responses.and_then(|r| r.get("user_name")), "name");
        Ok(name.filter(|_| state == Some(json!(TASK_AFTER_INPUT))))
    }
}

/// The digest of a probe's call: its tool and arguments.
fn digest(params: &CallToolRequestParams) -> RequestDigest {
    let arguments = Value::Object(params.arguments.clone().unwrap_or_default());
    RequestDigest::of("tools/call", params.name.as_ref(), &arguments)
}

impl<H: ServerHandler> ServerHandler for Probes<H> {
    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        self.inner.discover(context).await
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.inner.initialize(request, context).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.inner.on_initialized(context).await;
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let modern = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let mut result = self.inner.list_tools(request, context).await?;
        // On the last page, and only for 2026-07-28 clients: the probes are of that revision.
        if modern && result.next_cursor.is_none() {
            for (name, description) in PROBES {
                let schema = json!({ "type": "object", "properties": {} });
                let schema = serde_json::from_value(schema).unwrap_or_default();
                result
                    .tools
                    .push(Tool::new(name, description, std::sync::Arc::new(schema)));
            }
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let capabilities = context.client_capabilities();
        if request.name == TASK_AFTER_INPUT
            && capabilities
                .as_ref()
                .is_some_and(ClientCapabilities::supports_tasks)
        {
            return match self.gathered(&request)? {
                // The name is gathered: the registry's tool starts as a task with it.
                Some(name) => {
                    let mut arguments = request.arguments.clone().unwrap_or_default();
                    arguments.insert("user_name".into(), Value::String(name));
                    let call =
                        CallToolRequestParams::new(TASK_AFTER_INPUT).with_arguments(arguments);
                    self.inner.call_tool(call, context).await
                }
                None => self.ask(
                    &request,
                    vec![("user_name", elicit("What is your name?", "name", "string"))],
                    Some(json!(TASK_AFTER_INPUT)),
                ),
            };
        }
        match self.probe(&request, capabilities.as_ref()) {
            Some(answer) => answer,
            None => self.inner.call_tool(request, context).await,
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.get_tool(name)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.set_level(request, context).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.inner.accepted_subscription_filter(requested)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.inner.listen(context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.inner.complete(request, context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.inner.get_prompt(request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.inner.list_prompts(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.inner.list_resources(request, context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.inner.list_resource_templates(request, context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.inner.read_resource(request, context).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.subscribe(request, context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.unsubscribe(request, context).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        self.inner.on_custom_request(request, context).await
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.inner.on_cancelled(notification, context).await;
    }

    async fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.inner.on_progress(notification, context).await;
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.inner.on_roots_list_changed(context).await;
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) {
        self.inner
            .on_custom_notification(notification, context)
            .await;
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.inner.get_task(request, context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.update_task(request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.cancel_task(request, context).await
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        self.inner.list_skills(request, context).await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.inner.get_skill(request, context).await
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        self.inner.read_resource_directory(request, context).await
    }
}
