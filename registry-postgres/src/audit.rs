//! Audit events in `audit_events`, written in batches by a writer of their own.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use registry_core::{
    audit::{AuditEvent, AuditSink},
    definition::BoxFuture,
};
use serde_json::Value;

use crate::error::Error;
use crate::plane::ControlPlane;
use crate::records::{AuditFilter, AuditRecord};

/// What a [`PgAuditSink`] does when its queue is full because the database is slow or down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WhenFull {
    /// Calls wait until there is room: no event is lost, and calls slow down with the
    /// database (the default: audit must not be lost silently).
    ///
    /// The waiting is asynchronous and holds no lock: a run's asynchronous paths
    /// ([`Run::call`](registry_core::Run::call), the approval methods) await
    /// [`AuditSink::ready`] before a call, so a waiting call parks its task, never a
    /// thread of the runtime. An event recorded where nothing can wait (`open_run`,
    /// `call_blocking`, the registry's own changes) while the queue is full goes into a
    /// bounded overflow ([`AuditConfig::overflow`]); only past that is it dropped and
    /// counted, as under [`Drop`](Self::Drop).
    #[default]
    Block,
    /// The event is dropped and counted ([`AuditWriter::dropped`]); the count is written as
    /// an event of kind `dropped` once the database keeps up again, so the gap is on record.
    Drop,
}

/// How a [`PgAuditSink`] batches and bounds its queue.
///
/// ```
/// use std::time::Duration;
/// use registry_postgres::{AuditConfig, WhenFull};
///
/// let config = AuditConfig::default()
///     .capacity(50_000)
///     .batch(1_000)
///     .flush_every(Duration::from_millis(100))
///     .when_full(WhenFull::Drop);
/// # drop(config);
/// ```
#[derive(Debug, Clone)]
#[must_use = "a configuration does nothing until it is given to `ControlPlane::audit_sink`"]
pub struct AuditConfig {
    capacity: usize,
    batch: usize,
    flush_every: Duration,
    when_full: WhenFull,
    overflow: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            capacity: 10_000,
            batch: 500,
            flush_every: Duration::from_millis(200),
            when_full: WhenFull::Block,
            overflow: 1_024,
        }
    }
}

impl AuditConfig {
    /// Events held in memory at most, waiting to be written (default 10,000).
    pub fn capacity(mut self, events: usize) -> Self {
        self.capacity = events.max(1);
        self
    }

    /// Events written in one statement at most (default 500).
    pub fn batch(mut self, events: usize) -> Self {
        self.batch = events.max(1);
        self
    }

    /// How long an event may wait for a batch to fill before it is written anyway
    /// (default 200 ms): on a crash, at most this much (and what the queue held) is lost.
    pub fn flush_every(mut self, every: Duration) -> Self {
        self.flush_every = every;
        self
    }

    /// What to do when the queue is full (default [`WhenFull::Block`]).
    pub fn when_full(mut self, choice: WhenFull) -> Self {
        self.when_full = choice;
        self
    }

    /// Under [`WhenFull::Block`], events a full queue still takes from callers that cannot
    /// wait (default 1,024): `open_run`, `call_blocking` and the registry's own changes
    /// record without waiting, and so do the events of calls that waited together and
    /// found room at the same moment. Past capacity plus overflow, an event is dropped and
    /// counted. Memory is bounded by capacity plus overflow events.
    pub fn overflow(mut self, events: usize) -> Self {
        self.overflow = events;
        self
    }
}

