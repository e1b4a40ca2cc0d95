//! The boxed future every asynchronous interface of the crate returns.

use std::future::Future;
use std::pin::Pin;

/// A boxed future that can move between threads.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
