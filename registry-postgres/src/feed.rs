//! The change feed: every replica applies every recorded change, in order, and holds its
//! calls while it cannot know what changed.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use registry_core::audit::AUDIT_TARGET;
use registry_core::server::RegistryExt;
use registry_core::{DynamicTool, Registry, RegistryError, Tool, change::ReplaceOptions};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, Client};

use crate::changes::{CHANNEL, NewChange, SELECT_CHANGES, change_of};
use crate::error::Error;
use crate::plane::ControlPlane;
use crate::records::{ChangeRecord, RecordedKind};

/// How many changes one catch-up reads at a time.
const PAGE: i64 = 1000;

/// A registry following the control plane's changes ([`ControlPlane::follow`]).
///
/// It applies every change recorded by any replica or by `registry-admin`, in order, through
/// the registry's own [`revoke`](Registry::revoke) and [`restore`](Registry::restore): a
/// notification brings each within moments, and a heartbeat asks anyway, so a lost
/// notification costs one heartbeat at most. When its connection drops, or the database has
/// not answered for the plane's lease, it holds every call of the registry
/// ([`RegistryExt::suspend`](registry_core::server::RegistryExt::suspend)): whether a tool was revoked elsewhere cannot be known, and a call
/// that might be revoked must not run. It reconnects by itself, catches up from the last
/// change it applied, and lets calls through again.
///
/// A replacement recorded elsewhere names the version it replaced and the new one (their
/// [version fingerprints](registry_core::Tool::version_fingerprint), which cover the
/// definition, hints, scopes, tenants and gate flags): a replica serving exactly the replaced
/// version does not have the new one, and revokes its own until it is given it (a
/// restoration recorded later restores the new version elsewhere, and leaves this replica's
/// replaced one revoked). A replica deployed with another version, the new one or newer code
/// still, is not concerned. The replica that made a replacement knows the record as its own
/// (by the sequence number the database gave it) and does not apply it again.
///
/// A handler is code, which has no fingerprint: a replacement that changes only the handler
/// names the same version as replaced and new. Every other replica serving that version
/// cannot know whether it has the new code, and stops serving it (fail closed), as does the
/// replica that made it once restarted (it replays the record as anyone else's), and so does
/// the replica that made it when the database committed the record but its answer was lost
/// (the record comes back unrecognised). Give such a change something a version shows, a
/// changed description say, to keep it served where it is deployed.
///
/// Cedar policy sets pushed to every replica ([`ControlPlane::push_policies`]) come through
/// the feed too: see [`on_policies`](Self::on_policies). A feed without a hook ignores them.
///
/// Shutting it down (or dropping it) leaves the registry held: without the feed it cannot
/// know what changed.
pub struct ChangeFeed {
    plane: ControlPlane,
    registry: Registry,
    shared: Arc<Shared>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

struct Shared {
    /// The sequence number of the last change applied.
    applied: watch::Sender<i64>,
    /// When the database last answered the feed.
    last_ok: Mutex<Instant>,
    /// Whether the feed has held the registry's calls.
    holding: AtomicBool,
    /// Serializes holding and releasing.
    gate: Mutex<()>,
    /// The fingerprints of the versions each tool's recorded replacements replaced: a
    /// replica serving one of them keeps it revoked, even when a restoration comes later.
    /// Version fingerprints are kept as `version:` and the fingerprint; fingerprints of what
    /// was shown (records before version 8 of the schema) as they are.
    replaced: Mutex<HashMap<String, HashSet<String>>>,
    /// The replacements this replica made and recorded, by sequence number, until the feed
    /// reaches them: they are already applied here.
    own: Mutex<HashSet<i64>>,
    /// Held while this replica records a replacement, and by the feed while it applies what
    /// it read: the feed never sees a replacement of this replica's before it is in `own`.
    recording: tokio::sync::Mutex<()>,
    stop: watch::Sender<bool>,
    /// The application's validation of pushed policy sets and what it did with them; held
    /// for a whole pass, so that the hook is called once at a time.
    policies: tokio::sync::Mutex<Policies>,
    /// The generation of the policy set this replica runs (0: none pushed was applied).
    policies_running: AtomicI64,
    /// Wakes the task that gives the newest policy set to the hook.
    policies_wake: tokio::sync::Notify,
}

/// The validation an application installs with [`ChangeFeed::on_policies`].
type PolicyHook = dyn Fn(&[(String, String)]) -> Result<(), String> + Send + Sync;

/// What the feed did with pushed policy sets.
#[derive(Default)]
struct Policies {
    hook: Option<Arc<PolicyHook>>,
    /// The generation last given to the hook (0: none).
    handled: i64,
    /// A status that could not be reported: (generation, refusal), reported on the next pass.
    unreported: Option<(i64, Option<String>)>,
    /// Whether this replica's presence was reported while no set was pushed yet (generation
    /// 0), so that `registry-admin policy push --wait` waits for it from the first push.
    present: bool,
}

impl std::fmt::Debug for ChangeFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeFeed")
            .field("applied", &*self.shared.applied.borrow())
            .field("live", &self.is_live())
            .finish_non_exhaustive()
    }
}

