//! What ran is on the shared record: the version fingerprints of call, approval and
//! projection events, and refused changes, reach `audit_events` as JSON operators can query.

use std::sync::Arc;
use std::time::Duration;

use crate::common::{bounded, cluster, plane, sql, subject};
use registry_core::{
    DynamicTool, Registry, ToolCall,
    audit::{AuditEvent, AuditSink},
    change::ReplaceOptions,
};
use registry_postgres::AuditConfig;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(90);

/// `lookup` under `records:read`.
fn lookup() -> DynamicTool {
    DynamicTool::new("lookup", "Look a record up by its id.")
        .parameters(json!({
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "required": ["id"],
            "additionalProperties": false
        }))
        .scopes(["records:read"])
        .handler(|_, _| Ok::<_, String>(json!("found")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_and_refused_changes_reach_audit_events() {
    let (_cluster, url) = cluster("record");
    bounded(LIMIT, async {
        let plane = plane(&url, "a").await;
        let (sink, writer) = plane.audit_sink(AuditConfig::default());
        let sink = Arc::new(sink);
        let shared = |sink: &Arc<registry_postgres::PgAuditSink>| {
            let sink = sink.clone();
            move |event: &AuditEvent| sink.record(event)
        };
        // A build that fails reaches the sink it was given.
        let failed = Registry::builder()
            .tool(lookup())
            .tool(lookup())
            .audit_sink(shared(&sink))
            .build();
        assert!(failed.is_err());
        let registry = Registry::builder()
            .tool(lookup())
            .audit_sink(shared(&sink))
            .build()
            .unwrap();
        let version = registry.get("lookup").unwrap().version_fingerprint();
        let run = registry.open_run("run-1", &subject().with_scopes(["records:read"]));
        let done = run
            .call(ToolCall::new("c1", "lookup", json!({"id": "r-1"})))
            .await;
        assert!(!done.is_error(), "{done:?}");
        registry
            .replace(
                DynamicTool::new("lookup", "No handler.").scopes(["records:read"]),
                ReplaceOptions::keep_old_runs("broken"),
            )
            .unwrap_err();
        assert!(writer.flush(Duration::from_secs(10)).await);

        let client = sql(&url).await;
        let call: String = client
            .query_one(
                "SELECT event->>'tool_version' FROM audit_events WHERE kind = 'call'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(call, version.to_string());
        let projected: String = client
            .query_one(
                "SELECT event->'tools'->0->>'version' FROM audit_events WHERE kind = 'projection'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(projected, version.to_string());
        let refused: Vec<(String, Option<String>)> = client
            .query(
                "SELECT event->>'attempt', event->>'tool' FROM audit_events
                  WHERE event->>'event' = 'change_refused' ORDER BY id",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        assert_eq!(
            refused,
            [
                ("build".to_owned(), None),
                ("replace".to_owned(), Some("lookup".to_owned()))
            ]
        );
        writer.shutdown(Duration::from_secs(10)).await.unwrap();
    })
    .await;
}
