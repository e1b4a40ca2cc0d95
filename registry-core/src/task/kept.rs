//! A task's result as a store keeps it: [`KeptResult`], the whole [`Observation`] in a form
//! that serializes and reads back equal (the observation's own `Serialize` is the model's
//! view of it, without the content's bytes, and does not read back).

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::request::ApprovalRequest;
use crate::content::{Content, Embedded, ResourceLink};
use crate::execute::observation::{ErrorDetail, ErrorKind, Observation};
use crate::shared::tool_error::ArgumentProblem;

/// An ended task's result ([`Observation`]), whole, in a form that serializes (to JSON, or
/// any serde format) and deserializes back to an equal observation: its content blocks with
/// their bytes (base64), its error's kind, problems, approval and retry delay, and its
/// flags. What a database-backed [`TaskStore`](crate::task::TaskStore) keeps.
///
/// ```standalone_crate
/// use registry_core::task::KeptResult;
/// use registry_core::{tool, content::Content, Registry, Subject, ToolCall};
/// use serde_json::json;
///
/// /// Render the chart of the day.
/// #[tool(public)]
/// fn chart() -> Vec<Content> {
///     vec![Content::text("the chart"), Content::image(vec![0x89, b'P', 0, b'\n'], "image/png")]
/// }
///
/// let registry = Registry::from_inventory().unwrap();
/// let run = registry.open_run("run-1", &Subject::new("acme"));
/// let observation = run.call_blocking(ToolCall::new("c1", "chart", json!({})));
/// let stored = serde_json::to_vec(&KeptResult::from(&observation)).unwrap();
/// let read: KeptResult = serde_json::from_slice(&stored).unwrap();
/// assert_eq!(read.into_observation().unwrap(), observation);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptResult {
    call_id: String,
    tool_name: String,
    content: Value,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    blocks: Vec<KeptBlock>,
    #[serde(default)]
    has_value: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<KeptError>,
    #[serde(default)]
    generated_id: bool,
    #[serde(default)]
    structured: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct KeptError {
    /// [`ErrorKind::as_str`].
    kind: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    problems: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approval: Option<Box<ApprovalRequest>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum KeptBlock {
    Text {
        text: String,
    },
    Image {
        mime_type: String,
        data: String,
    },
    Audio {
        mime_type: String,
        data: String,
    },
    ResourceLink {
        uri: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
    ResourceText {
        uri: String,
        mime_type: String,
        text: String,
    },
    ResourceBlob {
        uri: String,
        mime_type: String,
        data: String,
    },
}

/// Why a [`KeptResult`] does not read back as an observation: it was not written by this
/// library (or by a newer one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a kept task result cannot be read: {0}")]
pub struct KeptResultError(String);

impl KeptResult {
    /// The error observation a call to `tool_name` (call id `call_id`) answers with `text`:
    /// what a store keeps for a task it ended itself (for instance, one whose replica
    /// stopped renewing its lease).
    ///
    /// ```
    /// use registry_core::task::KeptResult;
    /// use registry_core::ErrorKind;
    ///
    /// let kept = KeptResult::error("c1", "export_logs", ErrorKind::Unavailable, "the replica stopped");
    /// let observation = kept.into_observation().unwrap();
    /// assert_eq!(observation.error_kind(), Some(ErrorKind::Unavailable));
    /// assert_eq!(observation.error_text(), Some("the replica stopped"));
    /// ```
    pub fn error(
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        kind: ErrorKind,
        text: impl Into<String>,
    ) -> KeptResult {
        KeptResult::from(&Observation::error(
            call_id.into(),
            tool_name.into(),
            kind,
            text.into(),
        ))
    }

    /// The observation again, equal to the one it was made from.
    pub fn into_observation(self) -> Result<Observation, KeptResultError> {
        let error = match self.error {
            None => None,
            Some(error) => Some(Box::new(ErrorDetail {
                kind: ErrorKind::from_word(&error.kind).ok_or_else(|| {
                    KeptResultError(format!("unknown error kind {:?}", error.kind))
                })?,
                problems: error
                    .problems
                    .into_iter()
                    .map(|(pointer, message)| ArgumentProblem::new(pointer, message))
                    .collect(),
                approval: error.approval,
                retry_after: error.retry_after_ms.map(Duration::from_millis),
            })),
        };
        let blocks = self
            .blocks
            .into_iter()
            .map(KeptBlock::into_content)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Observation {
            call_id: self.call_id,
            tool_name: self.tool_name,
            json: self.content,
            blocks,
            has_value: self.has_value,
            error,
            generated_id: self.generated_id,
            structured: self.structured,
        })
    }
}

/// How many bytes `observation` takes as [`KeptResult`] JSON, what a store keeps (and what
/// [`TaskLimits::result_bytes`](crate::task::TaskLimits::result_bytes) bounds), counted
/// without keeping the text.
pub(crate) fn kept_bytes(observation: &Observation) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(bytes.len());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, &KeptResult::from(observation)) {
        Ok(()) => count.0,
        // Not one a store could keep either: as large as can be, so it is not kept.
        Err(_) => usize::MAX,
    }
}

impl From<&Observation> for KeptResult {
    fn from(observation: &Observation) -> KeptResult {
        KeptResult {
            call_id: observation.call_id.clone(),
            tool_name: observation.tool_name.clone(),
            content: observation.json.clone(),
            blocks: observation.blocks.iter().map(KeptBlock::of).collect(),
            has_value: observation.has_value,
            error: observation.error.as_ref().map(|error| KeptError {
                kind: error.kind.as_str().to_owned(),
                problems: error
                    .problems
                    .iter()
                    .map(|problem| (problem.pointer.clone(), problem.message.clone()))
                    .collect(),
                approval: error.approval.clone(),
                retry_after_ms: error
                    .retry_after
                    .map(|after| u64::try_from(after.as_millis()).unwrap_or(u64::MAX)),
            }),
            generated_id: observation.generated_id,
            structured: observation.structured,
        }
    }
}

