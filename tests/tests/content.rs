//! Rich results: tools that return blocks of content (text, images, audio, resource links,
//! embedded resources), alone or beside a structured value; what each profile sends for each
//! block, output schemas, run-time tools, and the MCP server's `CallToolResult` through a
//! real rmcp client, a 5 MB image included.

mod mcp_support;

use std::io;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcp_support::{call, in_process, within};
use registry_core::{
    DynamicTool, Observation, Profile, Registry, Run, Subject, ToolCall,
    content::{Content, ResourceLink, ToolOutput},
    tool,
};
use registry_mcp::{McpServer, ServerOptions};
use registry_tests::{failure, open_run};
use rmcp::ServiceExt;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use rmcp::service::{RoleClient, RunningService};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
const PNG_BASE64: &str = "iVBORw0KGgo=";

/// One block of each kind, by name.
fn sample(kind: &str) -> Content {
    match kind {
        "text" => Content::text("3 builds failed"),
        "image" => Content::image(PNG, "image/png"),
        "svg" => Content::image(&b"<svg/>"[..], "image/svg+xml"),
        "audio" => Content::audio(&b"RIFF"[..], "audio/wav"),
        "link" => ResourceLink::new("file:///reports/q3.pdf", "q3.pdf")
            .with_title("Third quarter")
            .with_description("The numbers")
            .with_mime_type("application/pdf")
            .with_size(52_000)
            .into(),
        "log" => Content::embedded_text("build://web/42/log", "text/plain", "step 3 failed"),
        "pdf" => Content::embedded_blob(
            "file:///reports/q3.pdf",
            "application/pdf",
            &b"%PDF-1.7"[..],
        ),
        "zip" => Content::embedded_blob("file:///out/site.zip?v=2", "application/zip", &b"PK"[..]),
        other => panic!("no sample {other:?}"),
    }
}

/// A chart's size: the structured part of [`chart`].
#[derive(Serialize, JsonSchema)]
struct Chart {
    /// Width in pixels.
    width: u32,
}

/// A value with no JSON Schema.
#[derive(Serialize)]
struct Unschematic {
    width: u32,
}

/// Give one block of the kind asked for.
#[tool(public)]
fn block(kind: String) -> Content {
    sample(&kind)
}

/// Give one block of the kind asked for, asynchronously.
#[tool(public)]
async fn block_async(kind: String) -> Content {
    sample(&kind)
}

/// Give a text and an image.
#[tool(public)]
fn gallery() -> Vec<Content> {
    vec![sample("text"), sample("image")]
}

/// Give nothing at all.
#[tool(public)]
fn nothing_to_show() -> Vec<Content> {
    Vec::new()
}

/// Give the blocks asked for, or fail.
#[tool(public)]
fn blocks_or_error(kinds: Vec<String>) -> Result<Vec<Content>, String> {
    match kinds.iter().find(|kind| kind.as_str() == "bad") {
        Some(_) => Err("no such block".to_owned()),
        None => Ok(kinds.iter().map(|kind| sample(kind)).collect()),
    }
}

/// Give the blocks asked for, or fail, asynchronously.
#[tool(public)]
async fn blocks_or_error_async(kinds: Vec<String>) -> Result<Vec<Content>, String> {
    blocks_or_error(kinds)
}

/// Give an image, through an `io::Result` alias.
#[tool(public)]
fn image_or_io_error() -> io::Result<Content> {
    Ok(sample("image"))
}

/// Draw a chart: an image beside its size.
#[tool(public)]
fn chart() -> ToolOutput<Chart> {
    ToolOutput::new(Chart { width: 640 })
        .with(sample("image"))
        .with(sample("audio"))
}

/// Draw a chart asynchronously, or fail.
#[tool(public)]
async fn chart_async(fail: bool) -> Result<ToolOutput<Chart>, String> {
    if fail {
        return Err("the plotter is down".to_owned());
    }
    Ok(ToolOutput::new(Chart { width: 640 }).with(sample("image")))
}

/// A chart's size without a drawing.
#[tool(public)]
fn chart_without_blocks() -> ToolOutput<Chart> {
    ToolOutput::new(Chart { width: 640 })
}

/// A chart's size, plainly.
#[tool(public)]
fn chart_plain() -> Chart {
    Chart { width: 640 }
}

