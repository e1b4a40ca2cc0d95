//! [`CedarPolicies::reload_on_hangup`]: the set reloaded from its directory on each SIGHUP, as
//! daemons reread their configuration.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use signal_hook::consts::SIGHUP;
use signal_hook::iterator::{Handle, Signals};

use crate::{CedarError, CedarPolicies};

/// The SIGHUP listener of [`CedarPolicies::reload_on_hangup`]. While it lives, each SIGHUP
/// reloads the set from its directory ([`CedarPolicies::reload_dir`]: an atomic swap, or a
/// refusal that keeps the set in force, audited either way). Dropping it stops the listener
/// (SIGHUP is then handled as before it started: by default, it ends the process).
#[derive(Debug)]
pub struct ReloadOnHangup {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    reloads: AtomicU64,
    last_error: Mutex<Option<CedarError>>,
}

impl ReloadOnHangup {
    /// How many reloads SIGHUP started and finished, accepted or refused.
    pub fn reloads(&self) -> u64 {
        self.shared.reloads.load(Ordering::Acquire)
    }

    /// Why the last reload was refused, if it was (`None` once one is accepted).
    pub fn last_error(&self) -> Option<CedarError> {
        self.shared
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for ReloadOnHangup {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl CedarPolicies {
    /// Reloads the set from every `*.cedar` file of `dir` each time the process receives
    /// SIGHUP (`kill -HUP <pid>`), on a thread of its own, until the returned listener is
    /// dropped. A reload that fails to parse or validate is refused and the set in force
    /// stays ([`reload_dir`](Self::reload_dir)); [`ReloadOnHangup::last_error`] says why.
    ///
    /// Unix only. Errors if the signal handler cannot be installed.
    ///
    /// ```no_run
    /// # use registry_cedar::CedarPolicies;
    /// let policies = CedarPolicies::from_dir("policies")?;
    /// // ... build the registry with `.policies(policies.clone())` ...
    /// let _listener = policies.reload_on_hangup("policies")?;
    /// // `kill -HUP <pid>` now reloads the set; keep `_listener` for as long as that should be.
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reload_on_hangup(&self, dir: impl Into<PathBuf>) -> std::io::Result<ReloadOnHangup> {
        let dir = dir.into();
        let mut signals = Signals::new([SIGHUP])?;
        let handle = signals.handle();
        let shared = Arc::new(Shared::default());
        let policies = self.clone();
        let seen = shared.clone();
        let thread = std::thread::Builder::new()
            .name("cedar-sighup".into())
            .spawn(move || {
                for _ in signals.forever() {
                    let result = policies.reload_dir(&dir);
                    *seen
                        .last_error
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = result.err();
                    seen.reloads.fetch_add(1, Ordering::Release);
                }
            })?;
        Ok(ReloadOnHangup {
            handle,
            thread: Some(thread),
            shared,
        })
    }
}
