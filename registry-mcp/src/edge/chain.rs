//! The edge's steps as one chain. Each step is an `async fn` of its state, the request and
//! what comes after it ([`Inner`]): the next step, and last the MCP endpoint. The whole edge
//! is then one future per request, where axum's `from_fn` layers boxed a future and cloned
//! the inner stack for each step and each request (issue 22's profile of the server: the
//! nested futures were copied from box to box).

use std::future::Future;

use axum::extract::Request;
use axum::response::Response;

/// What comes after a step of the edge: called at most once, with the request as the step
/// leaves it.
pub(crate) trait Inner: Send {
    /// Serves `request` with the rest of the chain.
    fn run(self, request: Request) -> impl Future<Output = Response> + Send;
}

impl<F, Fut> Inner for F
where
    F: FnOnce(Request) -> Fut + Send,
    Fut: Future<Output = Response> + Send,
{
    fn run(self, request: Request) -> impl Future<Output = Response> + Send {
        self(request)
    }
}
