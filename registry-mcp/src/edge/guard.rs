//! A response body that holds a guard until it is finished or dropped: to count what is in
//! flight (requests on a connection, streams of a principal) for as long as it really is.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};

/// `inner`, holding `guard` until the body is dropped.
pub(crate) struct Guarded<G> {
    inner: Body,
    _guard: G,
}

impl<G: Send + Unpin + 'static> Guarded<G> {
    /// `body`, holding `guard` while it lives.
    pub(crate) fn wrap(body: Body, guard: G) -> Body {
        Body::new(Guarded {
            inner: body,
            _guard: guard,
        })
    }
}

impl<G: Unpin> http_body::Body for Guarded<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
