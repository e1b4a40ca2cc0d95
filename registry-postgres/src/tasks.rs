//! Tasks in `registry_tasks`: started on one replica, read, cancelled and collected on any,
//! leased by the replica that runs them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime};

use registry_core::audit::{AuditEvent, TaskEvent};
use registry_core::call::Cancellation;
use registry_core::definition::BoxFuture;
use registry_core::gate::StoreError;
use registry_core::task::{
    Answering, Finish, Insertion, KeptResult, Task, TaskEnd, TaskLimits, TaskQuestion, TaskStatus,
    TaskStore, TaskUpdate, answer_questions, questions_status, take_answer,
};
use registry_core::{ErrorKind, Observation};
use serde_json::Value;
use tokio_postgres::Row;

use crate::error::Error;
use crate::plane::ControlPlane;
use crate::text;

/// The key of the advisory lock every insertion and every end holds ("tasks" in ASCII): the
/// bounds are counted and the task kept (or ended, and older ended tasks forgotten) with no
/// other insertion or end in between, on any replica.
const INSERT_LOCK: i64 = 0x0074_6173_6b73;

/// The columns a task is read from, in this order (see [`task_of`]).
const COLUMNS: &str = "record, status, message, progress, updated_at, expires_at, questions";

/// The statuses of a running task, as SQL.
const RUNNING: &str = "status IN ('working', 'input_required')";

/// The statuses of an ended task, as SQL.
const ENDED: &str = "status IN ('completed', 'failed', 'cancelled')";

/// The [`TaskStore`] of the control plane: a task started on one replica is read, cancelled
/// and collected on any other, and the [`TaskLimits`] hold for all of them together.
///
/// - **Bounds across replicas.** [`insert`](TaskStore::insert) counts the owner's running
///   tasks and all the running tasks, then keeps the new one, in one transaction under an
///   advisory lock: two replicas starting tasks at the same moment cannot both take the last
///   place. Ended tasks do not count: [`finish`](TaskStore::finish) ends a task under the
///   same lock and forgets the owner's oldest ended tasks beyond
///   [`TaskLimits::ended_per_principal`], then the oldest of anyone's beyond
///   [`TaskLimits::ended`]. (Tasks failed because their lease ran out are ended outside the
///   lock; the next insertion or end forgets what they put over the bounds.)
/// - **Cancelling across replicas.** A cancel on replica B ends the task in the table; the
///   replica that runs it, A, renews its tasks' leases every
///   [heartbeat](crate::ControlPlaneBuilder::heartbeat) (250 ms by default), and a renewal
///   that finds a task ended trips its tool's cancellation
///   ([`ToolContext::cancelled`](registry_core::ToolContext::cancelled)). A cancel reaches
///   the tool within one heartbeat and a round trip, with no notification to lose.
/// - **Leases.** A running task holds a lease of
///   [`task_lease`](crate::ControlPlaneBuilder::task_lease) (10 s by default), renewed on a
///   connection of the store's own, not from the pool, so that a pool busy with reads, polls
///   and approvals does not let every lease run out. A replica that dies stops renewing it; once it has run out, any replica marks the task `failed`, with
///   the reason (which replica, since when), whenever it reads or counts tasks and every
///   heartbeat. A task is never left `working` forever. A replica that cannot renew its
///   leases for longer than the lease (it lost the database) cancels its own tasks, since
///   the others will have failed them.
/// - **TTL.** An ended task and its result are forgotten once their `expires_at` has passed:
///   every query skips them, and each insertion deletes them.
/// - **Ownership.** The store keeps the task's tenant, principal and agent;
///   [`Run::task`](registry_core::Run::task) shows a task only to its owner, so another
///   principal reads an unknown id.
/// - **Every character kept.** The record, message, progress and result are stored as bytes
///   (`bytea`), not `text`: a NUL, a newline or a bidi control in a tool name, a message or a
///   result reads back exactly as written.
///
/// Every method fails closed: a store that does not answer within the plane's
/// [timeout](crate::ControlPlaneBuilder::timeout) refuses the task (or the read).
///
/// ```no_run
/// # async fn build(plane: registry_postgres::ControlPlane) -> Result<(), registry_core::RegistryError> {
/// let registry = registry_core::Registry::builder()
///     .declared()
///     .task_store(plane.task_store())
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PgTaskStore {
    shared: Arc<Shared>,
}

