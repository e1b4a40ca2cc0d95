//! One connection to an upstream MCP server with rmcp's client: connecting over a child
//! process's stdio or streamable HTTP, listing its tools, forwarding a call (its progress
//! relayed back, its cancellation relayed forward), and its result as registry content.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use registry_core::ToolContext;
use registry_core::call::ToolError;
use registry_core::content::{Content, ResourceLink, ToolOutput};
use registry_core::definition::Outcome;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::Notify;

use super::child::{self, Workdir};
use super::config::{Transport, UpstreamConfig};

/// The most tools taken from one upstream.
pub const MAX_TOOLS_PER_UPSTREAM: usize = 1000;

/// The most pages of one upstream's `tools/list`: past them the listing is refused.
pub const MAX_LIST_PAGES: usize = 64;

/// The most bytes (as JSON) of the tools taken from one listing: past them the listing is
/// refused.
pub const MAX_LISTING_BYTES: usize = 8 << 20;

/// The most bytes (as JSON: name, title, description, schemas, annotations) of one upstream
/// tool: a larger tool is left out of the listing, and logged.
pub const MAX_TOOL_BYTES: usize = 256 << 10;

/// The most characters of an upstream's progress message relayed (escaped, then cut).
const MAX_PROGRESS_MESSAGE: usize = 256;

/// The least time between two progress notifications relayed for one call: those in
/// between are coalesced, the latest relayed next (or when the call ends).
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// The most characters of an upstream's error text kept for the log, or of a tool's own
/// error (`isError`) passed on.
const MAX_ERROR_TEXT: usize = 2048;

/// The most calls forwarded to one upstream at once whose progress is relayed.
const MAX_PROGRESS_ROUTES: usize = 4096;

/// What an upstream tells us without being asked: its tool list changed, a call progressed.
#[derive(Clone, Default)]
pub(crate) struct Events {
    pub(crate) changed: Arc<Notify>,
    progress: Arc<Mutex<Routes>>,
}

/// Where each forwarded call's progress goes, and what arrived before its route was known
/// (the token is known only once the request is sent).
#[derive(Default)]
struct Routes {
    routes: HashMap<ProgressToken, Route>,
    early: std::collections::VecDeque<ProgressNotificationParam>,
}

/// One forwarded call's progress: where it goes, when it was last relayed, and the latest
/// one not relayed yet (coalesced), relayed by a timer of its own once the interval is over.
///
/// Relayed in order: a progress no greater than one taken before (notifications are handled
/// concurrently, so they may come out of order) is dropped, and every relay happens under the
/// routes' lock, so two relays of one call never cross.
struct Route {
    ctx: ToolContext,
    last: Option<Instant>,
    /// The greatest progress taken (relayed or pending).
    highest: Option<f64>,
    pending: Option<ProgressNotificationParam>,
    /// Whether a timer will relay `pending`.
    timer: bool,
}

impl Route {
    fn new(ctx: ToolContext) -> Route {
        Route {
            ctx,
            last: None,
            highest: None,
            pending: None,
            timer: false,
        }
    }

    /// `params` relayed now if the last one was relayed long enough ago; otherwise kept as
    /// the pending one, in place of any earlier. Dropped if it is no greater than a progress
    /// taken before.
    fn take(&mut self, params: ProgressNotificationParam) -> Option<ProgressNotificationParam> {
        if self
            .highest
            .is_some_and(|highest| params.progress.partial_cmp(&highest) != Some(Ordering::Greater))
        {
            return None;
        }
        self.highest = Some(params.progress);
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < PROGRESS_INTERVAL)
        {
            self.pending = Some(params);
            return None;
        }
        self.last = Some(now);
        self.pending = None;
        Some(params)
    }

    /// The pending progress, if any, as relayed now.
    fn flush(&mut self) -> Option<ProgressNotificationParam> {
        let pending = self.pending.take()?;
        self.last = Some(Instant::now());
        Some(pending)
    }
}

