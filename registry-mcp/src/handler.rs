//! The MCP request handler: `tools/list`, `tools/call` and `logging/setLevel` served from a
//! client's run.

use std::sync::{Arc, OnceLock};

use registry_core::server::RunExt;
use registry_core::{
    ErrorKind, Observation, ToolCall,
    call::{CallOptions, Cancellation},
    deferred::SearchAnswer,
};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, Extensions,
    Implementation, InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::model::{CancelTaskParams, GetTaskParams, GetTaskResult, UpdateTaskParams};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use crate::approval;
use crate::clients::{Client, RunSlot, Search, Shared};
use crate::host::{McpHost, Session, level_of};
use crate::tokens::Principal;

/// The MCP server of one connection (a stdio process, an HTTP session or a stateless HTTP
/// request): an rmcp [`ServerHandler`] that serves `tools/list` and `tools/call` from a run of
/// the registry opened for the connection's subject.
///
/// Made by [`McpServer::handler`](crate::McpServer::handler) for a subject known up front
/// (stdio), or [`McpServer::http_handler`](crate::McpServer::http_handler) for one taken from
/// each request's authenticated [`Principal`].
///
/// - `tools/list`: the run's visible tools in MCP's format, in name order, in pages of
///   [`ServerOptions::page_size`](crate::ServerOptions::page_size) with an opaque cursor.
/// - `tools/call`: a [`ToolCall`] with the JSON-RPC request id as call id, resolved and run by
///   the run. An unknown tool and a tool this run may not see are both JSON-RPC error -32602
///   with the same message; every other outcome is a `CallToolResult`, `isError: true` with
///   the run's text for invalid arguments, failures, panics, timeouts, revoked tools, and the
///   gate's refusals (denied by a call policy, rate limited, unavailable), none of which ran.
/// - A call that needs a person's approval (a `needs_approval` tool, or a call policy's
///   `RequireApproval`) is asked about, if the client declared form elicitation: an
///   `elicitation/create` (on protocol 2026-07-28, the input request `approval` of an
///   `input_required` result) whose message is [`ApprovalRequest::question`] and whose form
///   is one required checkbox, `approve`. Accepted with `approve: true`, the call runs
///   ([`Run::decide`], the client's id as approver) with exactly the arguments shown, and
///   its result is the answer. Declined, cancelled, or accepted without `approve: true`, the
///   request is denied ("the user declined") and the answer is `isError: true` with the
///   denial's text. If no answer can be had (the client fails the request, the connection
///   closes, [`ServerOptions::approval_timeout`] passes, the call is cancelled), it is denied
///   too: nothing runs without a yes.
/// - On protocol 2026-07-28 the `input_required` result's `requestState` is sealed by the
///   server's [`RequestStates`](crate::RequestStates) (principal, the call's tool and
///   arguments, expiry, once); a retry whose state does not open is -32602 and runs nothing.
/// - A parameter mirrored into a header (`#[header("Region")]`, SEP-2243) must come with
///   `Mcp-Param-Region` holding the same value over HTTP on 2026-07-28: otherwise -32020,
///   checked against the tool the caller may call (a hidden tool stays unknown).
/// - A request's `_meta.traceparent` becomes the parent of the call's `tool_call` span, and
///   its audit event's `trace_id`.
/// - A client without form elicitation cannot ask anyone: the answer is `isError: true`,
///   saying that the tool needs a person's approval which this client cannot give and that
///   nothing was done, and the request is **denied** rather than left pending, so that it
///   cannot run later, unseen, after the model was told that nothing was done.
/// - Changes of the registry that alter what the subject may see are announced with
///   `notifications/tools/list_changed`: unscoped to connections that went through
///   `initialize`, and on `subscriptions/listen` streams that asked for them (2026-07-28).
/// - A running tool reaches the client through its
///   [`ToolContext`](registry_core::ToolContext): progress as `notifications/progress` (when
///   the request carried a progress token), logs as `notifications/message` (at or above the
///   level the client set with `logging/setLevel`, or [`ServerOptions::log_level`]), questions
///   as `elicitation/create`, sampling as `sampling/createMessage` (when the client declared
///   them). What the client cannot take goes to the run's host
///   ([`RegistryBuilder::host`](registry_core::RegistryBuilder::host); by default `tracing`
///   for progress and logs, "not supported" for questions and sampling).
/// - `notifications/cancelled` cancels a call: an async tool's future is dropped, a
///   synchronous one sees [`ToolContext::is_cancelled`](registry_core::ToolContext::is_cancelled);
///   the call is audited as cancelled and no result is sent.
/// - To serve resources, prompts or completions beside the tools, wrap it with an application's
///   own handler: [`RegistryServer::with_handler`].
///
/// [`ApprovalRequest::question`]: registry_core::approval::ApprovalRequest::question
/// [`Run::decide`]: registry_core::Run::decide
/// [`ServerOptions::approval_timeout`]: crate::ServerOptions::approval_timeout
/// [`ServerOptions::log_level`]: crate::ServerOptions::log_level
/// [`ServerOptions::deferred_loading`]: crate::ServerOptions::deferred_loading
/// [`ServerOptions::with_deferred_loading`]: crate::ServerOptions::with_deferred_loading
#[derive(Clone)]
pub struct RegistryServer {
    shared: Arc<Shared>,
    binding: Binding,
    /// What this connection chose (its log level).
    session: Arc<Session>,
}

