//! The blocks of content a tool's result may hold: text, images, audio, links and embedded
//! resources ([`Content`]), with a structured value beside them ([`ToolOutput`]).
//!
//! Binary data is kept as bytes ([`Bytes`], cheap to clone and to share); it is encoded to
//! base64 only where a consumer's format wants text, once, straight into the message.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use serde_json::{Map, Value, json};

/// One block of a tool's result, as MCP defines them (`ContentBlock`).
///
/// A `#[tool]` function returns content by returning a `Content`, a `Vec<Content>` or a
/// [`ToolOutput`] (content beside a structured value), or any of them in a `Result`. Each
/// consumer gets what it can take and a short text for the rest: see
/// [`Profile::render`](crate::Profile::render) and `docs/providers.md`.
///
/// ```standalone_crate
/// use registry_core::{tool, content::Content, Profile, Registry, Subject, ToolCall};
/// use serde_json::json;
///
/// /// Draw the build graph of a project as a PNG image.
/// #[tool(public)]
/// fn build_graph(project: String) -> Vec<Content> {
///     let png = vec![0x89, b'P', b'N', b'G']; // drawn for `project`
///     vec![Content::text(format!("the build graph of {project}")), Content::image(png, "image/png")]
/// }
///
/// let registry = Registry::from_inventory().unwrap();
/// let run = registry.open_run("run-1", &Subject::new("acme"));
/// let observation = run.call_blocking(ToolCall::new("toolu_1", "build_graph", json!({"project": "web"})));
/// assert_eq!(observation.blocks()[1], Content::image(vec![0x89, b'P', b'N', b'G'], "image/png"));
/// assert_eq!(
///     Profile::Anthropic.render(&observation)["content"][1],
///     json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}}),
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Content {
    /// Text for the model to read.
    Text(String),
    /// An image: its bytes and MIME type (`image/png`, ...).
    Image(Media),
    /// Audio: its bytes and MIME type (`audio/wav`, ...).
    Audio(Media),
    /// A link to a resource the client may read (MCP's `resource_link`).
    ResourceLink(ResourceLink),
    /// A resource's contents, embedded: text or bytes (MCP's `resource`).
    Resource(EmbeddedResource),
}

impl Content {
    /// A text block.
    ///
    /// ```
    /// use registry_core::content::Content;
    ///
    /// assert_eq!(Content::text("3 builds failed").as_text(), Some("3 builds failed"));
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(text.into())
    }

    /// An image from its bytes (a `Vec<u8>`, a `&'static [u8]`, a [`Bytes`]: not copied) and
    /// its MIME type.
    ///
    /// ```
    /// use registry_core::content::Content;
    ///
    /// let image = Content::image(vec![0x89, b'P', b'N', b'G'], "image/png");
    /// let Content::Image(media) = &image else { unreachable!() };
    /// assert_eq!((media.mime_type(), media.len()), ("image/png", 4));
    /// ```
    pub fn image(data: impl Into<Bytes>, mime_type: impl Into<String>) -> Self {
        Content::Image(Media::new(data, mime_type))
    }

    /// Audio from its bytes and its MIME type.
    ///
    /// ```
    /// use registry_core::content::Content;
    ///
    /// let audio = Content::audio(&b"RIFF"[..], "audio/wav");
    /// assert!(matches!(audio, Content::Audio(media) if media.mime_type() == "audio/wav"));
    /// ```
    pub fn audio(data: impl Into<Bytes>, mime_type: impl Into<String>) -> Self {
        Content::Audio(Media::new(data, mime_type))
    }

    /// A link to the resource at `uri`, called `name`. A link with a title, a description, a
    /// MIME type or a size is a [`ResourceLink`], converted with `.into()`.
    ///
    /// ```
    /// use registry_core::{content::Content, content::ResourceLink};
    ///
    /// let plain = Content::resource_link("file:///reports/q3.pdf", "q3.pdf");
    /// let described: Content = ResourceLink::new("file:///reports/q3.pdf", "q3.pdf")
    ///     .with_title("Third quarter report")
    ///     .with_mime_type("application/pdf")
    ///     .with_size(52_000)
    ///     .into();
    /// assert_ne!(plain, described);
    /// ```
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Content::ResourceLink(ResourceLink::new(uri, name))
    }

    /// The text of the resource at `uri`, embedded.
    ///
    /// ```
    /// use registry_core::content::Content;
    ///
    /// let log = Content::embedded_text("build://web/42/log", "text/plain", "step 3 failed");
    /// let Content::Resource(resource) = &log else { unreachable!() };
    /// assert_eq!(resource.text(), Some("step 3 failed"));
    /// ```
    pub fn embedded_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Content::Resource(EmbeddedResource::new(
            uri,
            Embedded::Text {
                mime_type: mime_type.into(),
                text: text.into(),
            },
        ))
    }

    /// The bytes of the resource at `uri` (a file), embedded.
    ///
    /// ```
    /// use registry_core::content::Content;
    ///
    /// let pdf = Content::embedded_blob("file:///reports/q3.pdf", "application/pdf", &b"%PDF-1.7"[..]);
    /// let Content::Resource(resource) = &pdf else { unreachable!() };
    /// assert_eq!(resource.blob().map(|blob| blob.len()), Some(8));
    /// ```
    pub fn embedded_blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        data: impl Into<Bytes>,
    ) -> Self {
        Content::Resource(EmbeddedResource::new(
            uri,
            Embedded::Blob(Media::new(data, mime_type)),
        ))
    }

    /// The text of a text block; `None` for any other block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(text) => Some(text),
            Content::Image(_)
            | Content::Audio(_)
            | Content::ResourceLink(_)
            | Content::Resource(_) => None,
        }
    }

    /// The block as JSON without its bytes (a size instead), in MCP's names: what
    /// [`Observation::content`](crate::Observation::content) shows of content.
    pub(crate) fn view(&self) -> Value {
        match self {
            Content::Text(text) => json!({"type": "text", "text": text}),
            Content::Image(media) => media.view("image"),
            Content::Audio(media) => media.view("audio"),
            Content::ResourceLink(link) => link.to_json(),
            Content::Resource(resource) => {
                let mut inner = Map::new();
                inner.insert("uri".into(), resource.uri.as_str().into());
                inner.insert("mimeType".into(), resource.mime_type().into());
                match &resource.contents {
                    Embedded::Text { text, .. } => {
                        inner.insert("text".into(), text.as_str().into())
                    }
                    Embedded::Blob(media) => inner.insert("size".into(), media.len().into()),
                };
                json!({"type": "resource", "resource": inner})
            }
        }
    }

    /// A short text for a consumer that cannot take the block: what it is, its MIME type and
    /// size, never its bytes; an embedded text is its text.
    pub(crate) fn describe(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Image(media) => media.describe("image"),
            Content::Audio(media) => media.describe("audio"),
            Content::ResourceLink(link) => link.describe(),
            Content::Resource(resource) => match &resource.contents {
                Embedded::Text { text, .. } => text.clone(),
                Embedded::Blob(media) => format!(
                    "[file: {}, {}, {} bytes, not shown]",
                    resource.uri,
                    media.mime_type,
                    media.len()
                ),
            },
        }
    }
}