impl ControlPlane {
    /// Applies to `registry` every change recorded so far, then keeps following: see
    /// [`ChangeFeed`]. Fails if the database cannot be reached now; after that, outages are
    /// handled by holding calls until it is back.
    pub async fn follow(&self, registry: &Registry) -> Result<ChangeFeed, Error> {
        let (stop, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            applied: watch::channel(0).0,
            last_ok: Mutex::new(Instant::now()),
            holding: AtomicBool::new(false),
            gate: Mutex::new(()),
            replaced: Mutex::new(HashMap::new()),
            own: Mutex::new(HashSet::new()),
            recording: tokio::sync::Mutex::new(()),
            stop,
            policies: tokio::sync::Mutex::new(Policies::default()),
            policies_running: AtomicI64::new(0),
            policies_wake: tokio::sync::Notify::new(),
        });
        let follower = Follower {
            plane: self.clone(),
            registry: registry.clone(),
            shared: shared.clone(),
        };
        self.record_tools(registry).await?;
        let listening = follower.listen().await?;
        let watchdog = tokio::spawn(follower.clone().watchdog());
        let policies = tokio::spawn(follower.clone().follow_policies());
        let main = tokio::spawn(follower.run(Some(listening)));
        Ok(ChangeFeed {
            plane: self.clone(),
            registry: registry.clone(),
            shared,
            tasks: Mutex::new(vec![main, watchdog, policies]),
        })
    }
}

impl ChangeFeed {
    /// Revokes `tool` on every replica: records it, and returns once this replica applied
    /// it (the others do within moments). An unknown name is an error, and nothing is
    /// recorded.
    pub async fn revoke(&self, tool: &str, reason: &str) -> Result<ChangeRecord, Error> {
        known(&self.registry, tool)?;
        self.record_and_apply(tool, RecordedKind::Revoke, reason)
            .await
    }

    /// Brings a revoked `tool` back on every replica, for runs opened from now on; see
    /// [`Registry::restore`]. A tool that is not revoked here is an error, and nothing is
    /// recorded.
    pub async fn restore(&self, tool: &str, reason: &str) -> Result<ChangeRecord, Error> {
        if self.registry.is_revoked_now(tool) == Some(false) {
            return Err(RegistryError::NotRevoked {
                name: tool.to_owned(),
            }
            .into());
        }
        known(&self.registry, tool)?;
        self.record_and_apply(tool, RecordedKind::Restore, reason)
            .await
    }

    /// Records a revocation or restoration by this replica, and waits until it applied it.
    async fn record_and_apply(
        &self,
        tool: &str,
        kind: RecordedKind,
        reason: &str,
    ) -> Result<ChangeRecord, Error> {
        let origin = self.plane.replica();
        let seq = self
            .plane
            .record(NewChange::plain(tool, kind, reason, origin))
            .await?;
        self.applied(seq).await
    }

