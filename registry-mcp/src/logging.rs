//! Log lines nobody can forge: a `tracing_subscriber` formatting layer that escapes every
//! field and message, whoever logs it (this crate, rmcp, hyper, the application), so that one
//! event is always exactly one line.
//!
//! A client chooses much of what a server logs: a request id, a tool name, a header. rmcp
//! logs a failed request's JSON-RPC id as the client sent it; an id of
//! `"x\nFORGEDLINE outcome=ok tool=deploy"` written raw starts a line of its own, one a
//! reader (or a log pipeline) takes for the server's. The formatters here write line breaks,
//! NUL and the other control characters, and the characters that hide or reorder text
//! (U+202E, U+2066–2069, U+200B–200F, U+00AD…), escaped ([`escape`]), in every field of every
//! event and span.
//!
//! Two formats ([`LogFormat`]): text, as `tracing_subscriber`'s default, and JSON lines
//! ([`JsonLines`]), one object a line.
//!
//! ```no_run
//! use registry_mcp::logging::{self, LogFormat};
//!
//! // Everything at info and above, rmcp's own events at warn and above, to stderr.
//! logging::init(LogFormat::Json, "info,rmcp=warn")?;
//! tracing::warn!(id = "x\nFORGEDLINE", "response error"); // one line
//! # Ok::<(), registry_mcp::logging::LogError>(())
//! ```
//!
//! To combine with other layers, take [`layer`] (stderr) or [`layer_with_writer`].

mod escape;
mod json;
mod text;

use std::io::IsTerminal;
use std::str::FromStr;

use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

pub use escape::{escape, needs_escape};
pub use json::{JsonFields, JsonLines};
pub use text::EscapedFields;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogFormat {
    /// `tracing_subscriber`'s default text format, fields escaped, and every value that is not
    /// one bare word quoted ([`EscapedFields`]). The default.
    #[default]
    Text,
    /// One JSON object a line ([`JsonLines`]).
    Json,
}

impl FromStr for LogFormat {
    type Err = LogError;

    /// `text` or `json`.
    ///
    /// ```
    /// use registry_mcp::logging::LogFormat;
    ///
    /// assert_eq!("json".parse::<LogFormat>().unwrap(), LogFormat::Json);
    /// assert!("yaml".parse::<LogFormat>().is_err());
    /// ```
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(LogError::Format(escape(other).into_owned())),
        }
    }
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// A log format other than `text` and `json`.
    #[error("the log format {0:?} is unknown: say text or json")]
    Format(String),
    /// A filter that does not parse.
    #[error("the log filter cannot be read ({0}): write it like info,rmcp=warn")]
    Filter(String),
    /// Another subscriber was set as the global default first.
    #[error(
        "a global tracing subscriber is already set: call logging::init once, before any other"
    )]
    AlreadySet,
}

/// A formatting layer writing `format` to stderr (with colours when stderr is a terminal and
/// the format is text), every field escaped.
pub fn layer<S>(format: LogFormat) -> Box<dyn Layer<S> + Send + Sync + 'static>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let ansi = format == LogFormat::Text && std::io::stderr().is_terminal();
    writing(format, std::io::stderr, ansi)
}

/// A formatting layer writing `format` to `writer` (without colours), every field escaped.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use registry_mcp::logging::{self, LogFormat};
/// use tracing_subscriber::layer::SubscriberExt;
///
/// #[derive(Clone, Default)]
/// struct Buffer(Arc<Mutex<Vec<u8>>>);
/// impl std::io::Write for Buffer {
///     fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
///         self.0.lock().unwrap().extend_from_slice(bytes);
///         Ok(bytes.len())
///     }
///     fn flush(&mut self) -> std::io::Result<()> { Ok(()) }
/// }
///
/// let buffer = Buffer::default();
/// let writer = buffer.clone();
/// let subscriber = tracing_subscriber::registry()
///     .with(logging::layer_with_writer(LogFormat::Text, move || writer.clone()));
/// tracing::subscriber::with_default(subscriber, || {
///     tracing::warn!(id = %"x\nFORGEDLINE outcome=ok", "response error");
/// });
/// let written = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
/// assert_eq!(written.lines().count(), 1);
/// // One line, and one field: the forged text is inside its quotes.
/// assert!(written.contains(r#"id="x\nFORGEDLINE outcome=ok""#));
/// ```
pub fn layer_with_writer<S, W>(
    format: LogFormat,
    writer: W,
) -> Box<dyn Layer<S> + Send + Sync + 'static>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    writing(format, writer, false)
}