/// Relays, once the interval since the last one is over, the progress of the call `token`
/// held back: at most one such timer a call.
fn relay_later(progress: Arc<Mutex<Routes>>, token: ProgressToken, last: Option<Instant>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let mut at = last.map_or_else(Instant::now, |last| last + PROGRESS_INTERVAL);
    runtime.spawn(async move {
        loop {
            tokio::time::sleep_until(at.into()).await;
            {
                let mut routes = progress.lock().unwrap_or_else(PoisonError::into_inner);
                let Some(route) = routes.routes.get_mut(&token) else {
                    return;
                };
                // One relayed meanwhile (the interval was over when it came): wait again.
                if let Some(last) = route.last
                    && last.elapsed() < PROGRESS_INTERVAL
                    && route.pending.is_some()
                {
                    at = last + PROGRESS_INTERVAL;
                    continue;
                }
                route.timer = false;
                if let Some(params) = route.flush() {
                    relay(&route.ctx, params);
                }
            }
            return;
        }
    });
}

/// The most early progress notifications kept.
const MAX_EARLY_PROGRESS: usize = 64;

fn relay(ctx: &ToolContext, params: ProgressNotificationParam) {
    ctx.progress(
        params.progress,
        params.total,
        params.message.unwrap_or_default(),
    );
}

/// An upstream's progress message as it is relayed: cut to [`MAX_PROGRESS_MESSAGE`]
/// characters and escaped, then withheld if the description lint finds anything in it (a
/// secret, instructions aimed at the model, an internal address...), naming the rules.
fn progress_message(message: &str) -> String {
    let escaped = bounded(message, MAX_PROGRESS_MESSAGE);
    let findings = registry_lint::check(&escaped);
    if findings.is_empty() {
        return escaped;
    }
    let mut rules: Vec<&str> = findings.iter().map(|finding| finding.rule.id()).collect();
    rules.dedup();
    format!(
        "(the upstream's progress message is withheld: lint {})",
        rules.join(", ")
    )
}

/// At most `max` characters of `text` from outside, escaped ([`crate::logging::escape`]:
/// control characters, NUL, line breaks, bidirectional and invisible characters), with `...`
/// where it was cut.
pub(crate) fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}...", crate::logging::escape(&text[..end])),
        None => crate::logging::escape(text).into_owned(),
    }
}

impl ClientHandler for Events {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // Text from outside, on its way to the client's model and the log: bounded, linted,
        // escaped.
        params.message = params.message.map(|message| progress_message(&message));
        let token = params.progress_token.clone();
        let mut routes = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        match routes.routes.get_mut(&token) {
            Some(route) => match route.take(params) {
                Some(params) => relay(&route.ctx, params),
                None => {
                    if route.pending.is_some() && !std::mem::replace(&mut route.timer, true) {
                        relay_later(self.progress.clone(), token, route.last);
                    }
                }
            },
            None => {
                if routes.early.len() >= MAX_EARLY_PROGRESS {
                    routes.early.pop_front();
                }
                routes.early.push_back(params);
            }
        }
    }
}

/// A live connection.
pub(crate) struct Link {
    service: RunningService<RoleClient, Events>,
    events: Events,
    /// A stdio upstream's directory (dropped after the process it holds).
    _workdir: Option<Workdir>,
}