#[derive(Clone)]
enum Binding {
    /// Every request acts for this client.
    Fixed(Arc<Client>),
    /// Requests act for the principal the HTTP layer found; the first one binds the handler
    /// (an HTTP session) to it.
    FromRequest(Arc<OnceLock<(Principal, Arc<Client>)>>),
}

impl std::fmt::Debug for RegistryServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let client = match &self.binding {
            Binding::Fixed(client) => Some(client.id.clone()),
            Binding::FromRequest(bound) => bound.get().map(|(_, client)| client.id.clone()),
        };
        f.debug_struct("RegistryServer")
            .field("client", &client)
            .finish_non_exhaustive()
    }
}

impl RegistryServer {
    pub(crate) fn fixed(shared: Arc<Shared>, client: Arc<Client>) -> Self {
        RegistryServer {
            shared,
            binding: Binding::Fixed(client),
            session: Arc::default(),
        }
    }

    pub(crate) fn from_request(shared: Arc<Shared>) -> Self {
        RegistryServer {
            shared,
            binding: Binding::FromRequest(Arc::new(OnceLock::new())),
            session: Arc::default(),
        }
    }

    /// The client a request acts for.
    pub(crate) fn client(&self, extensions: &Extensions) -> Result<Arc<Client>, ErrorData> {
        let bound = match &self.binding {
            Binding::Fixed(client) => return Ok(client.clone()),
            Binding::FromRequest(bound) => bound,
        };
        let principal = extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
            .or_else(|| extensions.get::<Principal>())
            .ok_or_else(|| ErrorData::invalid_request("the request is not authenticated", None))?;
        if let Some((opener, bound)) = bound.get()
            && opener.same_as(principal)
            && bound.subject == *principal.subject()
        {
            // The session's own principal with the same scopes: its client, without a lookup.
            return Ok(bound.clone());
        }
        let client = self
            .shared
            .client(principal.issuer(), principal.id(), principal.subject());
        let (opener, bound) = bound.get_or_init(|| (principal.clone(), client.clone()));
        // A session stays with the principal (and tenant) that opened it; a new token of
        // theirs, with other scopes, may carry it on, served from the run of its own scopes.
        if opener.same_as(principal) && bound.subject.tenant() == client.subject.tenant() {
            Ok(client)
        } else {
            tracing::warn!(
                session_of = ?bound.id,
                presented = ?client.id,
                "refused a request made with another principal's token than the session's"
            );
            Err(ErrorData::invalid_request(
                "this session was opened with another principal's token",
                None,
            ))
        }
    }

