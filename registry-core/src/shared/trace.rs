//! The distributed trace a call belongs to: W3C Trace Context (`traceparent`, `tracestate`),
//! as an MCP client sends it in a request's `_meta` (or an HTTP caller in its headers).
//!
//! Given to a call with [`CallOptions::with_trace`](crate::call::CallOptions::with_trace), it
//! becomes the parent of the call's `tracing` span (`tool_call`, with the fields `trace_id`
//! and `parent_id`), and the call's audit event carries its trace id
//! ([`CallEvent::trace_id`](crate::audit::CallEvent::trace_id)), so that a call can be found
//! from the trace of the agent that made it.

use std::fmt;

/// A parsed W3C `traceparent` (version `00`), with the `tracestate` that came with it.
///
/// ```
/// use registry_core::call::TraceContext;
///
/// let trace = TraceContext::parse(
///     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
///     Some("vendor=opaque"),
/// )
/// .unwrap();
/// assert_eq!(trace.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
/// assert_eq!(trace.parent_id(), "00f067aa0ba902b7");
/// assert!(trace.sampled());
/// assert_eq!(trace.tracestate(), Some("vendor=opaque"));
///
/// let error = TraceContext::parse("00-0000-bad", None).unwrap_err();
/// assert!(error.to_string().contains("traceparent"), "{error}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: String,
    parent_id: String,
    flags: u8,
    tracestate: Option<String>,
}

/// Why a `traceparent` was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseTraceError(&'static str);

impl fmt::Display for ParseTraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid traceparent: {}; expected `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>` (W3C Trace Context)",
            self.0
        )
    }
}

impl std::error::Error for ParseTraceError {}

/// Why a `traceparent` was not used.
#[deprecated(note = "use `ParseTraceError`")]
pub type TraceParseError = ParseTraceError;

/// The longest `tracestate` kept (the W3C limit is 32 members of at most 256 characters
/// each; longer ones are dropped, not cut).
const MAX_TRACESTATE: usize = 512;

impl TraceContext {
    /// Parses `traceparent` (and keeps `tracestate` if it is printable ASCII of at most 512
    /// characters).
    pub fn parse(
        traceparent: &str,
        tracestate: Option<&str>,
    ) -> Result<TraceContext, ParseTraceError> {
        let parts: Vec<&str> = traceparent.trim().split('-').collect();
        let [version, trace_id, parent_id, flags] = parts[..] else {
            return Err(ParseTraceError(
                "it does not have four fields separated by `-`",
            ));
        };
        let hex = |text: &str, len: usize| {
            text.len() == len
                && text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if version != "00" {
            return Err(ParseTraceError("only version 00 is understood"));
        }
        if !hex(trace_id, 32) || trace_id.bytes().all(|b| b == b'0') {
            return Err(ParseTraceError(
                "the trace id is not 32 lowercase hex digits, not all zero",
            ));
        }
        if !hex(parent_id, 16) || parent_id.bytes().all(|b| b == b'0') {
            return Err(ParseTraceError(
                "the parent id is not 16 lowercase hex digits, not all zero",
            ));
        }
        if !hex(flags, 2) {
            return Err(ParseTraceError("the flags are not 2 hex digits"));
        }
        let flags =
            u8::from_str_radix(flags, 16).map_err(|_| ParseTraceError("the flags are not hex"))?;
        let tracestate = tracestate
            .map(str::trim)
            .filter(|state| {
                !state.is_empty()
                    && state.len() <= MAX_TRACESTATE
                    && state.bytes().all(|b| (0x20..0x7f).contains(&b))
            })
            .map(str::to_owned);
        Ok(TraceContext {
            trace_id: trace_id.to_owned(),
            parent_id: parent_id.to_owned(),
            flags,
            tracestate,
        })
    }

    /// The trace id: 32 lowercase hex digits.
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }

    /// The caller's span id, the parent of the call's span: 16 lowercase hex digits.
    pub fn parent_id(&self) -> &str {
        &self.parent_id
    }

    /// Whether the caller sampled the trace (flag `01`).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The vendors' `tracestate`, passed on as it came.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The span a call of `tool` runs in: `tool_call`, a child of this trace's parent span by
    /// its fields (`trace_id`, `parent_id`), for a subscriber (say, an OpenTelemetry bridge)
    /// to link to the remote parent.
    pub(crate) fn span(&self, tool: &str) -> tracing::Span {
        tracing::info_span!(
            "tool_call",
            tool = ?tool,
            trace_id = %self.trace_id,
            parent_id = %self.parent_id,
            sampled = self.sampled(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_traceparents_are_refused_with_the_reason() {
        for (text, reason) in [
            ("", "four fields"),
            (
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "version 00",
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                "trace id",
            ),
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                "trace id",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                "parent id",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-x1",
                "flags",
            ),
        ] {
            let error = TraceContext::parse(text, None).unwrap_err().to_string();
            assert!(error.contains(reason), "{text:?}: {error}");
        }
    }

    #[test]
    fn a_tracestate_with_control_characters_is_dropped() {
        let trace = TraceContext::parse(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
            Some("a=b\nforged"),
        )
        .unwrap();
        assert_eq!(trace.tracestate(), None);
        assert!(!trace.sampled());
    }
}