    /// Replaces a tool on this replica ([`Registry::replace`]) and records it for the
    /// others: a replica with the same new definition (deployed with it) keeps serving it; one
    /// without it stops serving its old version.
    pub async fn replace(
        &self,
        tool: DynamicTool,
        options: ReplaceOptions,
    ) -> Result<ChangeRecord, Error> {
        // Its snake_case name as registry-core serializes it (`keep_shown_version`, `revoke`),
        // whatever kinds `OldRuns` comes to have.
        let old_runs = serde_json::to_value(options.old_runs)
            .ok()
            .and_then(|name| name.as_str().map(str::to_owned));
        let reason = options.reason.clone();
        // Until the record is known as this replica's own, the feed applies nothing.
        let recording = self.shared.recording.lock().await;
        let change = self.registry.replace(tool, options)?;
        let new_fingerprint = known(&self.registry, &change.name)?.fingerprint();
        let recorded = self
            .plane
            .record(NewChange {
                tool: &change.name,
                kind: RecordedKind::Replace,
                old_runs: old_runs.as_deref(),
                fingerprint: Some(new_fingerprint.to_string()),
                old_fingerprint: Some(change.old_fingerprint.to_string()),
                version: change.new_version.map(|version| version.to_string()),
                old_version: Some(change.old_version.to_string()),
                reason: &reason,
                origin: self.plane.replica(),
                policies: None,
            })
            .await;
        if let Ok(seq) = recorded {
            self.shared
                .own
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(seq);
        }
        drop(recording);
        match recorded {
            Ok(seq) => self.applied(seq).await,
            Err(error) => Err(Error::NotRecorded {
                tool: change.name,
                source: Box::new(error),
            }),
        }
    }

    /// The sequence number of the last change this replica applied.
    pub fn applied_seq(&self) -> i64 {
        *self.shared.applied.borrow()
    }

    /// Whether the feed is connected and recent: calls are not held.
    pub fn is_live(&self) -> bool {
        !self.shared.holding.load(Ordering::Acquire)
    }

    /// Installs the validation of pushed Cedar policy sets
    /// ([`ControlPlane::push_policies`], `registry-admin policy push`), and gives it the
    /// newest set now, if one was pushed. Returns once the hook has answered and this
    /// replica's status is recorded ([`ControlPlane::policy_status`]).
    ///
    /// From then on, each time the feed applies a change of kind
    /// [`Policies`](RecordedKind::Policies) (and when it reconnects and catches up), it reads
    /// the newest set and calls `hook` with its files, `(name, Cedar text)` in name order, on
    /// a blocking thread. The hook **is** the validation, and the switch: it swaps the
    /// application's policies and answers `Ok(())`, or keeps them and answers `Err` with why
    /// (`registry_cedar::CedarPolicies::reload_files` does both, atomically). A replica
    /// never runs a set its hook did not accept. Either way the replica records what it did
    /// (applied generation G, or refused generation G with the hook's words, NUL written as
    /// `\u{0}`), and logs it on target `registry_core::audit`. A hook that panics refuses.
    /// Sets pushed while an earlier one was being validated are not given one by one: the
    /// newest is what counts.
    ///
    /// Installing another hook replaces this one, and gives it the newest set again. A feed
    /// without a hook ignores pushed policy sets (it records nothing of them).
    ///
    /// An error (the set could not be read, the status not recorded) leaves the hook
    /// installed; the feed tries again at its next heartbeat.
    ///
    /// ```no_run
    /// # async fn run(plane: registry_postgres::ControlPlane, registry: registry_core::Registry) -> Result<(), registry_postgres::Error> {
    /// let feed = plane.follow(&registry).await?;
    /// // With registry-cedar: `move |files| policies.reload_files(files.to_vec()).map_err(|e| e.to_string())`.
    /// feed.on_policies(|files: &[(String, String)]| {
    ///     if files.iter().any(|(_, text)| text.contains("forbid(principal, action, resource);")) {
    ///         return Err("a set that forbids everything is not taken".to_owned());
    ///     }
    ///     Ok(())
    /// })
    /// .await?;
    /// println!("running policy set {:?}", feed.policy_generation());
    /// # Ok(()) }
    /// ```
    pub async fn on_policies(
        &self,
        hook: impl Fn(&[(String, String)]) -> Result<(), String> + Send + Sync + 'static,
    ) -> Result<(), Error> {
        {
            let mut policies = self.shared.policies.lock().await;
            *policies = Policies {
                hook: Some(Arc::new(hook)),
                ..Policies::default()
            };
            self.shared.policies_running.store(0, Ordering::Release);
        }
        let follower = Follower {
            plane: self.plane.clone(),
            registry: self.registry.clone(),
            shared: self.shared.clone(),
        };
        let applied = follower.apply_policies().await;
        if applied.is_err() {
            self.shared.policies_wake.notify_one();
        }
        applied
    }