impl From<ResourceLink> for Content {
    fn from(link: ResourceLink) -> Self {
        Content::ResourceLink(link)
    }
}

/// Bytes with a MIME type: an image, audio, or an embedded file.
///
/// Its `Debug` shows the MIME type and the size, not the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Media {
    data: Bytes,
    mime_type: String,
}

impl Media {
    /// `data` of the type `mime_type`.
    pub fn new(data: impl Into<Bytes>, mime_type: impl Into<String>) -> Self {
        Media {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// The bytes.
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// The MIME type, as given.
    pub fn mime_type(&self) -> &str {
        &self.mime_type
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The bytes in base64 (standard alphabet, padded), as MCP's `data` and `blob` carry them.
    ///
    /// ```
    /// use registry_core::content::Media;
    ///
    /// assert_eq!(Media::new(&b"hi"[..], "text/plain").base64(), "aGk=");
    /// ```
    pub fn base64(&self) -> String {
        self.encoded("")
    }

    /// A `data:` URL of the bytes: `data:<MIME type>;base64,<data>`.
    ///
    /// ```
    /// use registry_core::content::Media;
    ///
    /// assert_eq!(Media::new(&b"hi"[..], "text/plain").data_url(), "data:text/plain;base64,aGk=");
    /// ```
    pub fn data_url(&self) -> String {
        self.encoded(&format!("data:{};base64,", self.mime_type))
    }

    /// `prefix` then the bytes in base64, encoded once into a string of the exact size.
    fn encoded(&self, prefix: &str) -> String {
        let size = base64::encoded_len(self.data.len(), true).unwrap_or_default();
        let mut text = String::with_capacity(prefix.len() + size);
        text.push_str(prefix);
        STANDARD.encode_string(&self.data, &mut text);
        text
    }

    /// Whether the MIME type is one of `types` (lowercase, without parameters), ignoring
    /// case and any parameters (`; charset=...`).
    pub(crate) fn is_one_of(&self, types: &[&str]) -> bool {
        let essence = self.mime_type.split(';').next().unwrap_or_default().trim();
        types.iter().any(|kind| essence.eq_ignore_ascii_case(kind))
    }

    fn view(&self, kind: &str) -> Value {
        json!({"type": kind, "mimeType": self.mime_type, "size": self.len()})
    }

    fn describe(&self, kind: &str) -> String {
        format!(
            "[{kind}: {}, {} bytes, not shown]",
            self.mime_type,
            self.len()
        )
    }
}

impl fmt::Debug for Media {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Media")
            .field("mime_type", &self.mime_type)
            .field("len", &self.len())
            .finish()
    }
}

/// A link to a resource (MCP's `resource_link`): its URI and name, and optionally a title,
/// a description, a MIME type and a size.
///
/// ```
/// use registry_core::content::ResourceLink;
///
/// let link = ResourceLink::new("file:///reports/q3.pdf", "q3.pdf").with_size(52_000);
/// assert_eq!((link.name(), link.size()), ("q3.pdf", Some(52_000)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceLink {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
    size: Option<u64>,
}

impl ResourceLink {
    /// A link to `uri`, called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }

