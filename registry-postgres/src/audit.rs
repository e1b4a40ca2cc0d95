//! Audit events in `audit_events`, written in batches by a writer of their own.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use registry_core::{AuditEvent, AuditSink};
use serde_json::Value;

use crate::error::Error;
use crate::plane::ControlPlane;
use crate::records::{AuditFilter, AuditRecord};

/// What a [`PgAuditSink`] does when its queue is full because the database is slow or down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WhenFull {
    /// The call that records an event waits until there is room: no event is lost, and
    /// calls slow down with the database (the default: audit must not be lost silently).
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
pub struct AuditConfig {
    capacity: usize,
    batch: usize,
    flush_every: Duration,
    when_full: WhenFull,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            capacity: 10_000,
            batch: 500,
            flush_every: Duration::from_millis(200),
            when_full: WhenFull::Block,
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
    /// Signalled when the writer took events out, or wrote them.
    room: Condvar,
    config: AuditConfig,
    closing: AtomicBool,
    dropped: AtomicU64,
    written: AtomicU64,
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
            room: Condvar::new(),
            config,
            closing: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            written: AtomicU64::new(0),
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
        if queue.len() >= shared.config.capacity && !shared.closing.load(Ordering::Acquire) {
            match shared.config.when_full {
                WhenFull::Drop => {
                    shared.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                WhenFull::Block => {
                    let mut warned = false;
                    while queue.len() >= shared.config.capacity
                        && !shared.closing.load(Ordering::Acquire)
                    {
                        if !warned {
                            tracing::warn!("the audit queue is full: calls wait for the database");
                            warned = true;
                        }
                        queue = shared
                            .room
                            .wait_timeout(queue, Duration::from_millis(100))
                            .unwrap_or_else(PoisonError::into_inner)
                            .0;
                    }
                }
            }
        }
        queue.push_back(row);
        shared.enqueued.fetch_add(1, Ordering::AcqRel);
        if queue.len() >= shared.config.batch {
            shared.arrived.notify_one();
        }
    }
}

impl AuditWriter {
    /// Events written to the table so far.
    pub fn written(&self) -> u64 {
        self.shared.written.load(Ordering::Acquire)
    }

    /// Events dropped because the queue was full (only under [`WhenFull::Drop`]), or because
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
        while self.shared.written.load(Ordering::Acquire) < target {
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
        self.shared.room.notify_all();
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
        self.shared.room.notify_all();
    }
}

/// The writer thread: takes batches from the queue and writes them, until closed; a batch
/// that fails is kept and written again once the database answers.
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
        let mut batch: Vec<Row> = Vec::new();
        let mut backoff = Duration::from_millis(50);
        loop {
            if batch.is_empty() {
                let closing = take_batch(&shared, &mut batch);
                if batch.is_empty() {
                    if closing {
                        return;
                    }
                    continue;
                }
            }
            if client.as_ref().is_none_or(tokio_postgres::Client::is_closed) {
                match plane.dedicated().await {
                    Ok((connected, connection)) => {
                        tokio::spawn(connection);
                        client = Some(connected);
                    }
                    Err(error) => {
                        tracing::warn!(%error, queued = batch.len(), "the audit writer cannot reach the database");
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
            let dropped = shared.dropped.swap(0, Ordering::AcqRel);
            if dropped > 0 {
                batch.push(dropped_row(dropped));
            }
            match insert(connected, &shared.replica, &batch).await {
                Ok(()) => {
                    let count = batch.iter().filter(|row| row.kind != "dropped").count();
                    shared.written.fetch_add(count as u64, Ordering::AcqRel);
                    shared.in_flight.store(0, Ordering::Release);
                    batch.clear();
                    backoff = Duration::from_millis(50);
                    shared.room.notify_all();
                }
                Err(error) => {
                    if let Some(row) = batch.last()
                        && row.kind == "dropped"
                    {
                        batch.pop();
                        shared.dropped.fetch_add(dropped, Ordering::AcqRel);
                    }
                    tracing::warn!(%error, queued = batch.len(), "audit events could not be written; retrying");
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
                .store(batch.len() as u64, Ordering::Release);
            shared.room.notify_all();
            return closing && queue.is_empty();
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
async fn insert(client: &tokio_postgres::Client, replica: &str, rows: &[Row]) -> Result<(), Error> {
    let at: Vec<SystemTime> = rows.iter().map(|row| row.at).collect();
    let kind: Vec<&str> = rows.iter().map(|row| row.kind).collect();
    let run_id: Vec<Option<&str>> = rows.iter().map(|row| row.run_id.as_deref()).collect();
    let tenant: Vec<Option<&str>> = rows.iter().map(|row| row.tenant.as_deref()).collect();
    let tool: Vec<Option<&str>> = rows.iter().map(|row| row.tool.as_deref()).collect();
    let call_id: Vec<Option<&str>> = rows.iter().map(|row| row.call_id.as_deref()).collect();
    let outcome: Vec<Option<&str>> = rows.iter().map(|row| row.outcome.as_deref()).collect();
    let approval: Vec<Option<&str>> = rows.iter().map(|row| row.approval_id.as_deref()).collect();
    let event: Vec<&Value> = rows.iter().map(|row| &row.event).collect();
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
        .await
        .map_err(Error::db("writing audit events"))?;
    Ok(())
}

impl Row {
    /// A row of `kind`, now, with `event` and no other column.
    fn bare(kind: &'static str, event: Value) -> Row {
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
        }
    }
}

fn dropped_row(count: u64) -> Row {
    Row::bare(
        "dropped",
        serde_json::json!({ "event": "dropped", "count": count }),
    )
}

/// The columns of an event, and the event itself as the core serializes it.
fn row_of(event: &AuditEvent) -> Row {
    let body = serde_json::to_value(event).unwrap_or(Value::Null);
    let mut row = Row::bare("other", Value::Null);
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
    row
}