    fn list(&self, cursor: Option<&str>, client: &Client) -> Result<ListToolsResult, ErrorData> {
        let (slot, offset) = match cursor {
            None => (client.relist(&self.shared), 0),
            Some(cursor) => {
                let slot = client.current();
                let offset = parse_cursor(cursor, &slot)?;
                (slot, offset)
            }
        };
        let tools = slot.tools(&self.shared.options).map_err(|error| {
            tracing::error!(client = ?client.id, %error, "the tool list cannot be exported to MCP");
            ErrorData::internal_error("the tool list cannot be exported", None)
        })?;
        if offset > tools.len() || (offset == tools.len() && offset > 0) {
            return Err(invalid_cursor());
        }
        let end = (offset + self.shared.options.page_size).min(tools.len());
        let mut result = ListToolsResult::with_all_items(tools[offset..end].to_vec());
        if end < tools.len() {
            result.next_cursor = Some(cursor_for(&slot, end));
        }
        // The list depends on who asks: no shared cache may serve it to anyone else.
        result.cache_scope = Some(CacheScope::Private);
        let ttl = self.shared.options.list_ttl.as_millis();
        result.ttl_ms = Some(u64::try_from(ttl).unwrap_or(u64::MAX));
        Ok(result)
    }

    /// The registry's capabilities: tools (with `listChanged`) and logging.
    pub(crate) fn capabilities() -> ServerCapabilities {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks()
            .build();
        // Deprecated by SEP-2577 in rmcp; still how tools' logs reach clients before
        // protocol 2026-07-28.
        #[allow(deprecated)]
        {
            capabilities.logging = Some(JsonObject::new());
        }
        capabilities
    }

    /// If the server loads tools on demand and `request` calls the search tool, its answer:
    /// the query embedded first, if the registry has an embedder, on a blocking thread and
    /// outside the client's lock on its runs ([`Shared::embed`]); then answered by the run
    /// calls are served from. The client listing its tools again meanwhile (a new run, maybe
    /// of a new snapshot) has the query embedded again for it, at most [`SEARCH_ATTEMPTS`]
    /// times in all.
    async fn search(
        &self,
        client: &Client,
        id: String,
        request: &CallToolRequestParams,
    ) -> Option<SearchAnswer> {
        let options = &self.shared.options;
        let (mut pending, mut embedding) = match client.search(options, id, request)? {
            Search::Answered(answer) => return Some(answer),
            Search::Embed(pending, embedding) => (pending, embedding),
        };
        let mut attempt = 1;
        loop {
            let embedded = self.shared.embed(embedding).await;
            let last = attempt >= SEARCH_ATTEMPTS;
            match client.finish_search(options, pending, embedded.as_ref(), last) {
                Ok(answer) => return answer,
                Err(again) => (pending, embedding) = again,
            }
            attempt += 1;
        }
    }