    /// With a human-readable title.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// With a description of the resource.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With the resource's MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// With the resource's size in bytes.
    #[must_use]
    pub fn with_size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The title, if given.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The description, if given.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The MIME type, if given.
    pub fn mime_type(&self) -> Option<&str> {
        self.mime_type.as_deref()
    }

    /// The size in bytes, if given.
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// MCP's `resource_link` block: `{"type", "uri", "name", "title"?, "description"?,
    /// "mimeType"?, "size"?}`.
    pub(crate) fn to_json(&self) -> Value {
        let mut link = Map::new();
        link.insert("type".into(), "resource_link".into());
        link.insert("uri".into(), self.uri.as_str().into());
        link.insert("name".into(), self.name.as_str().into());
        let optional = [
            ("title", self.title.as_deref()),
            ("description", self.description.as_deref()),
            ("mimeType", self.mime_type.as_deref()),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                link.insert(key.into(), value.into());
            }
        }
        if let Some(size) = self.size {
            link.insert("size".into(), size.into());
        }
        Value::Object(link)
    }

    /// `[resource link: <uri>, name "...", title "..."?, <MIME type>?, <size> bytes?,
    /// description "..."?]`.
    fn describe(&self) -> String {
        let mut text = format!("[resource link: {}, name {:?}", self.uri, self.name);
        if let Some(title) = &self.title {
            text.push_str(&format!(", title {title:?}"));
        }
        if let Some(mime_type) = &self.mime_type {
            text.push_str(&format!(", {mime_type}"));
        }
        if let Some(size) = self.size {
            text.push_str(&format!(", {size} bytes"));
        }
        if let Some(description) = &self.description {
            text.push_str(&format!(", description {description:?}"));
        }
        text.push(']');
        text
    }
}

/// A resource's contents, embedded in the result (MCP's `resource`): its URI, its MIME type,
/// and its text or its bytes. Made by [`Content::embedded_text`] and
/// [`Content::embedded_blob`].
///
/// ```
/// use registry_core::content::Content;
///
/// let log = Content::embedded_text("build://web/42/log", "text/plain", "step 3 failed");
/// let Content::Resource(log) = log else { unreachable!() };
/// assert_eq!((log.uri(), log.mime_type(), log.blob()), ("build://web/42/log", "text/plain", None));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedResource {
    uri: String,
    contents: Embedded,
}

/// What an [`EmbeddedResource`] holds: text or bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Embedded {
    /// Text (MCP's `TextResourceContents`).
    Text {
        /// Its MIME type.
        mime_type: String,
        /// The text.
        text: String,
    },
    /// Bytes, with their MIME type (MCP's `BlobResourceContents`).
    Blob(Media),
}