    /// The generation of the pushed policy set this replica runs: the last one its hook
    /// ([`on_policies`](Self::on_policies)) accepted, if any.
    pub fn policy_generation(&self) -> Option<i64> {
        Some(self.shared.policies_running.load(Ordering::Acquire)).filter(|at| *at > 0)
    }

    /// Waits until this replica applied change `seq`, for as long as the plane's timeout.
    async fn applied(&self, seq: i64) -> Result<ChangeRecord, Error> {
        let mut applied = self.shared.applied.subscribe();
        let timeout = self
            .plane
            .settings()
            .timeout
            .max(self.plane.settings().lease);
        let reached = tokio::time::timeout(timeout, applied.wait_for(|at| *at >= seq)).await;
        if !matches!(reached, Ok(Ok(_))) {
            return Err(Error::NotApplied {
                seq,
                why: self
                    .registry
                    .suspended()
                    .unwrap_or_else(|| "no notification came".to_owned()),
            });
        }
        let mut records = self.plane.changes(seq - 1, 1).await?;
        records.pop().ok_or(Error::Corrupt {
            table: "registry_changes",
            detail: format!("change #{seq} is gone"),
        })
    }

    /// Stops following. The registry's calls stay held: it no longer knows what changes.
    pub async fn shutdown(&self) {
        self.shared.stop.send_replace(true);
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        for task in tasks {
            let _ = task.await;
        }
        self.registry
            .suspend("the change feed was shut down: changes made elsewhere are not followed");
    }
}

impl Drop for ChangeFeed {
    fn drop(&mut self) {
        self.shared.stop.send_replace(true);
        for task in self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            task.abort();
        }
        self.registry
            .suspend("the change feed was dropped: changes made elsewhere are not followed");
    }
}

/// A connection listening for changes: the client, and the notifications it receives
/// (closed when the connection is lost).
struct Listening {
    client: Client,
    notices: mpsc::UnboundedReceiver<()>,
}

#[derive(Clone)]
struct Follower {
    plane: ControlPlane,
    registry: Registry,
    shared: Arc<Shared>,
}

