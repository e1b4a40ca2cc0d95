//! A run's currency: whether it still matches the registry, as last checked (`reopen.rs`
//! reads and updates it).

use std::sync::atomic::{AtomicBool, AtomicU64};

/// What a run last found of its currency: the registry's change generation it checked
/// against, and whether it was current then; and whether it was reopened.
#[derive(Debug)]
pub(crate) struct Currency {
    /// `generation << 1 | current`: one atomic, so that a reader never pairs a result with
    /// another generation.
    pub(super) checked: AtomicU64,
    /// Set once the run is reopened: its end is recorded then, not when it is dropped.
    pub(super) reopened: AtomicBool,
}

impl Currency {
    /// A run projected at change `generation`: current against it.
    pub(crate) fn new(generation: u64) -> Currency {
        Currency {
            checked: AtomicU64::new(generation << 1 | 1),
            reopened: AtomicBool::new(false),
        }
    }
}