impl EmbeddedResource {
    fn new(uri: impl Into<String>, contents: Embedded) -> Self {
        EmbeddedResource {
            uri: uri.into(),
            contents,
        }
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The MIME type.
    pub fn mime_type(&self) -> &str {
        match &self.contents {
            Embedded::Text { mime_type, .. } => mime_type,
            Embedded::Blob(media) => media.mime_type(),
        }
    }

    /// Its text or its bytes.
    pub fn contents(&self) -> &Embedded {
        &self.contents
    }

    /// The text of a text resource; `None` for bytes.
    pub fn text(&self) -> Option<&str> {
        match &self.contents {
            Embedded::Text { text, .. } => Some(text),
            Embedded::Blob(_) => None,
        }
    }

    /// The bytes of a binary resource, with its MIME type; `None` for text.
    pub fn blob(&self) -> Option<&Media> {
        match &self.contents {
            Embedded::Text { .. } => None,
            Embedded::Blob(media) => Some(media),
        }
    }

    /// The last segment of the URI's path (without query or fragment), as a file name;
    /// `file` when there is none.
    pub(crate) fn file_name(&self) -> &str {
        let path = self.uri.split(['?', '#']).next().unwrap_or_default();
        match path.rsplit('/').next() {
            Some(name) if !name.is_empty() && !name.contains(':') => name,
            _ => "file",
        }
    }
}

/// A result of content blocks beside a structured value: `content` is what a model reads and
/// sees, `structured` the data (MCP's `structuredContent`).
///
/// A `#[tool]` returning `ToolOutput<T>` (or `Result<ToolOutput<T>, E>`) has `T`'s JSON Schema
/// as its output schema, when `T` implements `JsonSchema` and is an object. Every consumer
/// gets the blocks followed by the structured value's JSON text (MCP also gets it as
/// `structuredContent`; Gemini as `response.output`). With no blocks, the result is exactly
/// that of a tool returning `T`.
///
/// ```standalone_crate
/// use registry_core::{tool, content::Content, Profile, Registry, Subject, ToolCall, content::ToolOutput};
/// use schemars::JsonSchema;
/// use serde::Serialize;
/// use serde_json::json;
///
/// /// The size of a chart.
/// #[derive(Serialize, JsonSchema)]
/// struct Chart {
///     /// Width in pixels.
///     width: u32,
/// }
///
/// /// Draw the chart of the build times of a project.
/// #[tool(public)]
/// fn build_chart(project: String) -> Result<ToolOutput<Chart>, String> {
///     let png = vec![0x89, b'P', b'N', b'G']; // drawn for `project`
///     Ok(ToolOutput::new(Chart { width: 640 }).with(Content::image(png, "image/png")))
/// }
///
/// let registry = Registry::from_inventory().unwrap();
/// let tool = registry.get("build_chart").unwrap();
/// assert_eq!(tool.output_schema().unwrap()["properties"]["width"]["type"], json!("integer"));
///
/// let run = registry.open_run("run-1", &Subject::new("acme"));
/// let observation = run.call_blocking(ToolCall::new("c1", "build_chart", json!({"project": "web"})));
/// assert_eq!(observation.json(), &json!({"width": 640}));
/// let mcp = Profile::Mcp.render(&observation);
/// assert_eq!(mcp["content"][0], json!({"type": "image", "data": "iVBORw==", "mimeType": "image/png"}));
/// assert_eq!(mcp["content"][1], json!({"type": "text", "text": r#"{"width":640}"#}));
/// assert_eq!(mcp["structuredContent"], json!({"width": 640}));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput<T> {
    /// The blocks, in order.
    pub content: Vec<Content>,
    /// The structured value.
    pub structured: T,
}

impl<T> ToolOutput<T> {
    /// `structured`, without blocks yet.
    pub fn new(structured: T) -> Self {
        ToolOutput {
            content: Vec::new(),
            structured,
        }
    }

    /// With `block` after the blocks already there.
    #[must_use]
    pub fn with(mut self, block: impl Into<Content>) -> Self {
        self.content.push(block.into());
        self
    }
}

/// What a tool gives back when it succeeds: a JSON value, blocks of content, or both.
///
/// `#[tool]` functions never name it: the macro converts what they return. A
/// [`DynamicTool`](crate::DynamicTool)'s
/// [`handler`](crate::DynamicTool::handler) returns anything that converts
/// into it: a [`Value`], a [`Content`], a `Vec<Content>`, or a `ToolOutput<Value>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    value: Option<Value>,
    blocks: Vec<Content>,
}

impl Payload {
    /// The JSON value (none for content alone) and the blocks.
    pub(crate) fn into_parts(self) -> (Option<Value>, Vec<Content>) {
        (self.value, self.blocks)
    }

    /// The payload of `value` and `blocks` (what [`into_parts`](Self::into_parts) took apart).
    pub(crate) fn from_parts(value: Option<Value>, blocks: Vec<Content>) -> Self {
        Payload { value, blocks }
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Payload {
            value: Some(value),
            blocks: Vec::new(),
        }
    }
}

impl From<Content> for Payload {
    fn from(block: Content) -> Self {
        Payload {
            value: None,
            blocks: vec![block],
        }
    }
}

impl From<Vec<Content>> for Payload {
    fn from(blocks: Vec<Content>) -> Self {
        Payload {
            value: None,
            blocks,
        }
    }
}

impl From<ToolOutput<Value>> for Payload {
    fn from(output: ToolOutput<Value>) -> Self {
        Payload {
            value: Some(output.structured),
            blocks: output.content,
        }
    }
}

/// Content alone as JSON: the text of a lone text block, otherwise the array of the blocks'
/// [`views`](Content::view).
pub(crate) fn view(blocks: &[Content]) -> Value {
    match blocks {
        [Content::Text(text)] => Value::String(text.clone()),
        blocks => Value::Array(blocks.iter().map(Content::view).collect()),
    }
}
