//! The baseline: a bare rmcp streamable-HTTP server, written the way an rmcp user writes one
//! (`#[tool_router]`, `#[tool]`, `#[tool_handler]`), serving the same `add` tool as the
//! registry with the same arguments and the same result text (`"3"` for `{"a": 1, "b": 2}`).
//!
//! rmcp's `StreamableHttpService` with `LocalSessionManager` and its default configuration
//! (session mode), nested at `/mcp` in an axum router, served with `TCP_NODELAY` on accepted
//! connections as `registry_mcp::HttpServer` does. Nothing in front of it: no authentication,
//! no protocol-error layer. The tool router and the axum router are built once; each session
//! gets a clone of the server, which shares the tool router.

use std::io::Write;
use std::sync::Arc;

use axum::serve::ListenerExt;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};

/// The arguments of `add`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct AddRequest {
    a: i64,
    b: i64,
}

/// The server of one session: a handle on the tool router built once.
#[derive(Clone)]
pub(crate) struct Bare {
    tool_router: Arc<ToolRouter<Bare>>,
}

#[tool_router]
impl Bare {
    #[tool(description = "Add two numbers.", annotations(read_only_hint = true))]
    fn add(&self, Parameters(AddRequest { a, b }): Parameters<AddRequest>) -> String {
        (a + b).to_string()
    }

    /// The same, under the name the registry's pool variant has (`--tool add_on_pool`):
    /// rmcp runs both on the connection's task.
    #[tool(description = "Add two numbers.", annotations(read_only_hint = true))]
    fn add_on_pool(&self, Parameters(AddRequest { a, b }): Parameters<AddRequest>) -> String {
        (a + b).to_string()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bare {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// `bench-mcp serve-bare`: serves on 127.0.0.1 and a free port, prints the endpoint's URL
/// on stdout, then logs nothing.
pub fn serve() {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let server = Bare {
            tool_router: Arc::new(Bare::tool_router()),
        };
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("http://{}/mcp", listener.local_addr().unwrap());
        std::io::stdout().flush().unwrap();
        let listener = listener.tap_io(|tcp| tcp.set_nodelay(true).unwrap());
        axum::serve(listener, router).await.unwrap();
    });
}
