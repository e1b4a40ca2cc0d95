//! The log of refused requests, bounded: each at debug, and at most one warning per
//! [`SUMMARY_INTERVAL`](super::SUMMARY_INTERVAL) saying how many there were.

use std::sync::{Mutex, PoisonError};

use tokio::time::Instant;

/// Counts refusals of one kind between warnings.
#[derive(Debug)]
pub(crate) struct Refusals {
    /// What was refused, for the warning: "requests without a valid bearer token".
    what: &'static str,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    count: u64,
    last_warning: Option<Instant>,
}

impl Refusals {
    pub(crate) fn new(what: &'static str) -> Refusals {
        Refusals {
            what,
            state: Mutex::default(),
        }
    }

    /// Counts one refusal; warns with the count if the last warning is old enough.
    pub(crate) fn refused(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.count += 1;
        let now = Instant::now();
        let since = state
            .last_warning
            .map(|at| now.saturating_duration_since(at));
        if since.is_none_or(|since| since >= super::SUMMARY_INTERVAL) {
            let interval = super::SUMMARY_INTERVAL.as_secs();
            tracing::warn!(
                refused = state.count,
                "refused {} {} in the last {interval} s (each is logged at debug)",
                state.count,
                self.what,
            );
            state.count = 0;
            state.last_warning = Some(now);
        }
    }
}
