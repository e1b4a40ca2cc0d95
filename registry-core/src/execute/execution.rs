//! Running a resolved call: catching panics, enforcing deadlines, classifying failures.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_timer::Delay;

use crate::content::Payload;
use crate::declare::declaration::Outcome;
use crate::execute::observation::ErrorKind;
use crate::execute::pool::{self, BlockingPool, Refusal};
use crate::execute::tool::{Invocation, Tool};
use crate::host::context::ToolContext;
use crate::resolve::checked::CheckedArguments;
use crate::shared::cancel::{Cancellation, Cancelled};
use crate::shared::future::BoxFuture;
use crate::shared::tool_error::ToolError;

/// A call that produced no result: the kind, the text for the model, and what only the audit
/// log gets.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) kind: ErrorKind,
    pub(crate) error: Option<ToolError>,
    pub(crate) detail: Option<String>,
    pub(crate) timeout: Option<Duration>,
}

/// A call [`start`]ed: ended already, or waiting for the pool or an async tool; awaited, its
/// result. Only what the wait needs is kept, so that the future of a call that awaits it
/// stays small to move (an `async fn` in its place kept the arguments, the tool's context and
/// their copies in every state: 504 bytes of `Run::call`'s 1,392, 2026-12-04).
pub(crate) enum Started<'a> {
    /// It ended here: a synchronous tool run on the caller's thread, a call cancelled before
    /// it ran, or an async tool that was done at once (`None` once taken).
    Done(Option<Result<Payload, Failure>>),
    /// A synchronous tool handed to the pool (boxed: the hop costs microseconds anyway).
    Pool(Pin<Box<dyn Future<Output = Result<Payload, Failure>> + Send + 'a>>),
    /// An async tool's future, within the call's deadline and cancellation.
    Tool {
        until: Until<CatchUnwind>,
        timeout: Option<Duration>,
        cancellation: Cancellation,
    },
}

impl Future for Started<'_> {
    type Output = Result<Payload, Failure>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Started::Done(result) => Poll::Ready(
                result
                    .take()
                    .unwrap_or_else(|| Err(panicked("the call was awaited again".into()))),
            ),
            Started::Pool(future) => future.as_mut().poll(cx),
            Started::Tool {
                until,
                timeout,
                cancellation,
            } => {
                let Poll::Ready(ending) = Pin::new(until).poll(cx) else {
                    return Poll::Pending;
                };
                Poll::Ready(match ending {
                    Ending::Done(Ok(outcome)) => classify(outcome),
                    Ending::Done(Err(message)) => Err(panicked(message)),
                    Ending::TimedOut => {
                        cancellation.cancel();
                        Err(timed_out(timeout.unwrap_or_default()))
                    }
                    Ending::Cancelled => Err(cancelled()),
                })
            }
        }
    }
}

/// Starts `tool` in an async context; the returned future ends the call. A synchronous tool
/// runs on the caller's thread (an async worker) only when declared `non_blocking`, or once it
/// has proved quick, while its version is not sent to the pool for a slow run there
/// (`execute/inline.rs`): then it runs now, to its end. Any other runs on
/// `pool`: a call that finds every thread busy waits for one, boundedly, else is refused
/// `Unavailable`. A call whose cancellation is tripped ends `Cancelled`: an async tool's
/// future is dropped, a synchronous tool's result discarded (it sees
/// [`ToolContext::is_cancelled`] and may stop). Past its deadline, a call's cancellation is
/// tripped too, so that a tool left running on its thread can stop; until it returns, its
/// thread stays busy and counts against the pool. A synchronous tool on the caller's thread
/// cannot be interrupted: its deadline is checked when it returns.
pub(crate) fn start<'a>(
    tool: &'a Tool,
    ctx: ToolContext,
    arguments: CheckedArguments,
    timeout: Option<Duration>,
    pool: &'a BlockingPool,
) -> Started<'a> {
    let cancellation = ctx.cancellation().clone();
    if cancellation.is_cancelled() {
        return Started::Done(Some(Err(cancelled())));
    }
    if !tool.is_async() {
        if tool.settings().non_blocking {
            return Started::Done(Some(run_inline_within(
                tool,
                ctx,
                arguments,
                timeout,
                &cancellation,
            )));
        }
        // A quick tool runs here unless its version was sent to the pool (execute/inline.rs).
        let gate = pool.inline_gate();
        let eligible = !tool.settings().blocking && !tool.uses_context();
        if let Some(slot) = eligible.then(|| gate.admit(tool.inline_record())).flatten() {
            let started = quanta::Instant::now();
            let result = run_inline_within(tool, ctx, arguments, timeout, &cancellation);
            let took = started.elapsed();
            slot.end(took);
            tool.note_run(took);
            return Started::Done(Some(result));
        }
        return Started::Pool(Box::pin(on_pool(
            tool,
            ctx,
            arguments,
            timeout,
            pool,
            cancellation,
        )));
    }
    let future = match catch_unwind(AssertUnwindSafe(|| tool.invoke(ctx, arguments))) {
        Ok(Invocation::Pending(future)) => CatchUnwind(future),
        Ok(Invocation::Done(outcome)) => return Started::Done(Some(classify(outcome))),
        Err(payload) => return Started::Done(Some(Err(panicked(panic_message(&*payload))))),
    };
    Started::Tool {
        until: Until::new(future, timeout, &cancellation),
        timeout,
        cancellation,
    }
}

