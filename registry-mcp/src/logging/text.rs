//! Fields written as text, `name=value`, every value escaped.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::Writer;

use super::escape::escape;

/// The fields of events and spans as `tracing_subscriber`'s default text format writes them
/// (the message first, then `name=value` separated by spaces, strings quoted), but with every
/// name and value passed through [`escape`](super::escape): a field can never end a line, nor
/// hide or reorder what follows it. Give it to a `tracing_subscriber::fmt` layer with
/// `fmt_fields` (as [`layer`](super::layer) does).
///
/// ```
/// use registry_mcp::logging::EscapedFields;
///
/// let layer = tracing_subscriber::fmt::layer::<tracing_subscriber::Registry>()
///     .fmt_fields(EscapedFields);
/// # let _ = layer;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct EscapedFields;

impl<'writer> FormatFields<'writer> for EscapedFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut visitor = Visitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct Visitor<'writer> {
    writer: Writer<'writer>,
    first: bool,
    result: fmt::Result,
}

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.record_debug(field, &format_args!("{value}"));
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_err() {
            return;
        }
        let separator = if self.first { "" } else { " " };
        self.first = false;
        let text = format!("{value:?}");
        let name = field.name();
        self.result = if name == "message" {
            write!(self.writer, "{separator}{}", escape(&text))
        } else {
            let name = name.strip_prefix("r#").unwrap_or(name);
            write!(self.writer, "{separator}{}={}", escape(name), escape(&text))
        };
    }
}