struct Shared {
    plane: ControlPlane,
    /// The tasks running in this process, and the cancellation their tool sees.
    running: Mutex<HashMap<String, Cancellation>>,
}

impl std::fmt::Debug for PgTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTaskStore")
            .field("replica", &self.shared.plane.replica())
            .field("running_here", &self.shared.lock().len())
            .finish()
    }
}

impl ControlPlane {
    /// The task store on this plane, shared by every replica (see [`PgTaskStore`]). It
    /// renews the leases of the tasks running here, and marks failed the tasks whose lease
    /// ran out, on a Tokio task and a database connection of its own (besides the pool),
    /// which end when the last clone is dropped.
    pub fn task_store(&self) -> PgTaskStore {
        let shared = Arc::new(Shared {
            plane: self.clone(),
            running: Mutex::default(),
        });
        let every = self
            .settings()
            .heartbeat
            .min(self.settings().task_lease / 3);
        self.inner
            .handle
            .spawn(keep_leases(Arc::downgrade(&shared), every));
        PgTaskStore { shared }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Cancellation>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The connection of the lease keeper, of its own (not from the pool), and the task that
/// drives it: renewals never wait for the pool, however busy the pool is with reads, polls
/// and approvals, so that load on the pool cannot let every lease run out.
struct LeaseConnection {
    client: tokio_postgres::Client,
    driver: tokio::task::JoinHandle<()>,
}

impl Drop for LeaseConnection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl LeaseConnection {
    /// The open connection in `slot`, connecting anew if it has none or it closed.
    async fn of<'a>(
        slot: &'a mut Option<LeaseConnection>,
        plane: &ControlPlane,
    ) -> Result<&'a mut tokio_postgres::Client, Error> {
        if slot
            .as_ref()
            .is_some_and(|connection| connection.client.is_closed())
        {
            *slot = None;
        }
        if slot.is_none() {
            let (client, connection) = plane.dedicated().await?;
            let driver = tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::warn!(%error, "the task lease keeper's connection failed");
                }
            });
            *slot = Some(LeaseConnection { client, driver });
        }
        match slot {
            Some(connection) => Ok(&mut connection.client),
            None => Err(Error::Pool("no connection for the task leases".to_owned())),
        }
    }
}