impl Link {
    /// Connects to `config`'s upstream within its connect timeout.
    pub(crate) async fn connect(config: &UpstreamConfig, events: Events) -> Result<Link, String> {
        let connecting = async {
            match &config.transport {
                Transport::Command {
                    command,
                    env,
                    pass_env,
                    cwd,
                } => {
                    // Its own environment and directory; its stderr read and logged here.
                    let workdir = Workdir::for_upstream(&config.name, cwd.as_deref())?;
                    let process = child::command(command, env, pass_env, workdir.path(), |name| {
                        std::env::var_os(name)
                    });
                    let (transport, stderr) = TokioChildProcess::builder(process)
                        .stderr(Stdio::piped())
                        .spawn()
                        .map_err(|error| format!("cannot start {:?}: {error}", command[0]))?;
                    if let Some(stderr) = stderr {
                        tokio::spawn(child::log_stderr(
                            config.name.clone(),
                            tokio::io::BufReader::new(stderr),
                        ));
                    }
                    let service = events
                        .clone()
                        .serve(transport)
                        .await
                        .map_err(|error| format!("the MCP handshake failed: {error}"))?;
                    Ok::<_, String>((service, Some(workdir)))
                }
                Transport::Http { url, token_env, .. } => {
                    let mut http = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    if let Some(variable) = token_env {
                        let token = std::env::var(variable).map_err(|_| {
                            format!(
                                "the environment variable {variable} (its token_env) is not set"
                            )
                        })?;
                        http = http.auth_header(token);
                    }
                    let transport = StreamableHttpClientTransport::from_config(http);
                    let service = events
                        .clone()
                        .serve(transport)
                        .await
                        .map_err(|error| format!("the MCP handshake failed: {error}"))?;
                    Ok((service, None))
                }
            }
        };
        let (service, workdir) = tokio::time::timeout(config.connect_timeout, connecting)
            .await
            .map_err(|_| {
                format!(
                    "no answer within {} ms (connect_timeout_ms)",
                    config.connect_timeout.as_millis()
                )
            })??;
        Ok(Link {
            service,
            events,
            _workdir: workdir,
        })
    }

    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// Whether the connection is gone (the process ended, the server closed it).
    pub(crate) fn is_closed(&self) -> bool {
        self.peer().is_transport_closed()
    }

    /// Every tool the upstream `upstream` lists, within `timeout`: refused past
    /// [`MAX_LIST_PAGES`] pages, [`MAX_TOOLS_PER_UPSTREAM`] tools or [`MAX_LISTING_BYTES`]
    /// bytes, as soon as the bound is passed; a tool larger than [`MAX_TOOL_BYTES`] is left
    /// out, and logged.
    pub(crate) async fn list(
        &self,
        upstream: &str,
        timeout: Duration,
    ) -> Result<Vec<rmcp::model::Tool>, String> {
        tokio::time::timeout(timeout, self.list_pages(upstream))
            .await
            .map_err(|_| format!("tools/list took longer than {} ms", timeout.as_millis()))?
    }

    async fn list_pages(&self, upstream: &str) -> Result<Vec<rmcp::model::Tool>, String> {
        let mut tools = Vec::new();
        let mut bytes = 0;
        let mut cursor = None;
        for _ in 0..MAX_LIST_PAGES {
            let page = self
                .peer()
                .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                .await
                .map_err(|error| {
                    format!(
                        "tools/list failed: {}",
                        bounded(&error.to_string(), MAX_PROGRESS_MESSAGE)
                    )
                })?;
            for tool in page.tools {
                let size = serde_json::to_vec(&tool).map_or(usize::MAX, |json| json.len());
                if size > MAX_TOOL_BYTES {
                    tracing::warn!(target: registry_core::audit::AUDIT_TARGET, upstream = %crate::logging::escape(upstream), tool = %bounded(&tool.name, 128), bytes = size, "an upstream tool larger than {MAX_TOOL_BYTES} bytes is left out");
                    continue;
                }
                bytes += size;
                if bytes > MAX_LISTING_BYTES {
                    return Err(format!(
                        "its tools/list is larger than the {MAX_LISTING_BYTES} bytes taken from one upstream"
                    ));
                }
                tools.push(tool);
                if tools.len() > MAX_TOOLS_PER_UPSTREAM {
                    return Err(format!(
                        "it lists more than the {MAX_TOOLS_PER_UPSTREAM} tools taken from one upstream"
                    ));
                }
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(tools),
            }
        }
        Err(format!(
            "its tools/list has more than the {MAX_LIST_PAGES} pages read from one upstream"
        ))
    }