/// Runs `tool` for a caller that may block: a synchronous tool without a deadline, or a
/// `non_blocking` one, on this thread; one with a deadline on `pool` (this thread waits);
/// async tools and deadlines are driven by a small local executor.
pub(crate) fn execute_blocking(
    tool: &Tool,
    ctx: ToolContext,
    arguments: CheckedArguments,
    timeout: Option<Duration>,
    pool: &BlockingPool,
) -> Result<Payload, Failure> {
    if !tool.is_async() && (timeout.is_none() || tool.settings().non_blocking) {
        let cancellation = ctx.cancellation().clone();
        if cancellation.is_cancelled() {
            return Err(cancelled());
        }
        return run_inline_within(tool, ctx, arguments, timeout, &cancellation);
    }
    pollster::block_on(start(tool, ctx, arguments, timeout, pool))
}

/// A tool whose last run on the pool took at most this long is waited for without yielding
/// (twice that and [`HAND_OVER`], at most [`pool::CALLER_SPIN`]) before its caller's task
/// sleeps.
const QUICK: Duration = Duration::from_micros(20);

/// What handing a job to an awake thread and its answer back takes, about.
const HAND_OVER: Duration = Duration::from_micros(5);

/// Runs a synchronous tool on a thread of `pool`, under `timeout` (time spent waiting for a
/// thread included). The job carries the caller's `tracing` dispatcher and span.
async fn on_pool(
    tool: &Tool,
    ctx: ToolContext,
    arguments: CheckedArguments,
    timeout: Option<Duration>,
    pool: &BlockingPool,
    cancellation: Cancellation,
) -> Result<Payload, Failure> {
    let cancellation = &cancellation;
    let (sender, mut receiver) = futures_channel::oneshot::channel();
    let recent = tool.recent_run();
    let quick = recent.is_some_and(|took| took <= QUICK);
    let tool = tool.clone();
    let noted = pool.clone();
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    let span = tracing::Span::current();
    // The result is handed over once the thread is idle again (the pool's delivery), so
    // that a caller answered at once and calling again finds the thread waiting.
    let job = move || -> pool::Delivery {
        let result = tracing::dispatcher::with_default(&dispatch, || {
            let _entered = span.enter();
            let started = std::time::Instant::now();
            let result = run_sync(&tool, ctx, arguments);
            let took = started.elapsed();
            tool.note_run(took);
            noted
                .inline_gate()
                .ran_on_pool(tool.inline_record(), took, || tool.version_fingerprint());
            result
        });
        Box::new(move || {
            let _ = sender.send(result);
        })
    };
    let started = match until(Box::pin(pool.spawn(job, timeout)), None, cancellation).await {
        Ending::Done(Ok(started)) => started,
        Ending::Done(Err(refusal)) => return Err(busy(&refusal)),
        Ending::Cancelled | Ending::TimedOut => return Err(cancelled()),
    };
    let remaining = timeout.map(|limit| limit.saturating_sub(started.waited));
    // A tool whose last run took microseconds, handed to a thread that was awake, is waited
    // for a moment without yielding: its answer usually comes before this thread could have
    // slept and been woken. Not when its deadline is that near, which the wait below
    // enforces.
    if quick && started.awake && remaining.is_none_or(|remaining| remaining > pool::CALLER_SPIN) {
        // Twice the last run, and the hand-over, at most `CALLER_SPIN`.
        let most = (recent.unwrap_or_default() * 2 + HAND_OVER).min(pool::CALLER_SPIN);
        let answer = pool::spin_up_to(most, || receiver.try_recv().ok().flatten());
        if let Some(result) = answer {
            return if cancellation.is_cancelled() {
                Err(cancelled())
            } else {
                result
            };
        }
    }
    match until(receiver, remaining, cancellation).await {
        Ending::Done(Ok(result)) => result,
        Ending::Done(Err(_)) => Err(panicked("the tool's thread ended without a result".into())),
        Ending::TimedOut => {
            cancellation.cancel();
            Err(timed_out(timeout.unwrap_or_default()))
        }
        Ending::Cancelled => Err(cancelled()),
    }
}