/// The [`AuditSink`] of the control plane: every event of every replica in one table,
/// `audit_events`, which auditors can query (`registry-admin audit`). Argument values are
/// never written: call events carry their size and hash only, as everywhere.
///
/// Recording puts the event in a bounded queue and returns; a writer thread of its own, with
/// its own connection, writes the queue in batches (one `INSERT` per batch). When the queue is
/// full, [`WhenFull`] says whether the caller waits or the event is dropped and counted.
/// [`AuditWriter::shutdown`] writes everything left. On a crash (`kill -9`), what is lost is
/// what the queue held: the events of the last [`AuditConfig::flush_every`] at most while the
/// database keeps up.
///
/// ```no_run
/// # async fn serve(plane: registry_postgres::ControlPlane) -> Result<(), Box<dyn std::error::Error>> {
/// use registry_postgres::AuditConfig;
///
/// let (sink, writer) = plane.audit_sink(AuditConfig::default());
/// let registry = registry_core::Registry::builder().declared().audit_sink(sink).build()?;
/// // ... serve ...
/// writer.shutdown(std::time::Duration::from_secs(10)).await?;
/// # Ok(()) }
/// ```
pub struct PgAuditSink {
    shared: Arc<Shared>,
}

/// The writer behind a [`PgAuditSink`]: its counters, and a clean shutdown that flushes.
pub struct AuditWriter {
    shared: Arc<Shared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

struct Shared {
    queue: Mutex<VecDeque<Row>>,
    /// Signalled when events arrive, or on shutdown.
    arrived: Condvar,
    /// Woken when the writer took events out, or on shutdown: callers waiting in
    /// [`AuditSink::ready`] look again.
    room: tokio::sync::Notify,
    config: AuditConfig,
    closing: AtomicBool,
    dropped: AtomicU64,
    written: AtomicU64,
    /// Events the database refused even alone, recorded as `unwritable` events instead.
    unwritable: AtomicU64,
    /// Events done with: written as themselves or as `unwritable`, or lost.
    settled: AtomicU64,
    /// Events taken out of the queue but not written yet.
    in_flight: AtomicU64,
    /// Callers of [`AuditWriter::flush`] waiting: the writer writes what the queue holds
    /// without waiting for a full batch or the flush interval.
    flushing: AtomicUsize,
    /// Events ever put in the queue: a flush waits until `written` reaches the count it
    /// saw (the queue is written in order), not until the queue is empty.
    enqueued: AtomicU64,
    replica: String,
}

/// One event, ready to write.
struct Row {
    at: SystemTime,
    kind: &'static str,
    run_id: Option<String>,
    tenant: Option<String>,
    tool: Option<String>,
    call_id: Option<String>,
    outcome: Option<String>,
    approval_id: Option<String>,
    principal: Option<String>,
    event: Value,
    origin: Origin,
}

/// What a row stands for.
#[derive(Debug, Clone, Copy)]
enum Origin {
    /// An event recorded through the sink.
    Event,
    /// The record of an event the database refused.
    Unwritable,
    /// How many events were dropped.
    Dropped(u64),
}

impl ControlPlane {
    /// An audit sink writing to `audit_events`, and its writer (keep it, to flush on
    /// shutdown). The writer runs on a thread of its own, with its own connection: a call
    /// that records an event never waits for the database unless the queue is full and
    /// `config` says [`WhenFull::Block`].
    pub fn audit_sink(&self, config: AuditConfig) -> (PgAuditSink, AuditWriter) {
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            arrived: Condvar::new(),
            room: tokio::sync::Notify::new(),
            config,
            closing: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            written: AtomicU64::new(0),
            unwritable: AtomicU64::new(0),
            settled: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            flushing: AtomicUsize::new(0),
            enqueued: AtomicU64::new(0),
            replica: self.replica().to_owned(),
        });
        let plane = self.clone();
        let writer = shared.clone();
        let thread = std::thread::Builder::new()
            .name("registry-audit".to_owned())
            .spawn(move || write_loop(plane, writer))
            .ok();
        if thread.is_none() {
            tracing::error!(
                "no thread for the audit writer: audit events will queue, then block or drop"
            );
        }
        (
            PgAuditSink {
                shared: shared.clone(),
            },
            AuditWriter {
                shared,
                thread: Mutex::new(thread),
            },
        )
    }

    /// Audit events, newest first.
    pub async fn audit_events(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>, Error> {
        self.timed("reading audit events", async {
            let client = self.client().await?;
            let limit = filter.limit.unwrap_or(100);
            let rows = client
                .query(
                    "SELECT id, at, replica, kind, run_id, tenant, tool, call_id, outcome,
                            approval_id, event, principal
                       FROM audit_events
                      WHERE ($1::timestamptz IS NULL OR at >= $1)
                        AND ($2::text IS NULL OR tool = $2)
                        AND ($3::text IS NULL OR kind = $3)
                      ORDER BY id DESC LIMIT $4",
                    &[&filter.since, &filter.tool, &filter.kind, &limit],
                )
                .await
                .map_err(Error::db("reading audit events"))?;
            Ok(rows
                .iter()
                .map(|row| AuditRecord {
                    id: row.get(0),
                    at: row.get(1),
                    replica: row.get(2),
                    kind: row.get(3),
                    run_id: row.get(4),
                    tenant: row.get(5),
                    tool: row.get(6),
                    call_id: row.get(7),
                    outcome: row.get(8),
                    approval_id: row.get(9),
                    event: row.get(10),
                    principal: row.get(11),
                })
                .collect())
        })
        .await
    }
}