    /// Runs a `tools/call`: the run's answer, with the call's progress, logs and questions
    /// going to the client and the client's `notifications/cancelled` cancelling it.
    async fn call(
        &self,
        client: &Client,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let slot = client.current();
        let options = &self.shared.options;
        // SEP-2243: a visible tool's mirrored parameters must match their headers.
        if let Some(definition) = slot
            .run
            .definitions()
            .find(|d| d.name == request.name.as_ref())
        {
            let parts = context.extensions.get::<axum::http::request::Parts>();
            crate::headers::check(definition, request.arguments.as_ref(), parts)?;
        }
        if request.request_state.is_none()
            && let Some(answer) = self.search(client, context.id.to_string(), &request).await
        {
            let result = serde_json::from_value::<CallToolResult>(answer.message().clone())
                .map_err(|error| {
                    tracing::error!(client = ?client.id, %error, "a search answer is not a CallToolResult");
                    ErrorData::internal_error("the search answer cannot be sent", None)
                })?;
            if answer.export_changed() {
                tracing::debug!(client = ?client.id, loaded = ?answer.loaded(), "a search loaded tools; announcing it");
                client.announce().await;
            }
            return Ok(CallToolResponse::from(result));
        }
        if let Some(refused) = crate::tasks::refused_without_extension(&slot, &request, context) {
            return Err(refused);
        }
        if request.request_state.is_none() && crate::tasks::wanted(&slot, &request, context) {
            return crate::tasks::start(&slot, request, context, crate::tasks::options(options))
                .await
                .or_else(|refused| call_result(&refused).map(CallToolResponse::from));
        }
        let (host, flush) = McpHost::new(context, &self.session, options, slot.run.host());
        // A synchronous tool sees the request's cancellation through the probe as it runs;
        // `cancel_on` trips the cancellation when the request is cancelled, for async tools
        // and deadlines. No task relays it.
        let token = context.ct.clone();
        let cancellation = Cancellation::observing(move || token.is_cancelled());
        let mut call_options = CallOptions::new()
            .with_host(host)
            .with_cancellation(cancellation.clone())
            .with_elicit_timeout(options.approval_timeout)
            .with_sample_timeout(options.sampling_timeout);
        if let Some(trace) = crate::trace::of(&context.meta) {
            call_options = call_options.with_trace(trace);
        }
        let response = if let Some(state) = request.request_state.clone() {
            Box::pin(cancel_on(
                &context.ct,
                &cancellation,
                approval::resume(client, request, &state, &self.shared.states, call_options),
            ))
            .await
        } else {
            let origin = approval::digest_of(&request);
            let arguments = Value::Object(request.arguments.unwrap_or_default());
            let call = ToolCall::new(context.id.to_string(), request.name.as_ref(), arguments);
            // A call the HTTP edge made already, which waits for an approval (`direct.rs`).
            let decided = context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<crate::direct::Decided>())
                .filter(|decided| decided.run == slot.seq);
            let observation = match decided {
                Some(decided) => decided.observation.clone(),
                None => {
                    cancel_on(
                        &context.ct,
                        &cancellation,
                        slot.run.call_with(call, call_options.clone()),
                    )
                    .await
                }
            };
            if observation.error_kind() == Some(ErrorKind::Cancelled) {
                // rmcp sends nothing for a cancelled request; this error is dropped too.
                tracing::info!(client = ?client.id, call = ?context.id.to_string(), "the client cancelled the call");
                return Err(ErrorData::invalid_request("the call was cancelled", None));
            }
            match observation.approval() {
                Some(pending) => {
                    Box::pin(approval::ask(
                        client,
                        slot.clone(),
                        pending,
                        context,
                        &self.shared,
                        call_options,
                        &origin,
                    ))
                    .await
                }
                None => call_result(&observation).map(CallToolResponse::from),
            }
        };
        flush.wait().await;
        response
    }
}

/// Trips `cancellation` when `ct` is cancelled (the client's `notifications/cancelled`), from a
/// task of its own: a synchronous tool running on the call's task cannot see the request's
/// token, but it can check the flag. Returns once that task listens, so that a tool that then
/// blocks this worker thread cannot keep it from ever starting.
/// `call`'s output; if `token` is cancelled meanwhile, `cancellation` is tripped (once) and
/// `call` polled on until it ends, as the run decides (an async tool's future dropped, a
/// synchronous one's result discarded).
async fn cancel_on<F: std::future::Future>(
    token: &tokio_util::sync::CancellationToken,
    cancellation: &Cancellation,
    call: F,
) -> F::Output {
    let mut cancelled = std::pin::pin!(token.cancelled());
    let mut call = std::pin::pin!(call);
    let mut tripped = false;
    std::future::poll_fn(|cx| {
        if !tripped && cancelled.as_mut().poll(cx).is_ready() {
            tripped = true;
            cancellation.cancel();
        }
        call.as_mut().poll(cx)
    })
    .await
}