fn writing<S, W>(
    format: LogFormat,
    writer: W,
    ansi: bool,
) -> Box<dyn Layer<S> + Send + Sync + 'static>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let layer = tracing_subscriber::fmt::layer().with_writer(writer);
    match format {
        LogFormat::Text => Box::new(layer.with_ansi(ansi).fmt_fields(EscapedFields)),
        LogFormat::Json => Box::new(
            layer
                .with_ansi(false)
                .fmt_fields(JsonFields)
                .event_format(JsonLines),
        ),
    }
}

/// Sets the global subscriber: [`layer`]`(format)` on stderr, with `filter` (a
/// `tracing_subscriber` target filter: `info`, `info,rmcp=warn`, `debug,hyper=info`).
pub fn init(format: LogFormat, filter: &str) -> Result<(), LogError> {
    let filter: Targets = filter
        .parse()
        .map_err(|error| LogError::Filter(escape(&format!("{error}")).into_owned()))?;
    tracing_subscriber::registry()
        .with(layer(format))
        .with(filter)
        .try_init()
        .map_err(|_| LogError::AlreadySet)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What `format` writes for three hostile events, one inside a span with a hostile field.
    fn written(format: LogFormat) -> String {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber =
            tracing_subscriber::registry().with(layer_with_writer(format, move || writer.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let forged = "x\nFORGEDLINE outcome=ok tool=deploy";
            tracing::warn!(id = %forged, "response error");
            tracing::warn!("a message with {forged} \0 and \u{202e}txt.exe");
            let span = tracing::info_span!("request", peer = %"a\r\nFORGEDLINE", n = 3);
            let _entered = span.enter();
            span.record("n", 4);
            tracing::error!(error = ?"\u{85}\u{2028}\u{ad}", ok = true, "failed");
        });
        String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn text_lines_are_one_per_event_and_escaped() {
        let text = written(LogFormat::Text);
        assert_eq!(text.lines().count(), 3, "{text}");
        for line in text.lines() {
            assert!(!line.starts_with("FORGEDLINE"), "{line}");
            assert!(line.chars().all(|c| !needs_escape(c)), "{line:?}");
        }
        assert!(
            text.contains(r#"id="x\nFORGEDLINE outcome=ok tool=deploy""#),
            "{text}"
        );
        assert!(text.contains(r"\u{0} and \u{202e}txt.exe"), "{text}");
        assert!(text.contains(r#"peer="a\r\nFORGEDLINE""#), "{text}");
    }

    #[test]
    fn json_lines_are_one_per_event_valid_and_escaped() {
        let text = written(LogFormat::Json);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        let events: Vec<serde_json::Value> = lines
            .iter()
            .map(|line| {
                assert!(line.is_ascii(), "{line}");
                serde_json::from_str(line).unwrap()
            })
            .collect();
        assert_eq!(
            events[0]["fields"]["id"],
            "x\nFORGEDLINE outcome=ok tool=deploy"
        );
        assert_eq!(events[0]["level"], "WARN");
        assert!(
            events[1]["fields"]["message"]
                .as_str()
                .unwrap()
                .contains("\u{202e}txt.exe")
        );
        assert_eq!(events[2]["fields"]["ok"], true);
        assert_eq!(events[2]["spans"][0]["name"], "request");
        assert_eq!(events[2]["spans"][0]["peer"], "a\r\nFORGEDLINE");
        assert_eq!(events[2]["spans"][0]["n"], 4);
    }
}
