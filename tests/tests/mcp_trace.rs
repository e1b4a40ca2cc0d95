//! A request's W3C trace context over real loopback HTTP, from rmcp's real 2026-07-28 client:
//! `_meta.traceparent` becomes the parent of the call's `tool_call` span (what the tool logs
//! is inside it, with the trace id and the caller's span id), and the call's audit event
//! carries the trace id; a malformed `traceparent` is ignored and the call runs untraced.

mod mcp_support;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcp_support::*;
use registry_core::audit::AuditEvent;
use registry_core::{DynamicTool, Registry, Subject};
use registry_mcp::{HttpConfig, HttpServer, Principal, ServerOptions, Tokens};
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion, RequestParamsMeta};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

const TOKEN: &str = "trace-token-for-trace-tests";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// The fields of the spans a `probe` event was emitted in, innermost first.
type Seen = Vec<(String, BTreeMap<String, String>)>;

struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

/// Records, for every event of target `probe`, the spans it is inside.
struct SpanRecorder(&'static Mutex<Vec<Seen>>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S>
    for SpanRecorder
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: Context<'_, S>,
    ) {
        let mut fields = Fields(BTreeMap::new());
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        if event.metadata().target() != "probe" {
            return;
        }
        let spans = ctx
            .event_scope(event)
            .into_iter()
            .flatten()
            .map(|span| {
                let fields = span
                    .extensions()
                    .get::<Fields>()
                    .map(|fields| fields.0.clone())
                    .unwrap_or_default();
                (span.name().to_owned(), fields)
            })
            .collect();
        self.0.lock().unwrap().push(spans);
    }
}

fn seen() -> &'static Mutex<Vec<Seen>> {
    static SEEN: OnceLock<&'static Mutex<Vec<Seen>>> = OnceLock::new();
    SEEN.get_or_init(|| {
        let seen: &'static Mutex<Vec<Seen>> = Box::leak(Box::default());
        let subscriber = tracing_subscriber::registry().with(SpanRecorder(seen));
        tracing::subscriber::set_global_default(subscriber).expect("one subscriber");
        seen
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_traceparent_is_the_parent_of_the_call_and_in_its_audit_event() {
    let seen = seen();
    let events: Arc<Mutex<Vec<AuditEvent>>> = Arc::default();
    let sink = {
        let events = events.clone();
        move |event: &AuditEvent| events.lock().unwrap().push(event.clone())
    };
    let probe = DynamicTool::new("probe", "Log one line and answer.")
        .public()
        .read_only()
        .handler(|_ctx, _args| {
            tracing::info!(target: "probe", "running");
            Ok::<_, String>(json!("ok"))
        });
    let registry = Registry::builder()
        .tool(probe)
        .audit_sink(sink)
        .build()
        .unwrap();
    let mut tokens = Tokens::new();
    tokens
        .insert(TOKEN, Principal::new("tracer", Subject::new("acme")))
        .unwrap();
    let config = HttpConfig::new(tokens)
        .with_addr(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .with_options(ServerOptions::default().with_poll_interval(Duration::from_secs(3600)));
    let server = HttpServer::bind(registry, config).await.unwrap();
    let url = server.url();
    tokio::spawn(server.serve());
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(TOKEN),
    );
    let client = within(
        "discover",
        ClientConfig::default().serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("a 2026-07-28 client connects");

    // Traced.
    let mut traced = CallToolRequestParams::new("probe");
    traced.set_traceparent(&format!("00-{TRACE_ID}-{PARENT_ID}-01"));
    traced.set_tracestate("vendor=opaque");
    let result = within("tools/call", client.call_tool(traced))
        .await
        .unwrap();
    assert_eq!(text(&result), "ok");
    // Malformed: ignored, the call runs untraced.
    let mut malformed = CallToolRequestParams::new("probe");
    malformed.set_traceparent("00-not-a-trace-01");
    let result = within("tools/call", client.call_tool(malformed))
        .await
        .unwrap();
    assert_eq!(text(&result), "ok");

    let spans = seen.lock().unwrap().clone();
    assert_eq!(spans.len(), 2, "{spans:?}");
    let (name, fields) = &spans[0][0];
    assert_eq!(name, "tool_call", "{spans:?}");
    assert_eq!(fields["trace_id"], TRACE_ID);
    assert_eq!(fields["parent_id"], PARENT_ID);
    assert_eq!(fields["sampled"], "true");
    assert!(
        spans[1].iter().all(|(name, _)| name != "tool_call"),
        "{spans:?}"
    );

    let trace_ids: Vec<Option<String>> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            AuditEvent::Call(call) => Some(call.trace_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(trace_ids, [Some(TRACE_ID.to_owned()), None]);
    // As the audit log writes it.
    let logged = events.lock().unwrap().iter().find_map(|event| match event {
        AuditEvent::Call(call) if call.trace_id.is_some() => {
            Some(serde_json::to_value(AuditEvent::Call(call.clone())).unwrap())
        }
        _ => None,
    });
    assert_eq!(logged.unwrap()["trace_id"], json!(TRACE_ID));
    within("shutdown", client.cancel()).await.unwrap();
}
