//! Whether a run still matches the registry, and reopening it on the registry as it is now;
//! what became of the runs the registry changed under (finished, migrated, stopped).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::audit;
use crate::change::{RunEnd, RunEndKind};
use crate::discover::run::Run;
use crate::register::registry::Registry;

impl Run {
    /// Whether nothing changed under this run since it was opened: a run opened now for
    /// the same subject would be shown exactly the same tools in exactly the same versions,
    /// and none of them is revoked or not ready.
    ///
    /// It turns `false` when a tool the run was shown is revoked, replaced (whichever
    /// [`OldRuns`](crate::change::OldRuns) the replacement chose), or stops being ready, and
    /// when a tool the subject may see is restored, added back to its view, or ready again
    /// after the run was opened without it. A change to a tool this subject cannot see
    /// leaves it `true`; a readiness that comes and goes again leaves it as it was. Access
    /// rules are asked again only once the registry changed. Cheap while the registry has
    /// not changed (one atomic read); after a change, the first call projects the subject
    /// again, as [`Registry::open_run`] does.
    ///
    /// A run that is not current goes on as [`Registry::replace`] and
    /// [`Registry::revoke`] say; [`Registry::reopen`] opens its successor.
    ///
    /// ```standalone_crate
    /// use registry_core::{change::ReplaceOptions, DynamicTool, Registry, Subject};
    ///
    /// let status = |text: &'static str| {
    ///     DynamicTool::new("status", "Read the build status.")
    ///         .public()
    ///         .handler(move |_, _| Ok::<_, String>(serde_json::json!(text)))
    /// };
    /// let registry = Registry::builder().tool(status("green")).build()?;
    /// let run = registry.open_run("run-1", &Subject::new("acme"));
    /// assert!(run.is_current());
    ///
    /// registry.replace(status("all green"), ReplaceOptions::keep_old_runs("clearer"))?;
    /// assert!(!run.is_current());
    /// let next = registry.reopen(&run);
    /// assert!(next.is_current());
    /// # Ok::<(), registry_core::RegistryError>(())
    /// ```
    pub fn is_current(&self) -> bool {
        let registry = self.origin();
        let generation = registry.change_generation();
        let checked = self.currency.checked.load(Ordering::Acquire);
        if checked >> 1 == generation {
            return checked & 1 == 1;
        }
        let current = self.matches_projection();
        self.currency
            .checked
            .store(generation << 1 | u64::from(current), Ordering::Release);
        current
    }

    /// Whether projecting the subject now gives exactly the slots and versions the run has.
    fn matches_projection(&self) -> bool {
        let (snapshot, visible) = self.origin().project(self.subject());
        let entries = self.allowed().entries();
        visible.len() == self.allowed().len()
            && entries
                .iter()
                .zip(&visible)
                .all(|(entry, &slot)| entry.slot == slot && snapshot.version(slot) == entry.version)
    }

    /// The id of the run this one reopened ([`Registry::reopen`]), if it reopened one.
    pub fn reopened_from(&self) -> Option<&str> {
        self.reopened_from.as_deref()
    }

    /// The record of this run's end, of `kind`.
    fn end(&self, kind: RunEndKind, reopened_as: Option<String>) -> RunEnd {
        RunEnd {
            at: audit::now(),
            run_id: self.id().to_owned(),
            tenant: self.subject().tenant().to_owned(),
            principal: self.subject().principal().map(str::to_owned),
            fingerprint: self.allowed().fingerprint(),
            kind,
            reopened_as,
        }
    }
}