impl std::fmt::Debug for PgAuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgAuditSink").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for AuditWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditWriter")
            .field("written", &self.written())
            .field("dropped", &self.dropped())
            .field("queued", &self.queued())
            .finish()
    }
}

impl AuditSink for PgAuditSink {
    /// Puts the event in the queue and returns; it never waits. When the queue is full:
    /// under [`WhenFull::Drop`] the event is dropped and counted; under [`WhenFull::Block`]
    /// it goes into the overflow ([`AuditConfig::overflow`]) and is written like any other,
    /// and only past that is it dropped and counted (the waiting is done in
    /// [`ready`](AuditSink::ready), before a call, without holding any lock).
    fn record(&self, event: &AuditEvent) {
        let shared = &self.shared;
        if shared.closing.load(Ordering::Acquire) {
            // The writer is stopping or stopped: nothing would write it, and the queue must
            // not grow without bound.
            shared.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let row = row_of(event);
        let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let limit = match shared.config.when_full {
            WhenFull::Drop => shared.config.capacity,
            WhenFull::Block => shared.config.capacity + shared.config.overflow,
        };
        if queue.len() >= limit {
            drop(queue);
            if shared.dropped.fetch_add(1, Ordering::AcqRel) == 0 {
                tracing::warn!(
                    "the audit queue is full: events are dropped and counted until the database keeps up"
                );
            }
            shared.arrived.notify_one();
            return;
        }
        queue.push_back(row);
        shared.enqueued.fetch_add(1, Ordering::AcqRel);
        let full = queue.len() >= shared.config.batch;
        drop(queue);
        if full {
            shared.arrived.notify_one();
        }
    }

    /// Under [`WhenFull::Block`], resolves once the queue is below its capacity (or the
    /// writer is closing), waiting asynchronously: the task waits, the thread does not.
    /// Under [`WhenFull::Drop`], at once.
    fn ready(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let shared = &self.shared;
            if shared.config.when_full == WhenFull::Drop {
                return;
            }
            let mut warned = false;
            loop {
                let room = shared.room.notified();
                tokio::pin!(room);
                room.as_mut().enable();
                if shared.closing.load(Ordering::Acquire)
                    || shared.queued() < shared.config.capacity
                {
                    return;
                }
                if !warned {
                    tracing::warn!("the audit queue is full: calls wait for the database");
                    warned = true;
                }
                shared.arrived.notify_one();
                // The writer wakes the waiters whenever it takes events out; the timeout
                // only guards against a wake-up lost to a race.
                let _ = tokio::time::timeout(Duration::from_millis(100), room).await;
            }
        })
    }
}

