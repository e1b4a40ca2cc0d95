//! One MCP server for the registry's tools and an application's own resources, prompts and
//! completions: [`Composed`].

// Resource subscriptions and logging are deprecated in rmcp (for `subscriptions/listen` and by
// SEP-2577); a composed server still passes them on to the application's handler.
#![allow(deprecated)]

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CancelledNotificationParam,
    CompleteRequestParams, CompleteResult, CustomNotification, CustomRequest, CustomResult,
    ErrorCode, GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams, GetSkillResult,
    GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestParams,
    ReadResourceResponse, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::handler::{RegistryServer, announce_tool_changes};
use crate::result_type::completed;

/// The registry's tools and an application's own MCP handler, served as one server.
///
/// The registry answers `tools/list`, `tools/call` and `logging/setLevel` (which the
/// application's handler is told of too), exactly as a [`RegistryServer`] alone: one run per
/// client, bearer tokens over HTTP, `notifications/tools/list_changed`, approvals, progress,
/// logs, questions and cancellation. The application's handler answers everything else:
/// resources, resource templates and subscriptions, prompts, completions, custom requests,
/// `tasks/update` and skills, and the notifications a client sends (cancellations, progress,
/// roots). `tasks/get` and `tasks/cancel` go to the registry's tasks first, and to the
/// application's for an id the registry does not know, if the application declares the tasks
/// extension.
/// `initialize` goes to both (the registry binds an HTTP session to its token first; an error
/// from either refuses it); its answer, like `server/discover`'s, is [`get_info`]: the
/// application's, with the registry's capabilities (`tools` with `listChanged`, `logging`) in
/// place of any `tools` or `logging` of its own, the tasks extension added to its extensions, the server name and version of the
/// [`ServerOptions`](crate::ServerOptions), and their instructions if they have some (else the
/// application's). The protocol versions are the application's.
/// The application's results get `resultType: "complete"` if they carry none (protocol
/// 2026-07-28 requires it on every result; rmcp removes it again for older protocol versions).
/// `subscriptions/listen` runs both: the application's own `listen` with the subscription, and
/// the registry's tool list changes on the same stream, until the application's returns.
///
/// Made with [`RegistryServer::with_handler`]; served with [`McpServer::serve_io_with`],
/// [`McpServer::http_router_with`], or any rmcp transport.
///
/// [`get_info`]: ServerHandler::get_info
/// [`McpServer::serve_io_with`]: crate::McpServer::serve_io_with
/// [`McpServer::http_router_with`]: crate::McpServer::http_router_with
///
/// ```
/// use registry_core::{Registry, Subject, access::Access};
/// use registry_mcp::{McpServer, ServerOptions};
/// use registry_mcp::rmcp::model::{
///     ListResourcesResult, PaginatedRequestParams, Resource, ServerCapabilities, ServerConfig,
/// };
/// use registry_mcp::rmcp::service::RequestContext;
/// use registry_mcp::rmcp::{ErrorData, RoleServer, ServerHandler};
///
/// /// The application's own part: one resource.
/// #[derive(Clone)]
/// struct Docs;
///
/// impl ServerHandler for Docs {
///     fn get_info(&self) -> ServerConfig {
///         ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
///     }
///
///     async fn list_resources(
///         &self,
///         _request: Option<PaginatedRequestParams>,
///         _context: RequestContext<RoleServer>,
///     ) -> Result<ListResourcesResult, ErrorData> {
///         let guide = Resource::new("docs://guide", "guide");
///         Ok(ListResourcesResult::with_all_items(vec![guide]))
///     }
/// }
///
/// # async fn serve(registry: Registry) -> Result<(), Box<dyn std::error::Error>> {
/// let server = McpServer::new(registry, ServerOptions::default())?;
/// // stdio: the registry's tools and the application's resources, one server.
/// let (read, write) = registry_mcp::rmcp::transport::stdio_pipes();
/// let subject = Subject::new("acme").with_access(Access::ReadOnly);
/// server
///     .serve_io_with("stdio", subject, read, write, |tools| tools.with_handler(Docs))
///     .await?;
/// # Ok(())
/// # }
/// let registry = Registry::builder().allow_empty().build().unwrap();
/// let info = McpServer::new(registry, ServerOptions::default())
///     .unwrap()
///     .handler("local", Subject::new("acme"))
///     .with_handler(Docs)
///     .get_info();
/// assert!(info.capabilities.tools.is_some() && info.capabilities.resources.is_some());
/// ```
#[derive(Clone)]
pub struct Composed<H> {
    registry: RegistryServer,
    app: H,
}

