//! The stdio transport: one client, the process that started this one.

use registry_core::{Registry, Subject};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ServerHandler, ServiceExt};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::{McpServer, RegistryServer, ServeError, ServerOptions};

/// Serves `registry` over stdin and stdout to the one client that started this process,
/// acting for `subject`, until the client closes stdin.
///
/// Only protocol messages are written to stdout: log to stderr (e.g. with
/// `tracing-subscriber` writing to `std::io::stderr`). A line that is not JSON is dropped
/// (and logged at debug level), as every official MCP SDK does: it has no id to answer, and
/// answering it could start an error storm with a peer that echoes errors back. JSON that is
/// not a JSON-RPC message gets -32600, an unknown method -32601, and a line longer than
/// [`ServerOptions::max_message_bytes`] is dropped with an error in the log; the server keeps
/// serving after each.
///
/// ```no_run
/// use registry_core::{Registry, Subject, access::Access};
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let registry = Registry::from_inventory()?;
///     let subject = Subject::new("acme").with_scopes(["build:read"]).with_access(Access::ReadOnly);
///     registry_mcp::serve_stdio(registry, subject).await?;
///     Ok(())
/// }
/// ```
pub async fn serve_stdio(registry: Registry, subject: Subject) -> Result<(), ServeError> {
    McpServer::new(registry, ServerOptions::default())?
        .serve_stdio(subject)
        .await
}

impl McpServer {
    /// Serves this server over stdin and stdout, acting for `subject`; see [`serve_stdio`].
    pub async fn serve_stdio(&self, subject: Subject) -> Result<(), ServeError> {
        let (read, write) = rmcp::transport::stdio_pipes();
        self.serve_io("stdio", subject, read, write).await
    }

    /// Serves one client over a byte stream pair of newline-delimited JSON-RPC messages
    /// (stdio's framing), acting for `subject`; `id` names the client in logs and run ids.
    /// Returns when the client closes its end.
    pub async fn serve_io<R, W>(
        &self,
        id: &str,
        subject: Subject,
        read: R,
        write: W,
    ) -> Result<(), ServeError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        self.serve_io_with(id, subject, read, write, |tools| tools)
            .await
    }

    /// [`serve_io`](Self::serve_io), serving the handler `wrap` makes of the registry's: say,
    /// [`RegistryServer::with_handler`](crate::RegistryServer::with_handler), to serve an
    /// application's resources and prompts beside the tools (see [`Composed`](crate::Composed)).
    ///
    /// ```no_run
    /// # use registry_core::{Registry, Subject};
    /// # use registry_mcp::{McpServer, ServerOptions};
    /// # async fn serve(server: McpServer, app: impl registry_mcp::rmcp::ServerHandler) -> Result<(), registry_mcp::ServeError> {
    /// let (read, write) = registry_mcp::rmcp::transport::stdio_pipes();
    /// server
    ///     .serve_io_with("stdio", Subject::new("acme"), read, write, |tools| tools.with_handler(app))
    ///     .await
    /// # }
    /// ```
    pub async fn serve_io_with<R, W, S>(
        &self,
        id: &str,
        subject: Subject,
        read: R,
        write: W,
        wrap: impl FnOnce(RegistryServer) -> S,
    ) -> Result<(), ServeError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
        S: ServerHandler,
    {
        let transport = AsyncRwTransport::new_server(read, write)
            .with_max_line_length(self.options().max_message_bytes);
        let handler = wrap(self.handler(id, subject));
        let running = handler
            .serve(transport)
            .await
            .map_err(|error| ServeError::Initialize(error.to_string()))?;
        let reason = running
            .waiting()
            .await
            .map_err(|error| ServeError::Initialize(error.to_string()))?;
        tracing::info!(client = ?id, ?reason, "the client disconnected");
        Ok(())
    }
}