    /// Forwards a call of the upstream's tool `tool`: progress relayed to `ctx`, the
    /// upstream's `notifications/cancelled` sent if the call is dropped before its answer
    /// (cancelled, or past its deadline).
    pub(crate) async fn call(
        &self,
        upstream: &str,
        tool: &str,
        arguments: Value,
        ctx: ToolContext,
        structured: bool,
    ) -> Outcome {
        if self.is_closed() {
            return Err(ToolError::unavailable(format!(
                "the upstream server {upstream:?} is not connected"
            )));
        }
        let arguments = match arguments {
            Value::Object(object) => object,
            _ => Map::new(),
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = self
            .peer()
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|error| {
                tracing::warn!(upstream = %crate::logging::escape(upstream), tool = %bounded(tool, 128), error = %bounded(&error.to_string(), MAX_ERROR_TEXT), "a call cannot be sent to the upstream");
                ToolError::unavailable(format!(
                    "the upstream server {upstream:?} cannot be reached; the reason is in the server's log"
                ))
            })?;
        let mut guard = Forwarded {
            peer: self.peer().clone(),
            id: Some(handle.id.clone()),
            token: handle.progress_token.clone(),
            events: self.events.clone(),
        };
        {
            let mut routes = self
                .events
                .progress
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if routes.routes.len() < MAX_PROGRESS_ROUTES {
                let token = handle.progress_token.clone();
                let (early, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut routes.early)
                    .into_iter()
                    .partition(|params| params.progress_token == token);
                routes.early = rest.into();
                let mut route = Route::new(ctx.clone());
                // Coalesced as if they came now: the first relayed, the latest pending.
                for params in early {
                    if let Some(params) = route.take(params) {
                        relay(&ctx, params);
                    }
                }
                if route.pending.is_some() {
                    route.timer = true;
                    relay_later(self.events.progress.clone(), token.clone(), route.last);
                }
                routes.routes.insert(token, route);
            }
        }
        let answer = handle.await_response().await;
        guard.id = None;
        // The latest progress held back is relayed before the answer.
        if let Some(route) = self
            .events
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .routes
            .get_mut(&guard.token)
            && let Some(params) = route.flush()
        {
            relay(&ctx, params);
        }
        match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                let value = serde_json::to_value(&result).unwrap_or_default();
                payload(&value, structured)
            }
            Ok(_) => Err(ToolError::unavailable(format!(
                "the upstream server {upstream:?} answered tools/call with something other than a result"
            ))),
            Err(error) => {
                // The upstream's text (a JSON-RPC error's message and data, a transport's
                // error with its URL) goes to the log only, bounded and escaped.
                tracing::warn!(upstream = %crate::logging::escape(upstream), tool = %bounded(tool, 128), error = %bounded(&error.to_string(), MAX_ERROR_TEXT), "the upstream answered a call with an error");
                Err(ToolError::unavailable(format!(
                    "the upstream server {upstream:?} did not answer with a result; the reason is in the server's log"
                )))
            }
        }
    }
}

/// A call forwarded and not answered yet: dropped, it tells the upstream to stop.
struct Forwarded {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    token: ProgressToken,
    events: Events,
}

impl Drop for Forwarded {
    fn drop(&mut self) {
        self.events
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .routes
            .remove(&self.token);
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let reason = "the call was cancelled or ran past its deadline".to_owned();
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason)))
                    .await;
            });
        }
    }
}

/// An upstream's `CallToolResult` (as JSON) as what the tool returns: its blocks, and its
/// structured value when the tool has an output schema; `isError` as the tool's failure.
pub(crate) fn payload(result: &Value, structured: bool) -> Outcome {
    let blocks: Vec<Content> = result["content"]
        .as_array()
        .map(|blocks| blocks.iter().map(block).collect())
        .unwrap_or_default();
    if result["isError"] == Value::Bool(true) {
        let text: Vec<&str> = blocks.iter().filter_map(Content::as_text).collect();
        let text = if text.is_empty() {
            "the upstream tool reported an error".to_owned()
        } else {
            bounded(&text.join("\n"), MAX_ERROR_TEXT)
        };
        return Err(ToolError::failed(text));
    }
    match result.get("structuredContent") {
        Some(value) if structured && value.is_object() => {
            let mut output = ToolOutput::new(value.clone());
            for block in blocks {
                output = output.with(block);
            }
            Ok(output.into())
        }
        _ => Ok(blocks.into()),
    }
}

