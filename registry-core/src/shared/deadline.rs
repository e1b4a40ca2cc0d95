//! A future raced against a deadline, without an async runtime (`futures-timer`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_timer::Delay;

/// `future`'s output, or `None` once `limit` has passed.
pub(crate) async fn with_deadline<F: Future + Unpin>(
    future: F,
    limit: Duration,
) -> Option<F::Output> {
    Deadline {
        future,
        delay: Delay::new(limit),
    }
    .await
}

struct Deadline<F> {
    future: F,
    delay: Delay,
}

impl<F: Future + Unpin> Future for Deadline<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(output) = Pin::new(&mut self.future).poll(cx) {
            return Poll::Ready(Some(output));
        }
        match Pin::new(&mut self.delay).poll(cx) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