/// Every `every`: renews the leases of the tasks running here (tripping the cancellation of
/// those that ended elsewhere), and fails the tasks whose lease ran out, both on a connection
/// of its own ([`LeaseConnection`]). Ends once the store is dropped.
async fn keep_leases(shared: Weak<Shared>, every: Duration) {
    let mut last_renewed = Instant::now();
    let mut ticks = tokio::time::interval(every.max(Duration::from_millis(10)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut connection = None;
    loop {
        ticks.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let lease = shared.plane.settings().task_lease;
        match shared
            .plane
            .timed("renewing task leases", renew(&shared, &mut connection))
            .await
        {
            Ok(()) => last_renewed = Instant::now(),
            Err(error) => {
                // A connection that failed, or whose query was cut short by the timeout, is
                // not used again.
                connection = None;
                tracing::warn!(%error, "the task leases could not be renewed");
                if last_renewed.elapsed() > lease {
                    // The other replicas have failed these tasks by now: stop their tools.
                    let running: Vec<_> = shared.lock().drain().collect();
                    for (id, cancellation) in running {
                        tracing::warn!(
                            task = %id,
                            "the task's lease ran out while the database was unreachable; its tool is cancelled"
                        );
                        cancellation.cancel();
                    }
                }
            }
        }
        let reaped = shared
            .plane
            .timed("failing tasks whose lease ran out", async {
                let client = LeaseConnection::of(&mut connection, &shared.plane).await?;
                reap_on(client, &shared.plane, None).await
            })
            .await;
        if let Err(error) = reaped {
            connection = None;
            tracing::warn!(%error, "the tasks whose lease ran out could not be failed");
        }
    }
}

/// Renews the leases of the tasks running here; trips the cancellation of each that is no
/// longer running in the table (cancelled on another replica, or failed by one).
async fn renew(shared: &Shared, connection: &mut Option<LeaseConnection>) -> Result<(), Error> {
    let ids: Vec<String> = shared.lock().keys().cloned().collect();
    if ids.is_empty() {
        return Ok(());
    }
    let lease = millis(shared.plane.settings().task_lease);
    let client = LeaseConnection::of(connection, &shared.plane).await?;
    let rows = client
        .query(
            &format!(
                "UPDATE registry_tasks
                    SET lease_until = now() + $2::bigint * interval '1 millisecond'
                  WHERE id = ANY($1) AND {RUNNING} RETURNING id"
            ),
            &[&ids, &lease],
        )
        .await
        .map_err(Error::db("renewing task leases"))?;
    let still: std::collections::HashSet<String> = rows.iter().map(|row| row.get(0)).collect();
    let ended: Vec<Cancellation> = {
        let mut running = shared.lock();
        ids.iter()
            .filter(|id| !still.contains(*id))
            .filter_map(|id| running.remove(id))
            .collect()
    };
    for cancellation in ended {
        cancellation.cancel();
    }
    Ok(())
}

/// Marks failed, with the reason, the running tasks whose lease ran out (only task `id`, if
/// given), and audits each ([`TaskEventKind::LeaseExpired`](registry_core::audit::TaskEventKind::LeaseExpired))
/// in the same transaction: the one replica that fails a task writes its event, once.
async fn reap(plane: &ControlPlane, id: Option<&str>) -> Result<u64, Error> {
    let mut client = plane.client().await?;
    reap_on(&mut client, plane, id).await
}

/// [`reap`] on `client`.
async fn reap_on(
    client: &mut tokio_postgres::Client,
    plane: &ControlPlane,
    id: Option<&str>,
) -> Result<u64, Error> {
    let transaction = client
        .transaction()
        .await
        .map_err(Error::db("starting to fail tasks whose lease ran out"))?;
    let failed = transaction
        .query(
            &format!(
                "UPDATE registry_tasks
                    SET status = 'failed',
                        message = convert_to(format(
                            'the replica %s that ran this task stopped renewing its lease at %s (it exited, or lost the database), so the task may not have finished; start it again if that is safe',
                            replica, to_char(lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')), 'UTF8'),
                        updated_at = now(),
                        expires_at = now() + ttl_ms * interval '1 millisecond'
                  WHERE {RUNNING} AND lease_until < now() AND ($1::text IS NULL OR id = $1)
              RETURNING {COLUMNS}"
            ),
            &[&id],
        )
        .await
        .map_err(Error::db("failing tasks whose lease ran out"))?;
    if failed.is_empty() {
        return Ok(0);
    }
    let mut events = Vec::with_capacity(failed.len());
    for row in &failed {
        let task = task_of(row)?;
        let reason = task.message().unwrap_or("its lease ran out").to_owned();
        tracing::warn!(task = %task.id(), tool = %crate::text::text(task.tool_name()), %reason, "a task whose lease ran out was marked failed");
        events.push(AuditEvent::Task(TaskEvent::lease_expired(&task, reason)));
    }
    crate::audit::write_events(&transaction, plane.replica(), &events)
        .await
        .map_err(Error::db("auditing tasks whose lease ran out"))?;
    transaction
        .commit()
        .await
        .map_err(Error::db("failing tasks whose lease ran out"))?;
    Ok(u64::try_from(failed.len()).unwrap_or(u64::MAX))
}

/// Whether `id` can be a kept task's id: ids are made by the registry and hold no NUL, which
/// PostgreSQL's `text` refuses; an id a client sent with one names no task.
fn storable(id: &str) -> bool {
    !id.contains('\0')
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

fn corrupt(detail: impl std::fmt::Display) -> Error {
    Error::Corrupt {
        table: "registry_tasks",
        detail: detail.to_string(),
    }
}

/// The exact bytes of `task`'s owner: the per-principal bound counts by them.
fn owner(task: &Task) -> Result<Vec<u8>, Error> {
    let key = match task.principal() {
        Some(principal) => serde_json::json!(["principal", task.tenant(), principal]),
        None => serde_json::json!(["agent", task.tenant(), task.agent()]),
    };
    serde_json::to_vec(&key).map_err(corrupt)
}

fn status_of(word: &str) -> Result<TaskStatus, Error> {
    serde_json::from_value(Value::String(word.to_owned()))
        .map_err(|_| corrupt(format!("unknown status {word:?}")))
}

/// A task's questions from the `questions` column (NULL: none).
fn questions_of(column: Option<Vec<u8>>) -> Result<Vec<TaskQuestion>, Error> {
    match column {
        Some(bytes) => serde_json::from_slice(&bytes).map_err(corrupt),
        None => Ok(Vec::new()),
    }
}

/// The `questions` column of `questions` (NULL for none).
fn questions_column(questions: &[TaskQuestion]) -> Result<Option<Vec<u8>>, Error> {
    if questions.is_empty() {
        return Ok(None);
    }
    serde_json::to_vec(questions).map(Some).map_err(corrupt)
}

/// Changes the questions of running task `id` with `change`, in one transaction with the row
/// locked, and sets its status and message from them: `None` if the task is not running
/// (its status then, if it is kept at all).
async fn change_questions<T>(
    plane: &ControlPlane,
    id: &str,
    at: SystemTime,
    change: impl FnOnce(&mut Vec<TaskQuestion>) -> Result<(T, bool), Error>,
) -> Result<Result<T, Option<TaskStatus>>, Error> {
    let mut client = plane.client().await?;
    let transaction = client
        .transaction()
        .await
        .map_err(Error::db("starting to change a task's questions"))?;
    let row = transaction
        .query_opt(
            "SELECT status, questions FROM registry_tasks
              WHERE id = $1 AND (expires_at IS NULL OR expires_at > now())
                FOR UPDATE",
            &[&id],
        )
        .await
        .map_err(Error::db("reading a task's questions"))?;
    let Some(row) = row else {
        return Ok(Err(None));
    };
    let status = status_of(row.get(0))?;
    if status.is_terminal() {
        return Ok(Err(Some(status)));
    }
    let mut questions = questions_of(row.get(1))?;
    let (answer, changed) = change(&mut questions)?;
    if changed {
        let (status, message) = questions_status(&questions);
        transaction
            .execute(
                &format!(
                    "UPDATE registry_tasks
                        SET questions = $2, status = $3, message = $4, updated_at = $5
                      WHERE id = $1 AND {RUNNING}"
                ),
                &[
                    &id,
                    &questions_column(&questions)?,
                    &status.as_str(),
                    &message.map(String::into_bytes),
                    &at,
                ],
            )
            .await
            .map_err(Error::db("changing a task's questions"))?;
    }
    transaction
        .commit()
        .await
        .map_err(Error::db("changing a task's questions"))?;
    Ok(Ok(answer))
}

/// A task from the [`COLUMNS`] of `row`: its record, with what changes as it runs.
fn task_of(row: &Row) -> Result<Task, Error> {
    let record: Vec<u8> = row.get(0);
    let mut record: Value = serde_json::from_slice(&record).map_err(corrupt)?;
    let Value::Object(fields) = &mut record else {
        return Err(corrupt("a task's record is not an object"));
    };
    let status: String = row.get(1);
    fields.insert("status".into(), Value::String(status));
    match row.get::<_, Option<Vec<u8>>>(2) {
        Some(message) => {
            let message = String::from_utf8(message).map_err(corrupt)?;
            fields.insert("message".into(), Value::String(message));
        }
        None => {
            fields.remove("message");
        }
    }
    match row.get::<_, Option<Vec<u8>>>(3) {
        Some(progress) => {
            let progress: Value = serde_json::from_slice(&progress).map_err(corrupt)?;
            fields.insert("progress".into(), progress);
        }
        None => {
            fields.remove("progress");
        }
    }
    let updated_at: SystemTime = row.get(4);
    fields.insert(
        "updated_at".into(),
        serde_json::to_value(updated_at).map_err(corrupt)?,
    );
    match row.get::<_, Option<SystemTime>>(5) {
        Some(at) => {
            fields.insert(
                "expires_at".into(),
                serde_json::to_value(at).map_err(corrupt)?,
            );
        }
        None => {
            fields.remove("expires_at");
        }
    }
    let questions = questions_of(row.get(6))?;
    if questions.is_empty() {
        fields.remove("questions");
    } else {
        fields.insert(
            "questions".into(),
            serde_json::to_value(questions).map_err(corrupt)?,
        );
    }
    serde_json::from_value(record).map_err(corrupt)
}

impl PgTaskStore {
    /// Runs `work` on the plane's runtime, under its timeout: a task's thread calls the
    /// store from outside any Tokio runtime.
    async fn on_plane<T, F>(
        &self,
        what: &'static str,
        work: impl FnOnce(ControlPlane) -> F,
    ) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T, Error>> + Send + 'static,
    {
        let plane = self.shared.plane.clone();
        let future = work(plane.clone());
        let handle = plane.inner.handle.clone();
        let joined = handle
            .spawn(async move { plane.timed(what, future).await })
            .await;
        match joined {
            Ok(result) => result.map_err(StoreError::from),
            Err(error) => Err(StoreError::new(format!("{what}: {error}"))),
        }
    }
}

async fn insert_task(
    plane: ControlPlane,
    task: Task,
    limits: TaskLimits,
) -> Result<Insertion, Error> {
    let record = serde_json::to_vec(&task).map_err(corrupt)?;
    let owner = owner(&task)?;
    let per_principal = count_of(limits.per_principal());
    let total = count_of(limits.total());
    let lease = millis(plane.settings().task_lease);
    let ttl = millis(task.ttl());
    let progress = task
        .progress()
        .map(serde_json::to_vec)
        .transpose()
        .map_err(corrupt)?;
    reap(&plane, None).await?;
    let mut client = plane.client().await?;
    let transaction = client
        .transaction()
        .await
        .map_err(Error::db("starting to keep a task"))?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&INSERT_LOCK])
        .await
        .map_err(Error::db("taking the task lock"))?;
    transaction
        .execute("DELETE FROM registry_tasks WHERE expires_at <= now()", &[])
        .await
        .map_err(Error::db("forgetting expired tasks"))?;
    // Ended tasks never count: only live ones, whose lease has not run out.
    let row = transaction
        .query_one(
            &format!(
                "SELECT count(*) FILTER (WHERE owner = $1),
                        count(*)
                   FROM registry_tasks
                  WHERE {RUNNING} AND lease_until >= now()"
            ),
            &[&owner],
        )
        .await
        .map_err(Error::db("counting tasks"))?;
    let mine: i64 = row.get(0);
    let running: i64 = row.get(1);
    let to_usize = |n: i64| usize::try_from(n).unwrap_or(usize::MAX);
    if mine >= per_principal {
        return Ok(Insertion::PrincipalFull {
            running: to_usize(mine),
        });
    }
    if running >= total {
        return Ok(Insertion::Full {
            running: to_usize(running),
        });
    }
    // What tasks failed by a lease that ran out put over the bounds on ended tasks.
    forget_ended(&transaction, &owner, &limits, None).await?;
    transaction
        .execute(
            "INSERT INTO registry_tasks
                 (id, owner, tenant, principal, tool, status, record, replica, lease_until,
                  ttl_ms, updated_at, message, progress)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
                     now() + $9::bigint * interval '1 millisecond', $10, $11, $12, $13)",
            &[
                &task.id(),
                &owner,
                &text::text(task.tenant()),
                &text::opt(task.principal()),
                &text::text(task.tool_name()),
                &task.status().as_str(),
                &record,
                &plane.replica(),
                &lease,
                &ttl,
                &task.updated_at(),
                &task.message().map(str::as_bytes),
                &progress,
            ],
        )
        .await
        .map_err(Error::db("keeping a task"))?;
    transaction
        .commit()
        .await
        .map_err(Error::db("keeping a task"))?;
    Ok(Insertion::Stored)
}

fn count_of(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Forgets, under the [`INSERT_LOCK`] that `transaction` holds, the oldest ended tasks of
/// `owner` beyond [`TaskLimits::ended_per_principal`], then the oldest of anyone's beyond
/// [`TaskLimits::ended`] (oldest by when they ended); never task `keep`, the one that just
/// ended.
async fn forget_ended(
    transaction: &tokio_postgres::Transaction<'_>,
    owner: &[u8],
    limits: &TaskLimits,
    keep: Option<&str>,
) -> Result<(), Error> {
    transaction
        .execute(
            &format!(
                "DELETE FROM registry_tasks WHERE id IN (
                     SELECT id FROM registry_tasks
                      WHERE owner = $1 AND {ENDED}
                      ORDER BY id = $3 DESC, updated_at DESC, id DESC
                     OFFSET $2)"
            ),
            &[&owner, &count_of(limits.ended_per_principal()), &keep],
        )
        .await
        .map_err(Error::db("forgetting the owner's oldest ended tasks"))?;
    transaction
        .execute(
            &format!(
                "DELETE FROM registry_tasks WHERE id IN (
                     SELECT id FROM registry_tasks
                      WHERE {ENDED}
                      ORDER BY id = $2 DESC, updated_at DESC, id DESC
                     OFFSET $1)"
            ),
            &[&count_of(limits.ended()), &keep],
        )
        .await
        .map_err(Error::db("forgetting the oldest ended tasks"))?;
    Ok(())
}

async fn get_task(plane: ControlPlane, id: String) -> Result<Option<Task>, Error> {
    if !storable(&id) {
        return Ok(None);
    }
    reap(&plane, Some(&id)).await?;
    let client = plane.client().await?;
    let row = client
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM registry_tasks
                  WHERE id = $1 AND (expires_at IS NULL OR expires_at > now())"
            ),
            &[&id],
        )
        .await
        .map_err(Error::db("reading a task"))?;
    row.as_ref().map(task_of).transpose()
}