/// One MCP content block (as JSON) as registry content; a kind this server does not know
/// arrives as its JSON text.
fn block(value: &Value) -> Content {
    let text = |key: &str| value[key].as_str().unwrap_or_default().to_owned();
    let decoded = |data: &str| base64::engine::general_purpose::STANDARD.decode(data).ok();
    match value["type"].as_str() {
        Some("text") => return Content::text(text("text")),
        Some(kind @ ("image" | "audio")) => {
            if let Some(data) = decoded(value["data"].as_str().unwrap_or_default()) {
                let mime = text("mimeType");
                return if kind == "image" {
                    Content::image(data, mime)
                } else {
                    Content::audio(data, mime)
                };
            }
        }
        Some("resource_link") => {
            let mut link = ResourceLink::new(text("uri"), text("name"));
            if let Some(title) = value["title"].as_str() {
                link = link.with_title(title);
            }
            if let Some(description) = value["description"].as_str() {
                link = link.with_description(description);
            }
            if let Some(mime) = value["mimeType"].as_str() {
                link = link.with_mime_type(mime);
            }
            if let Some(size) = value["size"].as_u64() {
                link = link.with_size(size);
            }
            return link.into();
        }
        Some("resource") => {
            let resource = &value["resource"];
            let uri = resource["uri"].as_str().unwrap_or_default();
            let mime = resource["mimeType"].as_str();
            if let Some(text) = resource["text"].as_str() {
                return Content::embedded_text(uri, mime.unwrap_or("text/plain"), text);
            }
            if let Some(data) = resource["blob"].as_str().and_then(decoded) {
                return Content::embedded_blob(
                    uri,
                    mime.unwrap_or("application/octet-stream"),
                    data,
                );
            }
        }
        _ => {}
    }
    Content::text(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_is_taken_in_order_and_a_stale_one_dropped() {
        let param = |progress: f64| {
            ProgressNotificationParam::new(
                ProgressToken(rmcp::model::NumberOrString::Number(7)),
                progress,
            )
        };
        let mut route = Route::new(ToolContext::new("c1", "notes_chatty"));
        assert_eq!(route.take(param(1.0)).map(|p| p.progress), Some(1.0));
        // Within the interval: held back.
        assert!(route.take(param(3.0)).is_none());
        // Older than what was taken (handled out of order): dropped, the pending one kept.
        assert!(route.take(param(2.0)).is_none());
        assert!(route.take(param(3.0)).is_none());
        assert!(route.take(param(f64::NAN)).is_none());
        assert_eq!(route.flush().map(|p| p.progress), Some(3.0));
        assert!(route.flush().is_none());
    }

    #[test]
    fn every_kind_of_block_comes_through() {
        let result = json!({"content": [
            {"type": "text", "text": "hi"},
            {"type": "image", "data": "R0lGODlh", "mimeType": "image/gif"},
            {"type": "audio", "data": "AAEC", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a", "name": "a", "size": 3},
            {"type": "resource", "resource": {"uri": "file:///b", "mimeType": "text/plain", "text": "b"}},
            {"type": "resource", "resource": {"uri": "file:///c", "blob": "AAEC"}},
        ]});
        let blocks: Vec<Content> = result["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(block)
            .collect();
        assert_eq!(
            blocks,
            [
                Content::text("hi"),
                Content::image(&b"GIF89a"[..], "image/gif"),
                Content::audio(&[0u8, 1, 2][..], "audio/wav"),
                ResourceLink::new("file:///a", "a").with_size(3).into(),
                Content::embedded_text("file:///b", "text/plain", "b"),
                Content::embedded_blob("file:///c", "application/octet-stream", &[0u8, 1, 2][..]),
            ]
        );
        let failed = payload(
            &json!({"isError": true, "content": [{"type": "text", "text": "no"}]}),
            false,
        );
        assert_eq!(failed.err(), Some(ToolError::failed("no")));
    }
}