impl Shared {
    /// Events in the queue.
    fn queued(&self) -> usize {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl AuditWriter {
    /// Events written to the table so far.
    pub fn written(&self) -> u64 {
        self.shared.written.load(Ordering::Acquire)
    }

    /// Events the database refused even when written alone (a value it cannot store, a
    /// constraint): each is on record as an event of kind `unwritable` with the database's
    /// reason, the event's kind and size, in place of the event itself.
    pub fn unwritable(&self) -> u64 {
        self.shared.unwritable.load(Ordering::Acquire)
    }

    /// Events dropped because the queue was full (under [`WhenFull::Drop`], or under
    /// [`WhenFull::Block`] past the [overflow](AuditConfig::overflow)), or because
    /// they were recorded after [`shutdown`](Self::shutdown) (or after the writer was dropped).
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Acquire)
    }

    /// Events waiting to be written.
    pub fn queued(&self) -> usize {
        let queued = self
            .shared
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        queued + usize::try_from(self.shared.in_flight.load(Ordering::Acquire)).unwrap_or(0)
    }

    /// Waits until every event recorded before this call is written, for `timeout` at most;
    /// `false` if some are still waiting (the database is slow or down).
    pub async fn flush(&self, timeout: Duration) -> bool {
        /// Counts this flush among those waiting, until it returns (or is dropped).
        struct Flushing<'a>(&'a AtomicUsize);
        impl Drop for Flushing<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        self.shared.flushing.fetch_add(1, Ordering::AcqRel);
        let _flushing = Flushing(&self.shared.flushing);
        let deadline = Instant::now() + timeout;
        let target = self.shared.enqueued.load(Ordering::Acquire);
        self.shared.arrived.notify_one();
        while self.shared.settled.load(Ordering::Acquire) < target {
            if Instant::now() >= deadline {
                return false;
            }
            self.shared.arrived.notify_one();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    /// Writes every event left and stops the writer, within `timeout`: an error says how
    /// many could not be written (the database was down). Events recorded after this are
    /// not written.
    pub async fn shutdown(&self, timeout: Duration) -> Result<(), Error> {
        let flushed = self.flush(timeout).await;
        self.shared.closing.store(true, Ordering::Release);
        self.shared.arrived.notify_all();
        self.shared.room.notify_waiters();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if flushed {
            if let Some(thread) = thread {
                let _ = tokio::task::spawn_blocking(move || thread.join()).await;
            }
            Ok(())
        } else {
            Err(Error::Timeout(timeout, "writing the audit events left"))
        }
    }
}

impl Drop for AuditWriter {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::Release);
        self.shared.arrived.notify_all();
        self.shared.room.notify_waiters();
    }
}