async fn update_task(
    plane: ControlPlane,
    id: String,
    update: TaskUpdate,
    at: SystemTime,
) -> Result<bool, Error> {
    if !storable(&id) {
        return Ok(false);
    }
    let client = plane.client().await?;
    let changed = match update {
        TaskUpdate::Progress(progress) => {
            let progress = serde_json::to_vec(&progress).map_err(corrupt)?;
            client
                .execute(
                    &format!(
                        "UPDATE registry_tasks SET progress = $2, updated_at = $3
                          WHERE id = $1 AND {RUNNING}"
                    ),
                    &[&id, &progress, &at],
                )
                .await
        }
        TaskUpdate::Status { status, message } if !status.is_terminal() => {
            let message = message.map(String::into_bytes);
            client
                .execute(
                    &format!(
                        "UPDATE registry_tasks SET status = $2, message = $3, updated_at = $4
                          WHERE id = $1 AND {RUNNING}"
                    ),
                    &[&id, &status.as_str(), &message, &at],
                )
                .await
        }
        TaskUpdate::Status { status, .. } => {
            return Err(corrupt(format!(
                "a task ends through TaskStore::finish, not as an update to {status}"
            )));
        }
        TaskUpdate::Ask(question) => {
            drop(client);
            let changed = change_questions(&plane, &id, at, |questions| {
                questions.push(question);
                Ok(((), true))
            })
            .await?;
            return Ok(changed.is_ok());
        }
        TaskUpdate::Withdraw { key } => {
            drop(client);
            let changed = change_questions(&plane, &id, at, |questions| {
                let before = questions.len();
                questions.retain(|question| question.key() != key);
                Ok(((), questions.len() != before))
            })
            .await?;
            return Ok(changed.is_ok());
        }
        other => {
            return Err(corrupt(format!(
                "an update this store does not know: {other:?}"
            )));
        }
    }
    .map_err(Error::db("updating a task"))?;
    Ok(changed > 0)
}