impl Registry {
    /// Opens a new run for the subject of `run`, on the registry as it is now: what
    /// [`open_run`](Self::open_run) would give that subject, with `run`'s own options
    /// carried over, for an application that learns its run is no longer current
    /// ([`Run::is_current`]) and wants the session to go on with the current tools.
    ///
    /// The new run keeps:
    ///
    /// - the subject, whole (tenant, agent, principal, scopes, access, attributes);
    /// - the run's call timeout, its own call policies and its host;
    /// - its call budget, shared: the calls of both runs count against one budget, so that
    ///   reopening never grants more calls;
    /// - a link back: [`Run::reopened_from`] is `run`'s id.
    ///
    /// Its id is `run`'s, followed by `~` and the registry's change generation
    /// ([`RegistryExt::generation`](crate::server::RegistryExt::generation)): a run id is the
    /// application's, and an audit reader must tell the two projections apart, while the
    /// common prefix keeps the session's events together (`run-1` reopened at generation 3
    /// is `run-1~3`; reopened again at 5, `run-1~5`). Approvals and tasks belong to the
    /// subject, not to a run id: pending approvals bound to the old allowed set stay with the
    /// old run, tasks can be read from either.
    ///
    /// `run` stays usable, as it was. Its reopening is recorded as
    /// [`RunEndKind::Migrated`](crate::change::RunEndKind::Migrated) in
    /// [`run_ends`](Self::run_ends) and audited; a run that is dropped while no longer
    /// current without being reopened is recorded as finished or stopped.
    ///
    /// ```standalone_crate
    /// use registry_core::{change::RunEndKind, DynamicTool, ErrorKind, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// let registry = Registry::builder()
    ///     .tool(DynamicTool::new("status", "Read the build status.")
    ///         .public()
    ///         .handler(|_, _| Ok::<_, String>(serde_json::json!("green"))))
    ///     .build()?;
    /// let run = registry.open_run("run-1", &Subject::new("acme")).with_call_budget(10);
    /// registry.revoke("status", "incident 42")?;
    /// registry.restore("status", "incident 42 over")?;
    /// assert!(!run.is_current());
    ///
    /// let call = ToolCall::new("c1", "status", json!({}));
    /// assert_eq!(run.call_blocking(call.clone()).error_kind(), Some(ErrorKind::Revoked));
    /// let next = registry.reopen(&run);
    /// assert_eq!(next.id(), "run-1~2");
    /// assert_eq!(next.reopened_from(), Some("run-1"));
    /// assert_eq!(next.call_blocking(call).error_kind(), None);
    ///
    /// let ends = registry.run_ends();
    /// assert_eq!(ends[0].kind, RunEndKind::Migrated);
    /// assert_eq!(ends[0].reopened_as.as_deref(), Some("run-1~2"));
    /// # Ok::<(), registry_core::RegistryError>(())
    /// ```
    pub fn reopen(&self, run: &Run) -> Run {
        let root = match run.reopened_from() {
            // `run` is itself a reopening: its id is its predecessor's, suffixed.
            Some(_) => run.id().rsplit_once('~').map_or(run.id(), |(root, _)| root),
            None => run.id(),
        };
        let id: Arc<str> = format!("{root}~{}", self.change_generation()).into();
        let mut next = self.open_run_from(id, run.subject(), Some(run.scope.run_id.clone()));
        next.timeout = run.timeout;
        next.policies = run.policies.clone();
        next.budget = run.budget.clone();
        next.host = run.host.clone();
        run.currency.reopened.store(true, Ordering::Release);
        let end = run.end(RunEndKind::Migrated, Some(next.id().to_owned()));
        // Recorded by the registry `run` was opened from, which keeps its records.
        run.origin().record_run_end(end);
        next
    }
}

impl Drop for Run {
    /// A run that is no longer current and was not reopened records how it ended.
    fn drop(&mut self) {
        if self.currency.reopened.load(Ordering::Acquire) || self.is_current() {
            return;
        }
        let registry = self.origin();
        let stopped = self.allowed().entries().iter().any(|entry| {
            registry.is_revoked(entry.slot, entry.version) || !registry.is_ready(entry.slot)
        });
        let kind = if stopped {
            RunEndKind::Stopped
        } else {
            RunEndKind::Finished
        };
        registry.record_run_end(self.end(kind, None));
    }
}