impl<H> std::fmt::Debug for Composed<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Composed")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl RegistryServer {
    /// Serves the registry's tools and `app`'s resources, prompts and completions as one
    /// server: see [`Composed`].
    pub fn with_handler<H: ServerHandler>(self, app: H) -> Composed<H> {
        Composed {
            registry: self,
            app,
        }
    }
}

impl<H> Composed<H> {
    /// The registry's part.
    pub fn registry(&self) -> &RegistryServer {
        &self.registry
    }

    /// The application's part.
    pub fn app(&self) -> &H {
        &self.app
    }
}

impl<H: ServerHandler> Composed<H> {
    /// Whether the app serves tasks of its own (it declares the tasks extension).
    fn app_has_tasks(&self) -> bool {
        self.app.get_info().capabilities.supports_tasks()
    }
}

impl<H: ServerHandler> ServerHandler for Composed<H> {
    fn get_info(&self) -> ServerConfig {
        let mut info = self.app.get_info();
        let registry = self.registry.get_info();
        info.capabilities.tools = registry.capabilities.tools;
        info.capabilities.logging = registry.capabilities.logging;
        // The tasks extension is the registry's (its `task` tools), whatever the app declares.
        if let Some(registry_extensions) = registry.capabilities.extensions {
            let extensions = info
                .capabilities
                .extensions
                .get_or_insert_with(Default::default);
            for (name, settings) in registry_extensions {
                extensions.entry(name).or_insert(settings);
            }
        }
        info.server_info = registry.server_info;
        if registry.instructions.is_some() {
            info.instructions = registry.instructions;
        }
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.app.supported_protocol_versions()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // Binds an HTTP session to the token that opened it, before the application sees it.
        self.registry.client(&context.extensions)?;
        self.app
            .initialize(request.clone(), context.clone())
            .await?;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.registry.on_initialized(context.clone()).await;
        self.app.on_initialized(context).await;
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.registry.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.registry.call_tool(request, context).await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.registry.get_tool(name)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.registry
            .set_level(request.clone(), context.clone())
            .await?;
        match self.app.set_level(request, context).await {
            Err(error) if error.code != ErrorCode::METHOD_NOT_FOUND => Err(error),
            _ => Ok(()),
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = self
            .app
            .accepted_subscription_filter(requested)
            .unwrap_or_default();
        accepted.tools_list_changed = self
            .registry
            .accepted_subscription_filter(requested)
            .and_then(|tools| tools.tools_list_changed);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let client = self
            .registry
            .client(&context.request_context().extensions)?;
        let sink = context.sink().clone();
        let tools = context.accepted().tools_list_changed == Some(true);
        let registry = async {
            if tools {
                announce_tool_changes(&client, &sink).await;
            }
            std::future::pending::<()>().await;
        };
        tokio::select! {
            result = self.app.listen(context) => result,
            () = registry => Ok(()),
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        completed(self.app.complete(request, context).await)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        completed(self.app.get_prompt(request, context).await)
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        completed(self.app.list_prompts(request, context).await)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        completed(self.app.list_resources(request, context).await)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        completed(self.app.list_resource_templates(request, context).await)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        completed(self.app.read_resource(request, context).await)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.app.subscribe(request, context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.app.unsubscribe(request, context).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        self.app.on_custom_request(request, context).await
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.app.on_cancelled(notification, context).await;
    }

    async fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.app.on_progress(notification, context).await;
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.app.on_roots_list_changed(context).await;
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) {
        self.app.on_custom_notification(notification, context).await;
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        // The registry's tasks first; an id it does not know may be the app's own task.
        match self
            .registry
            .get_task(request.clone(), context.clone())
            .await
        {
            Err(error) if error.code == ErrorCode::INVALID_PARAMS && self.app_has_tasks() => {
                self.app.get_task(request, context).await
            }
            answered => answered,
        }
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // The registry's tasks first; an id it does not know may be the app's own task.
        match self
            .registry
            .update_task(request.clone(), context.clone())
            .await
        {
            Err(error) if error.code == ErrorCode::INVALID_PARAMS && self.app_has_tasks() => {
                self.app.update_task(request, context).await
            }
            answered => answered,
        }
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match self
            .registry
            .cancel_task(request.clone(), context.clone())
            .await
        {
            Err(error) if error.code == ErrorCode::INVALID_PARAMS && self.app_has_tasks() => {
                self.app.cancel_task(request, context).await
            }
            answered => answered,
        }
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        self.app.list_skills(request, context).await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.app.get_skill(request, context).await
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        self.app.read_resource_directory(request, context).await
    }
}