impl Follower {
    /// Connects, listens, and catches up: once this returns, every change committed before
    /// it is applied, and any committed after is announced.
    async fn listen(&self) -> Result<Listening, Error> {
        let (client, mut connection) = self.plane.dedicated().await?;
        let (tx, notices) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(message) = messages.next().await {
                match message {
                    Ok(AsyncMessage::Notification(_)) => {
                        if tx.send(()).is_err() {
                            break;
                        }
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, "the change feed's connection failed");
                        break;
                    }
                }
            }
        });
        let timeout = self.plane.settings().timeout;
        tokio::time::timeout(timeout, client.batch_execute(&format!("LISTEN {CHANNEL}")))
            .await
            .map_err(|_| Error::Timeout(timeout, "listening for changes"))?
            .map_err(Error::db("listening for changes"))?;
        self.catch_up(&client).await?;
        Ok(Listening { client, notices })
    }

    /// Applies every change after the last one applied, and notes that the database
    /// answered.
    async fn catch_up(&self, client: &Client) -> Result<(), Error> {
        let timeout = self.plane.settings().timeout;
        loop {
            let after = *self.shared.applied.borrow();
            let rows =
                tokio::time::timeout(timeout, client.query(SELECT_CHANGES, &[&after, &PAGE]))
                    .await
                    .map_err(|_| Error::Timeout(timeout, "reading changes"))?
                    .map_err(Error::db("reading changes"))?;
            *self
                .shared
                .last_ok
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Instant::now();
            let count = rows.len();
            // A replacement this replica is recording now is in `own` once this is taken.
            let _recording = self.shared.recording.lock().await;
            for row in &rows {
                let record = change_of(row)?;
                if record.kind == RecordedKind::Policies {
                    // Read and validated by the policies task: the newest set is what counts.
                    tracing::debug!(seq = record.seq, generation = ?record.policies, "a policy set was pushed");
                    self.shared.policies_wake.notify_one();
                    self.shared.applied.send_replace(record.seq);
                    continue;
                }
                let own = self
                    .shared
                    .own
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&record.seq);
                let mut replaced = self
                    .shared
                    .replaced
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if own {
                    tracing::debug!(seq = record.seq, tool = ?record.tool, "a replacement this replica made; already applied");
                } else {
                    apply(&self.registry, &mut replaced, &record);
                }
                self.shared.applied.send_replace(record.seq);
            }
            if (count as i64) < PAGE {
                return Ok(());
            }
        }
    }

    /// Follows until stopped: on each notification and heartbeat, catches up; when the
    /// connection is lost, holds calls and reconnects.
    async fn run(self, mut listening: Option<Listening>) {
        let mut stop = self.shared.stop.subscribe();
        let heartbeat = self.plane.settings().heartbeat;
        let mut backoff = heartbeat;
        if listening.is_some() {
            self.release();
        }
        loop {
            if *stop.borrow() {
                return;
            }
            let Some(live) = listening.as_mut() else {
                match self.listen().await {
                    Ok(connected) => {
                        tracing::info!(
                            applied = *self.shared.applied.borrow(),
                            "the change feed reconnected and caught up"
                        );
                        listening = Some(connected);
                        backoff = heartbeat;
                        self.release();
                    }
                    Err(error) => {
                        self.hold(&format!("the control plane cannot be reached ({error})"));
                        tokio::select! {
                            _ = tokio::time::sleep(backoff) => {}
                            _ = stop.wait_for(|stopped| *stopped) => return,
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                }
                continue;
            };
            let woke = tokio::select! {
                notice = live.notices.recv() => notice.is_some(),
                _ = tokio::time::sleep(heartbeat) => true,
                _ = stop.wait_for(|stopped| *stopped) => return,
            };
            let result = if woke {
                // Several notifications may be waiting: one catch-up covers them all.
                while live.notices.try_recv().is_ok() {}
                self.catch_up(&live.client).await
            } else {
                Err(Error::Pool(
                    "the change feed's connection closed".to_owned(),
                ))
            };
            match result {
                Ok(()) => self.release(),
                Err(error) => {
                    tracing::warn!(%error, "the change feed lost the control plane");
                    self.hold(&format!(
                        "the connection to the control plane was lost ({error})"
                    ));
                    listening = None;
                }
            }
        }
    }

    /// Gives the newest policy set to the hook each time the feed sees one pushed; after a
    /// failure, tries again every heartbeat.
    /// While a hook is installed, refreshes this replica's policy status every 20
    /// heartbeats (at most every 20 s), so that it counts as live
    /// ([`POLICY_STATUS_TTL`](crate::POLICY_STATUS_TTL)).
    async fn follow_policies(self) {
        let mut stop = self.shared.stop.subscribe();
        let heartbeat = self.plane.settings().heartbeat;
        let mut refresh =
            tokio::time::interval((heartbeat * 20).min(crate::policies::POLICY_STATUS_TTL / 3));
        refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        refresh.tick().await;
        loop {
            let refreshing = tokio::select! {
                _ = self.shared.policies_wake.notified() => false,
                _ = refresh.tick() => true,
                _ = stop.wait_for(|stopped| *stopped) => return,
            };
            if refreshing {
                let hooked = self.shared.policies.lock().await.hook.is_some();
                if hooked && let Err(error) = self.plane.refresh_policy_status().await {
                    tracing::debug!(%error, "the policy status could not be refreshed");
                }
                continue;
            }
            if let Err(error) = self.apply_policies().await {
                tracing::warn!(%error, "the pushed policy set could not be read or reported; trying again");
                tokio::select! {
                    _ = tokio::time::sleep(heartbeat) => {}
                    _ = stop.wait_for(|stopped| *stopped) => return,
                }
                self.shared.policies_wake.notify_one();
            }
        }
    }

    /// Gives the newest policy set to the hook, if there is a hook and a set it was not
    /// given yet, and records what it did.
    async fn apply_policies(&self) -> Result<(), Error> {
        let mut policies = self.shared.policies.lock().await;
        let Some(hook) = policies.hook.clone() else {
            return Ok(());
        };
        if let Some((generation, refusal)) = policies.unreported.take() {
            let running = self.running();
            if let Err(error) = self
                .plane
                .report_policy_status(generation, refusal.as_deref(), running)
                .await
            {
                policies.unreported = Some((generation, refusal));
                return Err(error);
            }
        }
        let Some(set) = self.plane.policies().await? else {
            // No set pushed yet: say that this replica validates sets (generation 0, running
            // none), so that it is live, and waited for, when the first one is pushed.
            if !policies.present {
                self.plane.report_policy_status(0, None, None).await?;
                policies.present = true;
            }
            return Ok(());
        };
        if set.generation <= policies.handled {
            return Ok(());
        }
        let generation = set.generation;
        let digest = set.digest.clone();
        let verdict = if crate::policies::policy_digest(&set.files) != set.digest {
            Err(format!(
                "the files read back do not match the digest {digest} they were pushed with"
            ))
        } else {
            let files = set.files;
            tokio::task::spawn_blocking(move || hook(&files))
                .await
                .unwrap_or_else(|_| Err("the policy validation panicked".to_owned()))
        };
        policies.handled = generation;
        let refusal = match verdict {
            Ok(()) => {
                self.shared
                    .policies_running
                    .store(generation, Ordering::Release);
                tracing::info!(
                    target: AUDIT_TARGET,
                    event = "policies",
                    replica = ?self.plane.replica(),
                    generation,
                    digest = %digest,
                    outcome = "applied",
                    "a pushed policy set was validated and applied"
                );
                None
            }
            Err(why) => {
                tracing::warn!(
                    target: AUDIT_TARGET,
                    event = "policies",
                    replica = ?self.plane.replica(),
                    generation,
                    digest = %digest,
                    outcome = "refused",
                    reason = ?why,
                    running = ?self.running(),
                    "a pushed policy set was refused; this replica keeps the policies it runs"
                );
                Some(why)
            }
        };
        if let Err(error) = self
            .plane
            .report_policy_status(generation, refusal.as_deref(), self.running())
            .await
        {
            policies.unreported = Some((generation, refusal));
            return Err(error);
        }
        Ok(())
    }

    /// The generation of the policy set this replica runs, if any.
    fn running(&self) -> Option<i64> {
        Some(self.shared.policies_running.load(Ordering::Acquire)).filter(|at| *at > 0)
    }

    /// Holds calls whenever the database has not answered for the lease.
    async fn watchdog(self) {
        let mut stop = self.shared.stop.subscribe();
        let lease = self.plane.settings().lease;
        let tick = (lease / 4).max(Duration::from_millis(10));
        loop {
            tokio::select! {
                _ = tokio::time::sleep(tick) => {}
                _ = stop.wait_for(|stopped| *stopped) => return,
            }
            let silent = self
                .shared
                .last_ok
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .elapsed();
            if silent > lease {
                self.hold(&format!(
                    "the control plane has not answered for {} ms",
                    silent.as_millis()
                ));
            }
        }
    }

    fn hold(&self, why: &str) {
        let _gate = self
            .shared
            .gate
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !self.shared.holding.swap(true, Ordering::AcqRel) {
            tracing::warn!(why, "calls are held until the control plane answers again");
        }
        self.registry.suspend(format!(
            "whether a tool was revoked on another replica cannot be known: {why}"
        ));
    }

    fn release(&self) {
        let _gate = self
            .shared
            .gate
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let fresh = self
            .shared
            .last_ok
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed()
            <= self.plane.settings().lease;
        if fresh && self.shared.holding.swap(false, Ordering::AcqRel) {
            self.registry.resume();
        }
    }
}

/// Applies one recorded change to the registry, through its own revoke and restore.
/// `replaced` holds, for each tool, the fingerprints of the versions replaced so far.
fn apply(
    registry: &Registry,
    replaced: &mut HashMap<String, HashSet<String>>,
    record: &ChangeRecord,
) {
    let tool = record.tool.as_str();
    let served = known(registry, tool).map(|tool| Served::of(&tool));
    // A record that does not concern this replica (a tool it does not have, a restoration of
    // one it does not hold revoked) is not attempted: it is no refused change of its own.
    let outcome = match record.kind {
        _ if served.is_err() => served.as_ref().map(drop).map_err(Clone::clone),
        RecordedKind::Revoke => registry.revoke(tool, record.reason.clone()).map(drop),
        RecordedKind::Restore if registry.is_revoked_now(tool) == Some(false) => Ok(()),
        RecordedKind::Restore => match &served {
            // The other replicas restore the version that replaced this one's; this replica
            // does not have it, and must not bring its replaced one back.
            Ok(served) if replaced.get(tool).is_some_and(|set| served.is_in(set)) => {
                tracing::info!(seq = record.seq, tool = ?tool, "a restoration of a version this replica does not have; its own stays revoked");
                Ok(())
            }
            _ => match registry.restore(tool, record.reason.clone()) {
                Err(RegistryError::NotRevoked { .. }) => Ok(()),
                other => other.map(drop),
            },
        },
        // Read by the policies task, never here (see `catch_up`).
        RecordedKind::Policies => Ok(()),
        RecordedKind::Replace => match &served {
            Ok(served) => {
                if served.lacks(record) && registry.is_revoked_now(tool) == Some(false) {
                    registry
                        .revoke(
                            tool,
                            format!(
                                "replaced on {} by a version this replica does not have ({})",
                                record.origin, record.reason
                            ),
                        )
                        .map(drop)
                } else {
                    Ok(())
                }
            }
            Err(error) => Err(error.clone()),
        },
    };
    if record.kind == RecordedKind::Replace {
        note_replaced(
            replaced.entry(record.tool.clone()).or_default(),
            record,
            &served,
        );
    }
    match outcome {
        Ok(()) => {
            tracing::debug!(seq = record.seq, tool = ?tool, kind = record.kind.as_str(), "change applied")
        }
        Err(error) => {
            tracing::warn!(seq = record.seq, tool = ?tool, %error, "a recorded change does not apply to this registry; skipped")
        }
    }
}

/// Notes in `set` the version `record` replaced, as its fingerprint says.
fn note_replaced(
    set: &mut HashSet<String>,
    record: &ChangeRecord,
    served: &Result<Served, RegistryError>,
) {
    if let Some(old) = &record.old_version {
        set.insert(format!("{VERSION}{old}"));
        // The new version is never a replaced one (a tool replaced back and forth), unless
        // nothing tells the two apart (a handler-only change): then it stays replaced.
        if let Some(new) = record.version.as_ref().filter(|new| *new != old) {
            set.remove(&format!("{VERSION}{new}"));
        }
        return;
    }
    match (&record.old_fingerprint, served) {
        (Some(old), _) => {
            set.insert(old.clone());
        }
        // An older record: what this replica serves, unless it is the new version.
        (None, Ok(served)) if record.fingerprint.as_ref() != Some(&served.shown) => {
            set.insert(served.shown.clone());
        }
        _ => {}
    }
    if let Some(new) = &record.fingerprint {
        set.remove(new);
    }
}

/// The tool named `name`, or the registry's error for a name it does not have.
fn known(registry: &Registry, name: &str) -> Result<Tool, RegistryError> {
    registry
        .get(name)
        .ok_or_else(|| RegistryError::UnknownTool {
            name: name.to_owned(),
        })
}

/// How the version fingerprints of `replaced` are written (a version fingerprint and a
/// fingerprint of what was shown are both 32 hex digits).
const VERSION: &str = "version:";

/// What this replica serves of a tool: the fingerprint of what is shown, and the version.
struct Served {
    shown: String,
    version: String,
}

impl Served {
    fn of(tool: &Tool) -> Served {
        Served {
            shown: tool.fingerprint().to_string(),
            version: tool.version_fingerprint().to_string(),
        }
    }

    /// Whether this replica lacks the replacement `record` made: it serves exactly the
    /// replaced version, by version fingerprint where the record has one; for records made
    /// before those, by what was shown (or, for a record that names neither, anything but the
    /// new definition).
    fn lacks(&self, record: &ChangeRecord) -> bool {
        match (&record.old_version, &record.old_fingerprint) {
            (Some(old), _) => *old == self.version,
            (None, Some(old)) => *old == self.shown,
            (None, None) => record.fingerprint.as_ref() != Some(&self.shown),
        }
    }

    /// Whether `set` (of [`note_replaced`]) holds this version.
    fn is_in(&self, set: &HashSet<String>) -> bool {
        set.contains(&format!("{VERSION}{}", self.version)) || set.contains(&self.shown)
    }
}
