//! Events as JSON lines: one object a line, every string escaped.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

use super::escape::escape_json;

/// Each event as one line of JSON, for log pipelines:
/// `{"timestamp":"…","level":"WARN","target":"rmcp::service","fields":{"message":"…",…},"spans":[{"name":"…",…}]}`
/// (`spans` from the root, only when the event is inside one). Numbers and booleans stay
/// numbers and booleans; anything else is its text. Every line is valid JSON and one line:
/// `serde_json` escapes line breaks and NUL, and every other character of
/// [`needs_escape`](super::needs_escape) (U+202E, U+00AD, C1 controls…) is written as a
/// `\uXXXX` escape. Use it with [`JsonFields`], which keeps span fields as JSON (as
/// [`layer`](super::layer) does).
///
/// ```
/// use registry_mcp::logging::{JsonFields, JsonLines};
///
/// let layer = tracing_subscriber::fmt::layer::<tracing_subscriber::Registry>()
///     .fmt_fields(JsonFields)
///     .event_format(JsonLines);
/// # let _ = layer;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonLines;

/// The fields of spans as a JSON object, for [`JsonLines`].
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonFields;

impl<'writer> FormatFields<'writer> for JsonFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut map = Map::new();
        fields.record(&mut Collect(&mut map));
        writer.write_str(&Value::Object(map).to_string())
    }

    fn add_fields(
        &self,
        current: &'writer mut FormattedFields<Self>,
        fields: &tracing::span::Record<'_>,
    ) -> fmt::Result {
        let mut map: Map<String, Value> = serde_json::from_str(&current.fields).unwrap_or_default();
        fields.record(&mut Collect(&mut map));
        current.fields = Value::Object(map).to_string();
        Ok(())
    }
}

impl<S> FormatEvent<S, JsonFields> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonFields>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        let metadata = event.metadata();
        let mut fields = Map::new();
        event.record(&mut Collect(&mut fields));
        let mut line = Map::new();
        line.insert("timestamp".into(), Value::String(timestamp));
        line.insert(
            "level".into(),
            Value::String(metadata.level().as_str().into()),
        );
        line.insert("target".into(), Value::String(metadata.target().into()));
        line.insert("fields".into(), Value::Object(fields));
        if let Some(scope) = ctx.event_scope() {
            let spans: Vec<Value> = scope
                .from_root()
                .map(|span| {
                    let mut object = span
                        .extensions()
                        .get::<FormattedFields<JsonFields>>()
                        .and_then(|fields| serde_json::from_str::<Map<String, Value>>(fields).ok())
                        .unwrap_or_default();
                    object.insert("name".into(), Value::String(span.name().into()));
                    Value::Object(object)
                })
                .collect();
            line.insert("spans".into(), Value::Array(spans));
        }
        let text = Value::Object(line).to_string();
        writeln!(writer, "{}", escape_json(&text))
    }
}

/// Records fields into a JSON object.
struct Collect<'a>(&'a mut Map<String, Value>);

impl Collect<'_> {
    fn put(&mut self, field: &Field, value: Value) {
        let name = field.name();
        let name = name.strip_prefix("r#").unwrap_or(name);
        self.0.insert(name.to_owned(), value);
    }
}

impl Visit for Collect<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        let value = serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number);
        self.put(field, value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::String(value.to_owned()));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::String(value.to_string()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }
}