/// Sends `notifications/tools/list_changed` on a `subscriptions/listen` stream each time what
/// `client` may see changes, until the stream or the client is gone.
pub(crate) async fn announce_tool_changes(client: &Client, sink: &SubscriptionSink) {
    let mut changes = client.changes();
    while changes.changed().await.is_ok() {
        if let Err(error) = sink.notify_tool_list_changed().await {
            tracing::debug!(client = ?client.id, %error, "subscription closed");
            return;
        }
    }
}

impl ServerHandler for RegistryServer {
    fn get_info(&self) -> ServerConfig {
        let options = &self.shared.options;
        let mut config = ServerConfig::new(RegistryServer::capabilities())
            .with_server_info(Implementation::new(&options.name, &options.version));
        if let Some(instructions) = &options.instructions {
            config = config.with_instructions(instructions);
        }
        config
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // Binds an HTTP session to the token that opened it.
        self.client(&context.extensions)?;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let client = self.client(&context.extensions)?;
        let cursor = request.as_ref().and_then(|params| params.cursor.as_deref());
        self.list(cursor, &client)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let client = self.client(&context.extensions)?;
        self.call(&client, request, &context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let client = self.client(&context.extensions)?;
        crate::tasks::get(&client, request).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let client = self.client(&context.extensions)?;
        crate::tasks::cancel(&client, request).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let client = self.client(&context.extensions)?;
        crate::tasks::update(&client, request).await
    }

    #[allow(deprecated)] // logging: deprecated by SEP-2577 in rmcp, still in the protocol
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let client = self.client(&context.extensions)?;
        let level = level_of(request.level);
        tracing::debug!(client = ?client.id, %level, "the client set its log level");
        self.session.set_log_level(level);
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        match self.client(&context.extensions) {
            Ok(client) => {
                tracing::debug!(client = ?client.id, "client initialized");
                client.add_peer(context.peer);
            }
            Err(error) => tracing::debug!(error = ?error.message, "initialized without a client"),
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let tools = SubscriptionFilter::builder().tools_list_changed().build();
        Some(requested.intersection(&tools))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let client = self.client(&context.request_context().extensions)?;
        if context.accepted().tools_list_changed == Some(true) {
            tokio::select! {
                () = context.cancelled() => {}
                () = announce_tool_changes(&client, context.sink()) => {}
            }
        } else {
            context.cancelled().await;
        }
        Ok(())
    }
}

/// The MCP answer to an observation: JSON-RPC error -32602 for an unknown or hidden tool (the
/// same message for both, so a hidden tool's existence does not leak), otherwise the
/// `CallToolResult` of the MCP profile, its blocks of content as rmcp's types
/// ([`content::call_tool_result`]).
///
/// [`content::call_tool_result`]: crate::content::call_tool_result
///
/// | kind | answer |
/// | --- | --- |
/// | none (success) | `CallToolResult`: text, or the blocks of content; `structuredContent` with an output schema |
/// | `UnknownTool`, `NotAllowed` | JSON-RPC error -32602, the run's text |
/// | `InvalidArguments`, `ExecutionFailed`, `Panicked`, `TimedOut`, `Revoked` | `isError: true`, the run's text |
/// | `Denied`, `RateLimited`, `Unavailable` | `isError: true`, the run's text (nothing ran) |
/// | `ApprovalRequired` | asked first (see [`RegistryServer`]); if it ever gets here, `isError: true` |
///
/// A kind added to `ErrorKind` later (it is non-exhaustive) is an `isError` result too.
pub(crate) fn call_result(observation: &Observation) -> Result<CallToolResult, ErrorData> {
    match observation.error_kind() {
        Some(ErrorKind::UnknownTool | ErrorKind::NotAllowed) => {
            let text = observation
                .error_text()
                .unwrap_or("unknown tool")
                .to_owned();
            return Err(ErrorData::invalid_params(text, None));
        }
        None
        | Some(
            ErrorKind::InvalidArguments
            | ErrorKind::ExecutionFailed
            | ErrorKind::Panicked
            | ErrorKind::TimedOut
            | ErrorKind::Revoked
            | ErrorKind::Denied
            | ErrorKind::ApprovalRequired
            | ErrorKind::RateLimited
            | ErrorKind::Unavailable,
        ) => {}
        // `ErrorKind` is `#[non_exhaustive]`, so a match on it outside registry-core needs this
        // arm: a kind added later is an error the model reads, like those above.
        Some(_) => {}
    }
    Ok(crate::content::call_tool_result(observation))
}

/// How many times a search's query is embedded at most, when the client's run changes while
/// it is (see `RegistryServer::search`).
const SEARCH_ATTEMPTS: u32 = 3;

/// A cursor naming `offset` in the tool list of `slot`'s run: the run's random cursor name
/// and the offset. Its format is private: clients pass it back as they got it.
fn cursor_for(slot: &RunSlot, offset: usize) -> String {
    format!("{:032x}.{:x}", slot.cursor_id, offset)
}

/// The offset `cursor` names in the tool list of `slot`'s run: an error for a cursor that is
/// not one, or is of another run (stale, or forged).
fn parse_cursor(cursor: &str, slot: &RunSlot) -> Result<usize, ErrorData> {
    let (run, offset) = cursor.split_once('.').ok_or_else(invalid_cursor)?;
    if run.len() != 32 {
        return Err(invalid_cursor());
    }
    let run = u128::from_str_radix(run, 16).map_err(|_| invalid_cursor())?;
    let offset = usize::from_str_radix(offset, 16).map_err(|_| invalid_cursor())?;
    if run != slot.cursor_id {
        return Err(ErrorData::invalid_params(
            "the cursor is stale: the tool list changed; list the tools again without a cursor",
            None,
        ));
    }
    Ok(offset)
}

fn invalid_cursor() -> ErrorData {
    ErrorData::invalid_params(
        "invalid cursor; list the tools again without a cursor",
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use registry_core::approval::ApprovalRequest;
    use registry_core::call::CallOptions;

    /// The size of the future `make` returns, without making one.
    fn output_size<Args, Fut>(_make: &impl Fn(Args) -> Fut) -> usize {
        std::mem::size_of::<Fut>()
    }

    type Context = RequestContext<RoleServer>;

    #[test]
    fn a_tools_call_carries_the_rare_paths_boxed() {
        // rmcp spawns each request's `handle_request` future as a task, moving it there, and
        // it lives as long as the call: a `tools/call` whose future inlined an approval asked
        // or resumed (a person's answer, rare) was 13,088 bytes, and 15,088 with rmcp's,
        // against 864 and 3,368 for a bare rmcp tool. Boxed, they cost an allocation only when
        // taken, and the call's future is the size of its common path.
        let call_tool = output_size(&|(server, request, context): (
            &'static RegistryServer,
            CallToolRequestParams,
            Context,
        )| { server.call_tool(request, context) });
        let ask = output_size(&|(client, slot, request, context, shared, call, origin): (
            &'static Client,
            Arc<RunSlot>,
            &'static ApprovalRequest,
            &'static Context,
            &'static Shared,
            CallOptions,
            &'static crate::request_state::RequestDigest,
        )| {
            approval::ask(client, slot, request, context, shared, call, origin)
        });
        let resume = output_size(&|(client, params, state, states, call): (
            &'static Client,
            CallToolRequestParams,
            &'static str,
            &'static crate::RequestStates,
            CallOptions,
        )| approval::resume(client, params, state, states, call));
        eprintln!("call_tool {call_tool} bytes; approval::ask {ask}, approval::resume {resume}");
        for (path, size) in [("approval::ask", ask), ("approval::resume", resume)] {
            assert!(
                call_tool < size,
                "call_tool {call_tool} bytes, {path} {size}: inlined again?"
            );
        }
    }
}
