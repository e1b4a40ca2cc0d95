//! A served tool that stops being ready leaves the clients' lists, announced like a
//! revocation, and comes back when it is ready again: the server runs the registry's readiness
//! checks on its own schedule.

use crate::mcp_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_support::*;
use registry_core::{DynamicTool, Registry, Subject};
use registry_mcp::{McpServer, ServerOptions};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::json;
use tokio::sync::mpsc;

#[derive(Clone)]
struct Notified(mpsc::UnboundedSender<()>);

impl ClientHandler for Notified {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

#[tokio::test]
async fn a_tool_that_stops_being_ready_leaves_the_list_and_comes_back() {
    let up = Arc::new(AtomicBool::new(true));
    let registry = Registry::builder()
        .tool(
            DynamicTool::new("notify", "Post to the chat.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("posted"))),
        )
        .tool(
            DynamicTool::new("status", "Read the status.")
                .public()
                .handler(|_, _| Ok::<_, String>(json!("green"))),
        )
        .readiness("notify", {
            let up = up.clone();
            move || {
                if up.load(Ordering::SeqCst) {
                    Ok(())
                } else {
                    Err("the chat is down")
                }
            }
        })
        .build()
        .unwrap();
    let options = ServerOptions::default()
        .with_poll_interval(Duration::from_millis(20))
        .with_readiness_interval(Some(Duration::from_millis(50)));
    let server = McpServer::new(registry.clone(), options).unwrap();
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    tokio::spawn(async move {
        server
            .serve_io("test", Subject::new("acme"), server_read, server_write)
            .await
    });
    let (sender, mut changes) = mpsc::unbounded_channel();
    let client = within(
        "initialize",
        Notified(sender).serve(tokio::io::split(client_io)),
    )
    .await
    .unwrap();
    assert_eq!(names(&list_all(&client).await.0), ["notify", "status"]);

    up.store(false, Ordering::SeqCst);
    within("list_changed", changes.recv())
        .await
        .expect("announced");
    assert_eq!(names(&list_all(&client).await.0), ["status"]);
    let refused = call(&client, "notify", json!({})).await;
    assert!(
        refused.is_err(),
        "a hidden tool is unknown to the client: {refused:?}"
    );

    up.store(true, Ordering::SeqCst);
    within("list_changed", changes.recv())
        .await
        .expect("announced");
    assert_eq!(names(&list_all(&client).await.0), ["notify", "status"]);
    let posted = call(&client, "notify", json!({})).await.unwrap();
    assert_eq!(posted.is_error, Some(false));
}
