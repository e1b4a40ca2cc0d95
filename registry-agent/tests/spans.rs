//! The loop's spans, read back with a capturing `tracing` layer: one `invoke_agent` span per
//! invocation, its `chat` and `execute_tool` spans its children, with the GenAI semantic
//! conventions' attributes, and no argument value or result on any of them.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use axum::response::IntoResponse;
use registry_agent::{Agent, AgentEnd, Api, ModelConfig};
use registry_core::{DynamicTool, Registry, Subject};
use serde_json::json;
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[derive(Debug, Clone)]
struct Span {
    id: u64,
    name: String,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Span>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = ctx
            .span(id)
            .and_then(|span| span.parent())
            .map(|parent| parent.id().into_u64());
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(Span {
            id: id.into_u64(),
            name: attrs.metadata().name().to_owned(),
            parent,
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        if let Some(span) = spans.iter_mut().rev().find(|span| span.id == id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }
}

/// Answers a first request with two calls, the next with an answer.
async fn answer(body: String) -> impl IntoResponse {
    let reply = if body.contains("\"role\":\"tool\"") {
        json!({"choices": [{"message": {"role": "assistant", "content": "done"}}],
               "usage": {"prompt_tokens": 120, "completion_tokens": 4}})
    } else {
        json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"project\": \"secret-project-x\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "no_such_tool", "arguments": "{}"}},
        ]}}], "usage": {"prompt_tokens": 100, "completion_tokens": 9}})
    };
    ([("content-type", "application/json")], reply.to_string())
}

#[tokio::test]
async fn the_spans_follow_the_genai_conventions_and_hold_no_values() {
    let capture = Capture::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, axum::Router::new().fallback(answer))
            .await
            .unwrap()
    });
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("lookup", "Look a project up.")
                .scopes(["read"])
                .read_only()
                .parameters(
                    json!({"type": "object", "properties": {"project": {"type": "string"}}}),
                )
                .non_blocking()
                .handler(|_, _| Ok::<_, String>(json!("classified-result"))),
        )
        .build()
        .unwrap();
    let run = registry.open_run("run-7", &Subject::new("acme").with_scopes(["read"]));
    let agent = Agent::new(ModelConfig::new(Api::OpenAiChat, &url, "m-1")).unwrap();
    let outcome = agent.run(&run, "Look it up.").await.unwrap();
    assert!(matches!(outcome, AgentEnd::Answered { .. }), "{outcome:?}");

    let spans = capture.0.lock().unwrap().clone();
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };
    let agents = named("invoke_agent");
    assert_eq!(agents.len(), 1, "{spans:#?}");
    let root = agents[0];
    assert_eq!(root.fields["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(root.fields["gen_ai.conversation.id"], "run-7");

    let chats = named("chat");
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        assert_eq!(chat.parent, Some(root.id), "{chat:?}");
        assert_eq!(chat.fields["otel.name"], "chat m-1");
        assert_eq!(chat.fields["gen_ai.operation.name"], "chat");
        assert_eq!(chat.fields["gen_ai.provider.name"], "openai");
        assert_eq!(chat.fields["gen_ai.request.model"], "m-1");
    }
    assert_eq!(chats[0].fields["gen_ai.usage.input_tokens"], "100");
    assert_eq!(chats[0].fields["gen_ai.usage.output_tokens"], "9");

    let tools = named("execute_tool");
    assert_eq!(tools.len(), 2);
    for tool in &tools {
        assert_eq!(tool.parent, Some(root.id), "{tool:?}");
        assert_eq!(tool.fields["gen_ai.operation.name"], "execute_tool");
    }
    assert_eq!(tools[0].fields["otel.name"], "execute_tool lookup");
    assert_eq!(tools[0].fields["gen_ai.tool.name"], "lookup");
    assert_eq!(tools[0].fields["gen_ai.tool.call.id"], "c1");
    assert!(
        !tools[0].fields.contains_key("error.type"),
        "{:?}",
        tools[0]
    );
    assert_eq!(tools[1].fields["gen_ai.tool.name"], "no_such_tool");
    assert_eq!(tools[1].fields["error.type"], "unknown_tool");

    // Neither the arguments nor the result is on any span.
    for span in &spans {
        for value in span.fields.values() {
            assert!(
                !value.contains("secret-project-x") && !value.contains("classified-result"),
                "{span:?}"
            );
        }
    }

    // Opted in: each call's arguments and result on its own span, and nowhere else.
    capture.0.lock().unwrap().clear();
    let run = registry.open_run("run-8", &Subject::new("acme").with_scopes(["read"]));
    let outcome = agent
        .record_content()
        .run(&run, "Look it up.")
        .await
        .unwrap();
    assert!(matches!(outcome, AgentEnd::Answered { .. }));
    let spans = capture.0.lock().unwrap().clone();
    let tools: Vec<&Span> = spans.iter().filter(|s| s.name == "execute_tool").collect();
    assert_eq!(tools.len(), 2);
    assert_eq!(
        tools[0].fields["gen_ai.tool.call.arguments"],
        r#"{"project": "secret-project-x"}"#
    );
    assert_eq!(
        tools[0].fields["gen_ai.tool.call.result"],
        r#""classified-result""#
    );
    assert_eq!(tools[1].fields["gen_ai.tool.call.arguments"], "{}");
    assert!(
        tools[1].fields["gen_ai.tool.call.result"].contains("no_such_tool"),
        "{:?}",
        tools[1]
    );
    for span in spans.iter().filter(|s| s.name != "execute_tool") {
        for value in span.fields.values() {
            assert!(!value.contains("secret-project-x"), "{span:?}");
        }
    }
}