/// A chart whose size type has no schema.
#[tool(public)]
fn chart_unschematic() -> ToolOutput<Unschematic> {
    ToolOutput::new(Unschematic { width: 640 }).with(sample("text"))
}

/// A label beside a text: not an object, so no output schema.
#[tool(public)]
fn labelled() -> ToolOutput<String> {
    ToolOutput::new("ok".to_owned()).with(sample("text"))
}

/// A large image of `megabytes` MB.
#[tool(public)]
fn large_image(megabytes: usize) -> Content {
    Content::image(noise(megabytes << 20), "image/png")
}

/// Bytes that repeat nowhere near as often as a run of zeros would.
fn noise(len: usize) -> Vec<u8> {
    let mut state: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state.to_le_bytes()[0]
        })
        .collect()
}

/// Calls `tool` in `run`, with the call id `c1`.
fn observe(run: &Run, tool: &str, arguments: Value) -> Observation {
    run.call_blocking(ToolCall::new("c1", tool, arguments))
}

fn declared() -> Registry {
    Registry::builder()
        .declared_in([module_path!()])
        .build()
        .unwrap()
}

/// What every profile renders for one call (OpenAI's strict and non-strict alike).
fn renders(registry: &Registry, tool: &str, arguments: Value) -> [Value; 5] {
    let observation = observe(&open_run(registry, &[]), tool, arguments);
    assert!(!observation.is_error(), "{observation:?}");
    for strict in [false, true] {
        assert_eq!(
            Profile::OpenAiChat { strict }.render(&observation),
            Profile::OpenAiChat { strict: !strict }.render(&observation)
        );
        assert_eq!(
            Profile::OpenAiResponses { strict }.render(&observation),
            Profile::OpenAiResponses { strict: !strict }.render(&observation)
        );
    }
    [
        Profile::Mcp,
        Profile::Anthropic,
        Profile::OpenAiResponses { strict: true },
        Profile::OpenAiChat { strict: true },
        Profile::Gemini,
    ]
    .map(|profile| profile.render(&observation))
}

/// MCP's, Anthropic's, Responses' and Chat's results around their content, and Gemini's
/// `functionResponse` without its name and id.
fn unwrap_renders(renders: [Value; 5]) -> [Value; 5] {
    let [mcp, anthropic, responses, chat, gemini] = renders;
    assert_eq!(mcp["isError"], json!(false));
    assert_eq!(anthropic["tool_use_id"], json!("c1"));
    assert_eq!(responses["call_id"], json!("c1"));
    assert_eq!(chat["tool_call_id"], json!("c1"));
    let mut gemini = gemini["functionResponse"].clone();
    let gemini = gemini.as_object_mut().unwrap();
    assert_eq!(gemini.remove("id"), Some(json!("c1")));
    gemini.remove("name");
    [
        mcp["content"].clone(),
        anthropic["content"].clone(),
        responses["output"].clone(),
        chat["content"].clone(),
        Value::Object(gemini.clone()),
    ]
}

/// A text block in each profile's words, and the same text as Gemini's `output`.
fn fallback(text: &str) -> [Value; 5] {
    [
        Value::Null,
        json!([{"type": "text", "text": text}]),
        json!([{"type": "input_text", "text": text}]),
        json!(text),
        json!({"response": {"output": text}}),
    ]
}