/// The writer thread: takes batches from the queue and writes them, until closed.
///
/// A batch the database refuses for what it holds (a data or constraint error) is split in
/// halves, and each half written on its own, down to single events: what can be written is
/// written, in order, and an event the database refuses even alone is written as an event
/// of kind `unwritable` in its place. A batch that fails for any other reason (the
/// connection is down, the database is shutting down) is kept and written again, with
/// backoff, once the database answers.
fn write_loop(plane: ControlPlane, shared: Arc<Shared>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "no runtime for the audit writer");
            return;
        }
    };
    runtime.block_on(async move {
        let mut client: Option<tokio_postgres::Client> = None;
        // Batches, and the parts of refused batches, waiting to be written, in order.
        let mut pending: VecDeque<Vec<Row>> = VecDeque::new();
        let mut backoff = Duration::from_millis(50);
        loop {
            if pending.is_empty() {
                let mut batch = Vec::new();
                let closing = take_batch(&shared, &mut batch);
                if batch.is_empty() {
                    if closing {
                        return;
                    }
                    continue;
                }
                pending.push_back(batch);
            }
            if client.as_ref().is_none_or(tokio_postgres::Client::is_closed) {
                match plane.dedicated().await {
                    Ok((connected, connection)) => {
                        tokio::spawn(connection);
                        client = Some(connected);
                    }
                    Err(error) => {
                        let queued: usize = pending.iter().map(Vec::len).sum();
                        tracing::warn!(%error, queued, "the audit writer cannot reach the database");
                        if shared.closing.load(Ordering::Acquire) {
                            return;
                        }
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(2));
                        continue;
                    }
                }
            }
            let Some(connected) = client.as_ref() else { continue };
            let Some(mut chunk) = pending.pop_front() else { continue };
            // The count of events dropped so far goes with the batch; it stays in the
            // counter until the database answers.
            let dropped = shared.dropped.swap(0, Ordering::AcqRel);
            if dropped > 0 {
                chunk.push(dropped_row(dropped));
            }
            match insert(connected, &shared.replica, &chunk).await {
                Ok(()) => {
                    shared.settle(&chunk);
                    backoff = Duration::from_millis(50);
                    shared.room.notify_waiters();
                }
                Err(error) if refuses_the_data(&error) => {
                    if chunk.len() > 1 {
                        // Bisect: each half on its own, the first first.
                        let second = chunk.split_off(chunk.len() / 2);
                        pending.push_front(second);
                        pending.push_front(chunk);
                        continue;
                    }
                    let Some(row) = chunk.pop() else { continue };
                    let reason = reason_of(&error);
                    match row.origin {
                        Origin::Event => {
                            tracing::error!(kind = row.kind, %reason, "an audit event cannot be written; it is recorded as unwritable");
                            pending.push_front(vec![unwritable_row(&row, &reason)]);
                        }
                        Origin::Unwritable => {
                            // Not even the record of it: the error log is all there is.
                            tracing::error!(%reason, event = %row.event, "an audit event and its unwritable record cannot be written; it is lost");
                            shared.settle(std::slice::from_ref(&row));
                        }
                        Origin::Dropped(count) => {
                            tracing::error!(%reason, count, "the count of dropped audit events cannot be written");
                        }
                    }
                }
                Err(error) => {
                    chunk.retain(|row| match row.origin {
                        Origin::Dropped(count) => {
                            shared.dropped.fetch_add(count, Ordering::AcqRel);
                            false
                        }
                        Origin::Event | Origin::Unwritable => true,
                    });
                    pending.push_front(chunk);
                    let queued: usize = pending.iter().map(Vec::len).sum();
                    let error = Error::Database {
                        context: "writing audit events".to_owned(),
                        source: error,
                    };
                    tracing::warn!(%error, queued, "audit events could not be written; retrying");
                    client = None;
                    if shared.closing.load(Ordering::Acquire) {
                        return;
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
    });
}

impl Shared {
    /// Counts the rows of `rows` as done with, once written (or lost).
    fn settle(&self, rows: &[Row]) {
        let mut events = 0;
        for row in rows {
            match row.origin {
                Origin::Event => {
                    self.written.fetch_add(1, Ordering::AcqRel);
                    events += 1;
                }
                Origin::Unwritable => {
                    self.unwritable.fetch_add(1, Ordering::AcqRel);
                    events += 1;
                }
                Origin::Dropped(_) => {}
            }
        }
        self.in_flight.fetch_sub(events, Ordering::AcqRel);
        self.settled.fetch_add(events, Ordering::AcqRel);
    }
}

/// Whether the database refused `error`'s statement for the values it holds (SQLSTATE
/// classes 22 data exception, 23 integrity constraint violation, 54 program limit
/// exceeded, and an error raised by a trigger, P0001), so that writing the same rows again
/// would fail again. Anything else (no SQLSTATE at all: the connection; class 08, 53, 57,
/// 40...) is taken as passing, and retried.
fn refuses_the_data(error: &tokio_postgres::Error) -> bool {
    error.code().is_some_and(|code| {
        let code = code.code();
        ["22", "23", "54"]
            .iter()
            .any(|class| code.starts_with(class))
            || code == "P0001"
    })
}

/// The database's reason for refusing a row: its SQLSTATE and message, without the detail
/// (which may quote the row), storable, and 300 characters at most.
fn reason_of(error: &tokio_postgres::Error) -> String {
    let text = match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => error.to_string(),
    };
    let text: String = text.chars().take(300).collect();
    crate::text::owned(text)
}

/// Waits for a batch (full, or the flush interval passed) and moves it into `batch`;
/// returns whether the sink is closing.
fn take_batch(shared: &Shared, batch: &mut Vec<Row>) -> bool {
    let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
    let deadline = Instant::now() + shared.config.flush_every;
    loop {
        let closing = shared.closing.load(Ordering::Acquire);
        let now = Instant::now();
        let due = now >= deadline || shared.flushing.load(Ordering::Acquire) > 0;
        if queue.len() >= shared.config.batch || closing || (due && !queue.is_empty()) {
            let take = queue.len().min(shared.config.batch);
            batch.extend(queue.drain(..take));
            shared
                .in_flight
                .fetch_add(batch.len() as u64, Ordering::AcqRel);
            let done = closing && queue.is_empty();
            drop(queue);
            shared.room.notify_waiters();
            return done;
        }
        let wait = if queue.is_empty() {
            shared.config.flush_every
        } else {
            deadline.saturating_duration_since(now)
        };
        queue = shared
            .arrived
            .wait_timeout(queue, wait.max(Duration::from_millis(1)))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// Writes a batch in one statement: one array per column, unnested.
async fn insert(
    client: &impl tokio_postgres::GenericClient,
    replica: &str,
    rows: &[Row],
) -> Result<(), tokio_postgres::Error> {
    let at: Vec<SystemTime> = rows.iter().map(|row| row.at).collect();
    let kind: Vec<&str> = rows.iter().map(|row| row.kind).collect();
    let run_id: Vec<Option<&str>> = rows.iter().map(|row| row.run_id.as_deref()).collect();
    let tenant: Vec<Option<&str>> = rows.iter().map(|row| row.tenant.as_deref()).collect();
    let tool: Vec<Option<&str>> = rows.iter().map(|row| row.tool.as_deref()).collect();
    let call_id: Vec<Option<&str>> = rows.iter().map(|row| row.call_id.as_deref()).collect();
    let outcome: Vec<Option<&str>> = rows.iter().map(|row| row.outcome.as_deref()).collect();
    let approval: Vec<Option<&str>> = rows.iter().map(|row| row.approval_id.as_deref()).collect();
    let event: Vec<&Value> = rows.iter().map(|row| &row.event).collect();
    let replica = crate::text::text(replica);
    let principal: Vec<Option<&str>> = rows.iter().map(|row| row.principal.as_deref()).collect();
    client
        .execute(
            "INSERT INTO audit_events
                 (at, replica, kind, run_id, tenant, tool, call_id, outcome, approval_id, event,
                  principal)
             SELECT at, $2, kind, run_id, tenant, tool, call_id, outcome, approval_id, event,
                    principal
               FROM unnest($1::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[],
                           $7::text[], $8::text[], $9::text[], $10::jsonb[], $11::text[])
                    AS t(at, kind, run_id, tenant, tool, call_id, outcome, approval_id, event,
                         principal)",
            &[
                &at, &replica, &kind, &run_id, &tenant, &tool, &call_id, &outcome, &approval,
                &event, &principal,
            ],
        )
        .await?;
    Ok(())
}

impl Row {
    /// A row of `kind`, now, with `event` and no other column.
    fn bare(kind: &'static str, event: Value, origin: Origin) -> Row {
        Row {
            at: SystemTime::now(),
            kind,
            run_id: None,
            tenant: None,
            tool: None,
            call_id: None,
            outcome: None,
            approval_id: None,
            principal: None,
            event,
            origin,
        }
    }
}

fn dropped_row(count: u64) -> Row {
    Row::bare(
        "dropped",
        serde_json::json!({ "event": "dropped", "count": count }),
        Origin::Dropped(count),
    )
}

/// What stands on record for an event the database refused: when it happened, its kind,
/// its size, and the database's reason; none of its untrusted text, which may be what was
/// refused.
fn unwritable_row(row: &Row, reason: &str) -> Row {
    let mut unwritable = Row::bare(
        "unwritable",
        serde_json::json!({
            "event": "unwritable",
            "kind": row.kind,
            "reason": reason,
            "event_bytes": row.event.to_string().len(),
        }),
        Origin::Unwritable,
    );
    unwritable.at = row.at;
    unwritable
}

/// Writes `events`, of this replica, with `client` (a transaction's, so that they are kept
/// exactly when what they record is).
pub(crate) async fn write_events(
    client: &impl tokio_postgres::GenericClient,
    replica: &str,
    events: &[AuditEvent],
) -> Result<(), tokio_postgres::Error> {
    if events.is_empty() {
        return Ok(());
    }
    let rows: Vec<Row> = events.iter().map(row_of).collect();
    insert(client, replica, &rows).await
}

/// The columns of an event, and the event itself as the core serializes it.
fn row_of(event: &AuditEvent) -> Row {
    let body = serde_json::to_value(event).unwrap_or(Value::Null);
    let mut row = Row::bare("other", Value::Null, Origin::Event);
    match event {
        AuditEvent::Projection(p) => {
            row.kind = "projection";
            row.run_id = Some(p.run_id.clone());
            row.tenant = Some(p.tenant.clone());
            row.principal = p.principal.clone();
        }
        AuditEvent::Call(c) => {
            row.kind = "call";
            row.run_id = Some(c.run_id.clone());
            row.tenant = Some(c.tenant.clone());
            row.principal = c.principal.clone();
            row.tool = Some(c.tool.clone());
            row.call_id = Some(c.call_id.clone());
            row.outcome = Some(
                c.outcome
                    .map_or("ok", registry_core::ErrorKind::as_str)
                    .to_owned(),
            );
            row.approval_id = c.approval_id.clone();
        }
        AuditEvent::Change(c) => {
            row.kind = "change";
            row.tool = Some(c.change.name.clone());
            row.outcome = body
                .get("change")
                .and_then(|change| change.get("kind"))
                .map(|kind| match kind {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                });
        }
        AuditEvent::Approval(a) => {
            row.kind = "approval";
            row.run_id = Some(a.run_id.clone());
            row.tenant = Some(a.tenant.clone());
            row.principal = a.principal.clone();
            row.tool = Some(a.tool.clone());
            row.call_id = Some(a.call_id.clone());
            row.outcome = Some(a.kind.as_str().to_owned());
            row.approval_id = Some(a.id.clone());
        }
        AuditEvent::Task(t) => {
            row.kind = "task";
            row.run_id = Some(t.run_id.clone());
            row.tenant = Some(t.tenant.clone());
            row.principal = t.principal.clone();
            row.tool = Some(t.tool.clone());
            row.call_id = Some(t.call_id.clone());
            row.outcome = Some(t.kind.as_str().to_owned());
        }
        AuditEvent::Readiness(r) => {
            row.kind = "readiness";
            row.tool = Some(r.tool.clone());
            row.outcome = Some(
                if r.not_ready.is_none() {
                    "ready"
                } else {
                    "not_ready"
                }
                .to_owned(),
            );
        }
        // An event a newer core adds: kept whole, under its own tag.
        _ => {}
    }
    row.event = body;
    // Every text column and the whole event, keys included, made storable: fields a newer
    // core adds are covered without being named here.
    for column in [
        &mut row.run_id,
        &mut row.tenant,
        &mut row.tool,
        &mut row.call_id,
        &mut row.outcome,
        &mut row.approval_id,
        &mut row.principal,
    ] {
        *column = column.take().map(crate::text::owned);
    }
    row.event = crate::text::json(row.event);
    row
}