async fn finish_task(plane: ControlPlane, id: String, end: TaskEnd) -> Result<Finish, Error> {
    if !end.status.is_terminal() {
        return Err(corrupt(format!("a task cannot end as {}", end.status)));
    }
    if !storable(&id) {
        return Ok(Finish::Unknown);
    }
    let result = serde_json::to_vec(&KeptResult::from(&end.result)).map_err(corrupt)?;
    let message = end.message.map(String::into_bytes);
    let mut client = plane.client().await?;
    let transaction = client
        .transaction()
        .await
        .map_err(Error::db("starting to end a task"))?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&INSERT_LOCK])
        .await
        .map_err(Error::db("taking the task lock"))?;
    let won = transaction
        .query_opt(
            &format!(
                "UPDATE registry_tasks
                    SET status = $2, message = $3, result = $4, updated_at = $5, expires_at = $6
                  WHERE id = $1 AND {RUNNING}
              RETURNING {COLUMNS}, owner"
            ),
            &[
                &id,
                &end.status.as_str(),
                &message,
                &result,
                &end.at,
                &end.expires_at,
            ],
        )
        .await
        .map_err(Error::db("ending a task"))?;
    if let Some(row) = won {
        let task = task_of(&row)?;
        let owner: Vec<u8> = row.get(7);
        forget_ended(&transaction, &owner, &end.limits, Some(&id)).await?;
        transaction
            .commit()
            .await
            .map_err(Error::db("ending a task"))?;
        return Ok(Finish::Finished(Box::new(task)));
    }
    let row = transaction
        .query_opt(
            "SELECT status FROM registry_tasks
              WHERE id = $1 AND (expires_at IS NULL OR expires_at > now())",
            &[&id],
        )
        .await
        .map_err(Error::db("reading a task"))?;
    match row {
        None => Ok(Finish::Unknown),
        Some(row) => Ok(Finish::AlreadyFinished(status_of(row.get(0))?)),
    }
}

