//! A call policy that answers asynchronously: a remote policy engine, asked within a deadline.
//!
//! Tests: `tests/tests/integration/gate_async_policies.rs`.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::gate::{CallRequest, Determined};
use crate::shared::future::BoxFuture;

/// Decides, per call, whether a validated call may run, asynchronously: the policy of a remote
/// engine (OPA, a Cedar service, an internal authorization API) asked over the network.
///
/// Add one with
/// [`RegistryBuilder::async_call_policy`](crate::RegistryBuilder::async_call_policy), with a
/// deadline. The asynchronous policies are asked after the synchronous ones
/// ([`CallPolicy`](crate::gate::CallPolicy)), in the order given, and only if none of those
/// denied; their decisions compose with the others' (the stricter wins: deny over approval
/// over allow). **A policy that does not answer within its deadline denies** (fail closed),
/// and so does one that panics; the call's audit event says so in its `detail`.
///
/// [`Run::call`](crate::Run::call) awaits the answer. [`Run::call_blocking`](crate::Run::call_blocking)
/// waits for it on the calling thread, with the same deadline: a policy whose future needs an
/// async runtime the calling thread does not have (a tokio client, say) panics or never
/// answers there, and the call is denied. From a runtime, call `Run::call`.
///
/// ```
/// use registry_core::definition::BoxFuture;
/// use registry_core::gate::{AsyncCallPolicy, CallRequest, Decision, Determined};
/// use registry_core::{DynamicTool, ErrorKind, Registry, Subject, ToolCall};
/// use serde_json::json;
/// use std::time::Duration;
///
/// /// A remote engine, here a stand-in: production deploys need a person.
/// struct RemoteEngine;
///
/// impl AsyncCallPolicy for RemoteEngine {
///     fn determine<'a>(&'a self, call: CallRequest<'a>) -> BoxFuture<'a, Determined> {
///         Box::pin(async move {
///             // A real engine is asked over the network here (with the tenant, the tool, the
///             // arguments...).
///             let decision = match call.arguments()["env"].as_str() {
///                 Some("production") => Decision::Deny("production is frozen today".into()),
///                 _ => Decision::Allow,
///             };
///             Determined::new(decision, vec!["freeze-2026-12".into()])
///         })
///     }
/// }
///
/// let registry = Registry::builder()
///     .tool(DynamicTool::new("deploy", "Deploy a service.")
///         .public()
///         .parameters(json!({"type": "object", "properties": {"env": {"type": "string"}}}))
///         .handler(|_, _| Ok::<_, String>(json!("deployed"))))
///     .async_call_policy(RemoteEngine, Duration::from_millis(200))
///     .build()?;
/// let run = registry.open_run("r1", &Subject::new("acme"));
/// let staging = pollster::block_on(run.call(ToolCall::new("c1", "deploy", json!({"env": "staging"}))));
/// assert_eq!(staging.json(), &json!("deployed"));
/// let production = run.call_blocking(ToolCall::new("c2", "deploy", json!({"env": "production"})));
/// assert_eq!(production.error_kind(), Some(ErrorKind::Denied));
/// # Ok::<(), registry_core::RegistryError>(())
/// ```
pub trait AsyncCallPolicy: Send + Sync + 'static {
    /// Decides one call, and names the policies that decided it (for the audit log; none is
    /// fine).
    fn determine<'a>(&'a self, call: CallRequest<'a>) -> BoxFuture<'a, Determined>;
}

/// `future`, a panic while polling it caught as `Err` with its message.
pub(crate) struct CatchUnwind<F>(pub(crate) F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(crate::execute::execution::panic_message(&*payload))),
        }
    }
}