impl KeptBlock {
    fn of(content: &Content) -> KeptBlock {
        match content {
            Content::Text(text) => KeptBlock::Text { text: text.clone() },
            Content::Image(media) => KeptBlock::Image {
                mime_type: media.mime_type().to_owned(),
                data: media.base64(),
            },
            Content::Audio(media) => KeptBlock::Audio {
                mime_type: media.mime_type().to_owned(),
                data: media.base64(),
            },
            Content::ResourceLink(link) => KeptBlock::ResourceLink {
                uri: link.uri().to_owned(),
                name: link.name().to_owned(),
                title: link.title().map(str::to_owned),
                description: link.description().map(str::to_owned),
                mime_type: link.mime_type().map(str::to_owned),
                size: link.size(),
            },
            Content::Resource(resource) => match resource.contents() {
                Embedded::Text { mime_type, text } => KeptBlock::ResourceText {
                    uri: resource.uri().to_owned(),
                    mime_type: mime_type.clone(),
                    text: text.clone(),
                },
                Embedded::Blob(media) => KeptBlock::ResourceBlob {
                    uri: resource.uri().to_owned(),
                    mime_type: media.mime_type().to_owned(),
                    data: media.base64(),
                },
            },
        }
    }

    fn into_content(self) -> Result<Content, KeptResultError> {
        let bytes = |data: &str| {
            STANDARD
                .decode(data)
                .map_err(|error| KeptResultError(format!("a block's bytes: {error}")))
        };
        Ok(match self {
            KeptBlock::Text { text } => Content::Text(text),
            KeptBlock::Image { mime_type, data } => Content::image(bytes(&data)?, mime_type),
            KeptBlock::Audio { mime_type, data } => Content::audio(bytes(&data)?, mime_type),
            KeptBlock::ResourceLink {
                uri,
                name,
                title,
                description,
                mime_type,
                size,
            } => {
                let mut link = ResourceLink::new(uri, name);
                if let Some(title) = title {
                    link = link.with_title(title);
                }
                if let Some(description) = description {
                    link = link.with_description(description);
                }
                if let Some(mime_type) = mime_type {
                    link = link.with_mime_type(mime_type);
                }
                if let Some(size) = size {
                    link = link.with_size(size);
                }
                Content::ResourceLink(link)
            }
            KeptBlock::ResourceText {
                uri,
                mime_type,
                text,
            } => Content::embedded_text(uri, mime_type, text),
            KeptBlock::ResourceBlob {
                uri,
                mime_type,
                data,
            } => Content::embedded_blob(uri, mime_type, bytes(&data)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::KeptResult;
    use crate::content::Payload;
    use crate::content::{Content, ResourceLink};
    use crate::execute::observation::{ErrorKind, Observation};
    use crate::shared::tool_error::ArgumentProblem;

    fn round_trip(observation: &Observation) -> Observation {
        let bytes = serde_json::to_vec(&KeptResult::from(observation)).unwrap();
        serde_json::from_slice::<KeptResult>(&bytes)
            .unwrap()
            .into_observation()
            .unwrap()
    }

    #[test]
    fn an_error_reads_back_with_its_problems_and_retry_delay() {
        let invalid = Observation::error(
            "c\u{0}1".into(),
            "export".into(),
            ErrorKind::InvalidArguments,
            "bad\narguments \u{202e}".into(),
        )
        .with_problems(vec![ArgumentProblem::new("/day", "expected string")])
        .with_generated_id(true);
        assert_eq!(round_trip(&invalid), invalid);
        let limited = Observation::error(
            "c2".into(),
            "export".into(),
            ErrorKind::RateLimited,
            "later".into(),
        )
        .with_retry_after(Some(Duration::from_millis(1_500)));
        let read = round_trip(&limited);
        assert_eq!(read.retry_after(), Some(Duration::from_millis(1_500)));
        assert_eq!(read, limited);
    }

    #[test]
    fn every_block_reads_back_with_its_bytes() {
        let blocks = vec![
            Content::text("t"),
            Content::audio(vec![0u8, 255], "audio/wav"),
            ResourceLink::new("file:///a", "a")
                .with_title("A")
                .with_description("d")
                .with_mime_type("text/plain")
                .with_size(3)
                .into(),
            Content::embedded_text("file:///b", "text/plain", "b\u{0}"),
            Content::embedded_blob("file:///c", "application/pdf", vec![1u8, 2, 3]),
        ];
        let observation =
            Observation::success("c1".into(), "export".into(), Payload::from(blocks.clone()));
        let read = round_trip(&observation);
        assert_eq!(read.blocks(), blocks.as_slice());
        assert_eq!(read, observation);
    }

    #[test]
    fn a_kind_it_does_not_know_is_an_error_not_a_panic() {
        let mut value =
            serde_json::to_value(KeptResult::error("c1", "export", ErrorKind::Denied, "no"))
                .unwrap();
        value["error"]["kind"] = "exploded".into();
        let kept: KeptResult = serde_json::from_value(value).unwrap();
        let error = kept.into_observation().unwrap_err();
        assert!(error.to_string().contains("\"exploded\""), "{error}");
    }
}