#[test]
fn each_block_renders_as_each_profile_takes_it() {
    let registry = declared();
    let link_text = "[resource link: file:///reports/q3.pdf, name \"q3.pdf\", title \"Third quarter\", application/pdf, 52000 bytes, description \"The numbers\"]";
    let cases: [(&str, Value, [Value; 5]); 8] = [
        (
            "text",
            json!({"type": "text", "text": "3 builds failed"}),
            fallback("3 builds failed"),
        ),
        (
            "image",
            json!({"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}),
            [
                Value::Null,
                json!([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}}]),
                json!([{"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_BASE64}")}]),
                json!("[image: image/png, 8 bytes, not shown]"),
                json!({"response": {}, "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG_BASE64}}]}),
            ],
        ),
        (
            "svg",
            json!({"type": "image", "data": "PHN2Zy8+", "mimeType": "image/svg+xml"}),
            fallback("[image: image/svg+xml, 6 bytes, not shown]"),
        ),
        (
            "audio",
            json!({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}),
            fallback("[audio: audio/wav, 4 bytes, not shown]"),
        ),
        (
            "link",
            json!({
                "type": "resource_link", "uri": "file:///reports/q3.pdf", "name": "q3.pdf",
                "title": "Third quarter", "description": "The numbers",
                "mimeType": "application/pdf", "size": 52000,
            }),
            fallback(link_text),
        ),
        (
            "log",
            json!({"type": "resource", "resource": {"uri": "build://web/42/log", "mimeType": "text/plain", "text": "step 3 failed"}}),
            fallback("step 3 failed"),
        ),
        (
            "pdf",
            json!({"type": "resource", "resource": {"uri": "file:///reports/q3.pdf", "mimeType": "application/pdf", "blob": "JVBERi0xLjc="}}),
            [
                Value::Null,
                json!([{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjc="}}]),
                json!([{"type": "input_file", "filename": "q3.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjc="}]),
                json!("[file: file:///reports/q3.pdf, application/pdf, 8 bytes, not shown]"),
                json!({"response": {}, "parts": [{"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0xLjc="}}]}),
            ],
        ),
        (
            "zip",
            json!({"type": "resource", "resource": {"uri": "file:///out/site.zip?v=2", "mimeType": "application/zip", "blob": "UEs="}}),
            {
                let mut expected = fallback(
                    "[file: file:///out/site.zip?v=2, application/zip, 2 bytes, not shown]",
                );
                expected[2] = json!([{"type": "input_file", "filename": "site.zip", "file_data": "data:application/zip;base64,UEs="}]);
                expected
            },
        ),
    ];
    for (kind, mcp, mut expected) in cases {
        expected[0] = json!([mcp]);
        for tool in ["block", "block_async"] {
            let got = unwrap_renders(renders(&registry, tool, json!({"kind": kind})));
            for (profile, (got, expected)) in got.iter().zip(&expected).enumerate() {
                assert_eq!(got, expected, "{tool}({kind}), profile #{profile}");
            }
        }
    }
}

#[test]
fn content_alone_reads_as_a_view_without_bytes() {
    let run = open_run(&declared(), &[]);
    let call = |tool: &str, arguments: Value| observe(&run, tool, arguments);
    // A lone text block reads as its text, like a tool returning a `String`.
    let text = call("block", json!({"kind": "text"}));
    assert_eq!(text.json(), &json!("3 builds failed"));
    assert_eq!(text.value(), None);
    assert!(!text.is_structured());
    let views = [
        (
            "image",
            json!({"type": "image", "mimeType": "image/png", "size": 8}),
        ),
        (
            "audio",
            json!({"type": "audio", "mimeType": "audio/wav", "size": 4}),
        ),
        (
            "log",
            json!({"type": "resource", "resource": {"uri": "build://web/42/log", "mimeType": "text/plain", "text": "step 3 failed"}}),
        ),
        (
            "pdf",
            json!({"type": "resource", "resource": {"uri": "file:///reports/q3.pdf", "mimeType": "application/pdf", "size": 8}}),
        ),
    ];
    for (kind, view) in views {
        let observation = call("block", json!({"kind": kind}));
        assert_eq!(observation.json(), &json!([view]), "{kind}");
        assert_eq!(observation.blocks(), [sample(kind)]);
    }
    let gallery = call("gallery", json!({}));
    assert_eq!(gallery.blocks(), [sample("text"), sample("image")]);
    assert_eq!(
        gallery.json(),
        &json!([
            {"type": "text", "text": "3 builds failed"},
            {"type": "image", "mimeType": "image/png", "size": 8},
        ])
    );
    // Serialized, an observation carries the view, not the bytes.
    assert_eq!(
        serde_json::to_value(&gallery).unwrap()["content"],
        *gallery.json()
    );
}

#[test]
fn every_form_of_return_gives_its_blocks() {
    let run = open_run(&declared(), &[]);
    let call = |tool: &str, arguments: Value| observe(&run, tool, arguments);
    for tool in ["blocks_or_error", "blocks_or_error_async"] {
        let ok = call(tool, json!({"kinds": ["text", "pdf", "link"]}));
        assert_eq!(ok.blocks(), [sample("text"), sample("pdf"), sample("link")]);
        assert_eq!(ok.value(), None);
        let failed = call(tool, json!({"kinds": ["text", "bad"]}));
        assert_eq!(failure(&failed), "no such block");
        assert!(failed.blocks().is_empty());
    }
    let image = call("image_or_io_error", json!({}));
    assert_eq!(image.blocks(), [sample("image")]);
    let chart = call("chart_async", json!({"fail": false}));
    assert_eq!(chart.blocks(), [sample("image")]);
    assert_eq!(chart.value(), Some(&json!({"width": 640})));
    assert_eq!(chart.json(), &json!({"width": 640}));
    assert!(chart.is_structured());
    assert_eq!(
        failure(&call("chart_async", json!({"fail": true}))),
        "the plotter is down"
    );
    let unschematic = call("chart_unschematic", json!({}));
    assert_eq!(unschematic.value(), Some(&json!({"width": 640})));
    assert!(!unschematic.is_structured());
}

#[test]
fn output_schemas_follow_the_return_type() {
    let registry = declared();
    let schema = |tool: &str| registry.get(tool).unwrap().output_schema().cloned();
    for tool in [
        "block",
        "block_async",
        "gallery",
        "blocks_or_error",
        "blocks_or_error_async",
        "image_or_io_error",
        "chart_unschematic",
        "labelled",
    ] {
        assert_eq!(schema(tool), None, "{tool}");
    }
    let chart = schema("chart_plain").expect("a chart has a schema");
    assert_eq!(chart["type"], json!("object"));
    assert_eq!(chart["properties"]["width"]["type"], json!("integer"));
    for tool in ["chart", "chart_async", "chart_without_blocks"] {
        assert_eq!(schema(tool).as_ref(), Some(&chart), "{tool}");
    }
}

#[test]
fn a_structured_value_follows_the_blocks() {
    let registry = declared();
    let [mcp, anthropic, responses, chat, gemini] = renders(&registry, "chart", json!({}));
    let value_text = r#"{"width":640}"#;
    assert_eq!(
        mcp,
        json!({
            "content": [
                {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                {"type": "text", "text": value_text},
            ],
            "isError": false,
            "structuredContent": {"width": 640},
        })
    );
    assert_eq!(
        anthropic["content"],
        json!([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}},
            {"type": "text", "text": "[audio: audio/wav, 4 bytes, not shown]"},
            {"type": "text", "text": value_text},
        ])
    );
    assert_eq!(
        responses["output"],
        json!([
            {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_BASE64}")},
            {"type": "input_text", "text": "[audio: audio/wav, 4 bytes, not shown]"},
            {"type": "input_text", "text": value_text},
        ])
    );
    assert_eq!(
        chat["content"],
        json!(format!(
            "[image: image/png, 8 bytes, not shown]\n[audio: audio/wav, 4 bytes, not shown]\n{value_text}"
        ))
    );
    assert_eq!(
        gemini,
        json!({"functionResponse": {
            "name": "chart",
            "response": {"output": {"width": 640}, "content": "[audio: audio/wav, 4 bytes, not shown]"},
            "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG_BASE64}}],
            "id": "c1",
        }})
    );
}

#[test]
fn a_structured_value_without_blocks_renders_as_a_plain_value() {
    let registry = declared();
    let bare = unwrap_renders(renders(&registry, "chart_without_blocks", json!({})));
    let plain = unwrap_renders(renders(&registry, "chart_plain", json!({})));
    assert_eq!(bare, plain);
    assert_eq!(bare[1], json!(r#"{"width":640}"#));
    let [mcp, ..] = renders(&registry, "chart_without_blocks", json!({}));
    assert_eq!(mcp["structuredContent"], json!({"width": 640}));
}

#[test]
fn no_blocks_at_all_render_as_empty_content() {
    let registry = declared();
    let got = unwrap_renders(renders(&registry, "nothing_to_show", json!({})));
    assert_eq!(
        got,
        [
            json!([]),
            json!([]),
            json!([]),
            json!(""),
            json!({"response": {}})
        ]
    );
}

#[test]
fn a_run_time_tool_returns_content() {
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("snapshot", "Take a snapshot of the dashboard.")
                .public()
                .handler(|_ctx, _args| Ok::<_, String>(sample("image"))),
        )
        .tool(
            DynamicTool::new("plot", "Plot the build times.")
                .public()
                .output_schema(
                    json!({"type": "object", "properties": {"width": {"type": "integer"}}}),
                )
                .async_handler(|_ctx, _args| async {
                    Ok::<_, String>(ToolOutput::new(json!({"width": 640})).with(sample("image")))
                }),
        )
        .build()
        .unwrap();
    let run = open_run(&registry, &[]);
    let snapshot = run.call_blocking(ToolCall::new("c1", "snapshot", json!({})));
    assert_eq!(snapshot.blocks(), [sample("image")]);
    let plot = run.call_blocking(ToolCall::new("c2", "plot", json!({})));
    assert_eq!(plot.blocks(), [sample("image")]);
    assert!(plot.is_structured());
    assert_eq!(
        Profile::Mcp.render(&plot)["structuredContent"],
        json!({"width": 640})
    );
}

/// A client of an in-process MCP server of the tools of this file.
async fn connect() -> RunningService<RoleClient, ()> {
    let server = McpServer::new(declared(), ServerOptions::default()).unwrap();
    let client_io = in_process(server, Subject::new("t"));
    within("initialize", ().serve(tokio::io::split(client_io)))
        .await
        .unwrap()
}

/// A result as JSON, without the `resultType` older protocol versions do not have.
fn as_json(result: &CallToolResult) -> Value {
    let mut json = serde_json::to_value(result).unwrap();
    json.as_object_mut().unwrap().remove("resultType");
    json
}

#[tokio::test]
async fn the_mcp_server_sends_each_block_as_rmcp_content() {
    let client = connect().await;
    let registry = declared();
    let run = open_run(&registry, &[]);
    for kind in ["text", "image", "svg", "audio", "link", "log", "pdf", "zip"] {
        let arguments = json!({"kind": kind});
        let result = call(&client, "block", arguments.clone()).await.unwrap();
        let observation = observe(&run, "block", arguments);
        assert_eq!(
            as_json(&result),
            Profile::Mcp.render(&observation),
            "{kind}"
        );
    }
    let link = call(&client, "block", json!({"kind": "link"}))
        .await
        .unwrap();
    let Some(ContentBlock::ResourceLink(resource)) = link.content.first() else {
        panic!("a resource link: {link:?}");
    };
    assert_eq!(
        (resource.name.as_str(), resource.size),
        ("q3.pdf", Some(52_000))
    );
    let pdf = call(&client, "block", json!({"kind": "pdf"}))
        .await
        .unwrap();
    let Some(ContentBlock::Resource(embedded)) = pdf.content.first() else {
        panic!("an embedded resource: {pdf:?}");
    };
    assert!(matches!(
        &embedded.resource,
        ResourceContents::BlobResourceContents { blob, mime_type: Some(mime), .. }
            if blob == "JVBERi0xLjc=" && mime == "application/pdf"
    ));
    for (tool, arguments) in [
        ("chart", json!({})),
        ("chart_async", json!({"fail": false})),
        ("chart_async", json!({"fail": true})),
        ("blocks_or_error", json!({"kinds": ["audio", "log"]})),
        ("nothing_to_show", json!({})),
        ("chart_plain", json!({})),
    ] {
        let result = call(&client, tool, arguments.clone()).await.unwrap();
        let observation = observe(&run, tool, arguments);
        assert_eq!(
            as_json(&result),
            Profile::Mcp.render(&observation),
            "{tool}"
        );
    }
    within("shutdown", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_large_image_arrives_intact_through_mcp() {
    let client = connect().await;
    let result = call(&client, "large_image", json!({"megabytes": 5}))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    let [ContentBlock::Image(image)] = result.content.as_slice() else {
        panic!("one image block, got {} blocks", result.content.len());
    };
    assert_eq!(image.mime_type, "image/png");
    let bytes = STANDARD.decode(&image.data).unwrap();
    assert_eq!(bytes.len(), 5 << 20);
    assert!(bytes == noise(5 << 20), "the image changed on its way");
    within("shutdown", client.cancel()).await.unwrap();
}