/// Runs a synchronous tool on this thread; its result is discarded if the call was cancelled
/// meanwhile, or if it returned past `timeout` (which nothing here can enforce sooner).
fn run_inline_within(
    tool: &Tool,
    ctx: ToolContext,
    arguments: CheckedArguments,
    timeout: Option<Duration>,
    cancellation: &Cancellation,
) -> Result<Payload, Failure> {
    let Some(limit) = timeout else {
        return run_inline(tool, ctx, arguments, cancellation);
    };
    let started = std::time::Instant::now();
    let result = run_inline(tool, ctx, arguments, cancellation);
    if started.elapsed() > limit {
        return Err(timed_out(limit));
    }
    result
}

/// Runs a synchronous tool on this thread; its result is discarded if the call was cancelled
/// meanwhile.
fn run_inline(
    tool: &Tool,
    ctx: ToolContext,
    arguments: CheckedArguments,
    cancellation: &Cancellation,
) -> Result<Payload, Failure> {
    let result = run_sync(tool, ctx, arguments);
    if cancellation.is_cancelled() {
        return Err(cancelled());
    }
    result
}

fn run_sync(
    tool: &Tool,
    ctx: ToolContext,
    arguments: CheckedArguments,
) -> Result<Payload, Failure> {
    match catch_unwind(AssertUnwindSafe(|| tool.invoke(ctx, arguments))) {
        Ok(Invocation::Done(outcome)) => classify(outcome),
        Ok(Invocation::Pending(future)) => match pollster::block_on(CatchUnwind(future)) {
            Ok(outcome) => classify(outcome),
            Err(message) => Err(panicked(message)),
        },
        Err(payload) => Err(panicked(panic_message(&*payload))),
    }
}

fn classify(outcome: Outcome) -> Result<Payload, Failure> {
    outcome.map_err(|error| {
        let kind = match error {
            ToolError::InvalidArguments(_) => ErrorKind::InvalidArguments,
            ToolError::Unavailable(_) => ErrorKind::Unavailable,
            _ => ErrorKind::ExecutionFailed,
        };
        Failure {
            kind,
            detail: Some(error.to_string()),
            error: Some(error),
            timeout: None,
        }
    })
}

fn panicked(message: String) -> Failure {
    Failure {
        kind: ErrorKind::Panicked,
        error: None,
        detail: Some(format!("panic: {message}")),
        timeout: None,
    }
}

fn timed_out(limit: Duration) -> Failure {
    Failure {
        kind: ErrorKind::TimedOut,
        error: None,
        detail: None,
        timeout: Some(limit),
    }
}

fn cancelled() -> Failure {
    Failure {
        kind: ErrorKind::Cancelled,
        error: None,
        detail: None,
        timeout: None,
    }
}

/// A synchronous tool that could not get a thread: nothing ran.
fn busy(refusal: &Refusal) -> Failure {
    Failure {
        kind: ErrorKind::Unavailable,
        error: None,
        detail: Some(refusal.to_string()),
        timeout: None,
    }
}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// A future whose panics become `Err(message)`.
pub(crate) struct CatchUnwind<T = Outcome>(pub(crate) BoxFuture<'static, T>);

impl<T> Future for CatchUnwind<T> {
    type Output = Result<T, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(Poll::Ready(outcome)) => Poll::Ready(Ok(outcome)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(&*payload))),
        }
    }
}

/// How a race between a call, its deadline and its cancellation ended.
pub(crate) enum Ending<T> {
    Done(T),
    TimedOut,
    Cancelled,
}

/// `future`'s output, unless `limit` passes or `cancellation` is tripped first.
async fn until<F: Future + Unpin>(
    future: F,
    limit: Option<Duration>,
    cancellation: &Cancellation,
) -> Ending<F::Output> {
    Until::new(future, limit, cancellation).await
}

pub(crate) struct Until<F> {
    future: F,
    delay: Option<Delay>,
    cancelled: Cancelled,
}

impl<F> Until<F> {
    fn new(future: F, limit: Option<Duration>, cancellation: &Cancellation) -> Self {
        Until {
            future,
            delay: limit.map(Delay::new),
            cancelled: cancellation.cancelled(),
        }
    }
}

impl<F: Future + Unpin> Future for Until<F> {
    type Output = Ending<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(()) = Pin::new(&mut self.cancelled).poll(cx) {
            return Poll::Ready(Ending::Cancelled);
        }
        if let Poll::Ready(output) = Pin::new(&mut self.future).poll(cx) {
            return Poll::Ready(Ending::Done(output));
        }
        match self.delay.as_mut().map(|delay| Pin::new(delay).poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Ending::TimedOut),
            _ => Poll::Pending,
        }
    }
}