async fn result_of(plane: ControlPlane, id: String) -> Result<Option<Observation>, Error> {
    if !storable(&id) {
        return Ok(None);
    }
    reap(&plane, Some(&id)).await?;
    let client = plane.client().await?;
    let row = client
        .query_opt(
            &format!(
                "SELECT {COLUMNS}, result FROM registry_tasks
                  WHERE id = $1 AND expires_at > now()"
            ),
            &[&id],
        )
        .await
        .map_err(Error::db("reading a task's result"))?;
    let Some(row) = row else {
        return Ok(None);
    };
    let kept = match row.get::<_, Option<Vec<u8>>>(7) {
        Some(result) => serde_json::from_slice(&result).map_err(corrupt)?,
        // Failed by a replica whose lease ran out: the result says why.
        None => {
            let task = task_of(&row)?;
            KeptResult::error(
                task.call_id(),
                task.tool_name(),
                ErrorKind::Unavailable,
                task.message().unwrap_or("the task ended without a result"),
            )
        }
    };
    kept.into_observation().map(Some).map_err(corrupt)
}

impl TaskStore for PgTaskStore {
    fn insert<'a>(
        &'a self,
        task: &'a Task,
        limits: &'a TaskLimits,
    ) -> BoxFuture<'a, Result<Insertion, StoreError>> {
        let (task, limits) = (task.clone(), *limits);
        Box::pin(self.on_plane("keeping a task", move |plane| {
            insert_task(plane, task, limits)
        }))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Task>, StoreError>> {
        let id = id.to_owned();
        Box::pin(self.on_plane("reading a task", move |plane| get_task(plane, id)))
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        update: TaskUpdate,
        at: SystemTime,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let id = id.to_owned();
        Box::pin(self.on_plane("updating a task", move |plane| {
            update_task(plane, id, update, at)
        }))
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        end: TaskEnd,
    ) -> BoxFuture<'a, Result<Finish, StoreError>> {
        let id = id.to_owned();
        Box::pin(self.on_plane("ending a task", move |plane| finish_task(plane, id, end)))
    }

    fn result<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Observation>, StoreError>> {
        let id = id.to_owned();
        Box::pin(self.on_plane("reading a task's result", move |plane| result_of(plane, id)))
    }

    fn answer<'a>(
        &'a self,
        id: &'a str,
        answers: Vec<(String, Value)>,
        at: SystemTime,
    ) -> BoxFuture<'a, Result<Answering, StoreError>> {
        let id = id.to_owned();
        Box::pin(
            self.on_plane("answering a task's questions", move |plane| async move {
                if !storable(&id) {
                    return Ok(Answering::Unknown);
                }
                let changed = change_questions(&plane, &id, at, |questions| {
                    let done = answer_questions(questions, answers);
                    let changed = !done.answered.is_empty();
                    Ok((done, changed))
                })
                .await?;
                Ok(match changed {
                    Ok(done) => Answering::Answered(done),
                    Err(Some(status)) => Answering::Ended(status),
                    Err(None) => Answering::Unknown,
                })
            }),
        )
    }

    fn take_answer<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
        at: SystemTime,
    ) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
        let (id, key) = (id.to_owned(), key.to_owned());
        Box::pin(
            self.on_plane("taking a task's answer", move |plane| async move {
                if !storable(&id) {
                    return Ok(None);
                }
                // Most looks find no answer yet: read before locking anything.
                let client = plane.client().await?;
                let row = client
                    .query_opt(
                        &format!(
                            "SELECT questions FROM registry_tasks WHERE id = $1 AND {RUNNING}"
                        ),
                        &[&id],
                    )
                    .await
                    .map_err(Error::db("reading a task's questions"))?;
                drop(client);
                let Some(row) = row else { return Ok(None) };
                let answered = questions_of(row.get(0))?
                    .iter()
                    .any(|question| question.key() == key && question.is_answered());
                if !answered {
                    return Ok(None);
                }
                let taken = change_questions(&plane, &id, at, |questions| {
                    let answer = take_answer(questions, &key);
                    let changed = answer.is_some();
                    Ok((answer, changed))
                })
                .await?;
                Ok(taken.ok().flatten())
            }),
        )
    }

    fn running(&self, id: &str, cancellation: Cancellation) {
        self.shared.lock().insert(id.to_owned(), cancellation);
    }

    fn stopped(&self, id: &str) {
        self.shared.lock().remove(id);
    }
}
