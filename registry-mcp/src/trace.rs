//! The caller's distributed trace (W3C Trace Context, SEP-414): a request's
//! `_meta.traceparent` and `_meta.tracestate` become the parent of the call's `tool_call`
//! span, and its audit event's `trace_id`
//! ([`CallOptions::with_trace`](registry_core::call::CallOptions::with_trace)). A malformed
//! `traceparent` is ignored (the call runs, untraced), and logged at debug level.

use registry_core::call::TraceContext;
use rmcp::model::RequestMetaObject;

/// The trace a request's `_meta` names, if it names a valid one.
pub(crate) fn of(meta: &RequestMetaObject) -> Option<TraceContext> {
    let traceparent = meta.get_traceparent()?;
    match TraceContext::parse(traceparent, meta.get_tracestate()) {
        Ok(trace) => Some(trace),
        Err(error) => {
            tracing::debug!(%error, "ignored the request's traceparent");
            None
        }
    }
}
