//! The official tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663), served from the
//! run's tasks ([`registry_core::task`]).
//!
//! - A `tools/call` of a tool declared `task` (`#[tool(task)]`, `DynamicTool::task`) from a
//!   request that declared the extension (at `initialize`, or per request in
//!   `_meta.clientCapabilities`) is started with `Run::start_task`, through the same gate as
//!   any call, and answered with a `CreateTaskResult` (`resultType: "task"`) once the task is
//!   kept: a `tasks/get` right after it finds it. Without the extension, the same tool answers
//!   an ordinary call, and so does a tool declared `needs_approval` (its approval is asked as
//!   for any call). A call the gate refuses is answered as an ordinary call would be (a call
//!   policy's approval too: `isError`, with the approval's text).
//! - `tasks/get`: the task's `DetailedTask`. A tool that returned an error is
//!   `completed` with `result.isError: true`; `failed` (with a JSON-RPC `error`) is kept for
//!   a tool that panicked and for a task the server could not see to its end (the replica
//!   that ran it died: the error's message says which, and since when), as the SEP reserves
//!   it for protocol-level errors.
//! - `tasks/cancel`: cancels the task (its tool's `ctx.cancelled()` resolves) and answers
//!   the empty acknowledgement, also for a task that has ended (idempotent).
//! - An unknown task id, one that expired, or another principal's is -32602, the same for
//!   all three. rmcp answers -32021 to a request that did not declare the extension.
//! - A tool declared `task = "required"` ([`ToolSettings::task_required`]) called by a
//!   request that did not declare the extension is -32021, with the extension in
//!   `data.requiredCapabilities`.
//! - A task's questions (`ctx.elicit`) are for the client
//!   ([`CallOptions::with_task_questions_for_caller`]): while one waits, `tasks/get` answers
//!   `input_required` with the questions as `inputRequests` (form elicitations by key), and
//!   `tasks/update` answers them with `inputResponses` ([`Run::answer_task`]): acknowledged
//!   with the empty result; a key under which nothing waits is ignored (SEP-2663); an answer
//!   under an asked key that is not an `ElicitResult`, an ended task and an unknown one are
//!   -32602.
//!
//! A task's logs and sampling reach the run's host, not the client: the request that
//! started it has ended. Its progress is in `tasks/get`'s `statusMessage`. It runs on a
//! thread of its own inside the server's Tokio runtime, so an async tool's timers and I/O
//! work as in a call. No `notifications/tasks` are sent: clients poll `tasks/get`.
//!
//! [`ToolSettings::task_required`]: registry_core::definition::ToolSettings::task_required
//! [`CallOptions::with_task_questions_for_caller`]: registry_core::call::CallOptions::with_task_questions_for_caller
//! [`Run::answer_task`]: registry_core::Run::answer_task

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use registry_core::call::CallOptions;
use registry_core::host::Elicitation;
use registry_core::server::RunExt;
use registry_core::task::{Task as CoreTask, TaskError, TaskStatus as CoreStatus};
use registry_core::{ErrorKind, Observation, ToolCall};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CreateTaskResult, DetailedTask,
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    ErrorCode, GetTaskParams, GetTaskResult, InputRequest, InputRequests, JsonObject, Task,
    TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;

use crate::clients::{Client, RunSlot};
use crate::options::ServerOptions;

/// How often a client is asked to poll `tasks/get`.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Whether `request` may be answered with a task: it declared the extension, and its tool,
/// visible to the run, is declared long-running. A tool that always needs approval is called
/// as an ordinary call, whose approval is asked of the person at the client, unless it runs
/// only as a task (`task = "required"`): then it is started as a task, and the gate's
/// `ApprovalRequired` is answered as any refusal (its approval is decided with
/// `Run::decide`, which starts it).
pub(crate) fn wanted(
    slot: &RunSlot,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> bool {
    let declared = context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks());
    declared
        && slot.run.allowed().permits(&request.name)
        && slot.run.registry().get(&request.name).is_some_and(|tool| {
            let settings = tool.settings();
            settings.task && (settings.task_required || !settings.needs_approval)
        })
}

/// Whether `request` names a tool visible to the run that runs only as a task
/// (`task = "required"`) while the request did not declare the extension: answered -32021.
pub(crate) fn refused_without_extension(
    slot: &RunSlot,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<ErrorData> {
    let declared = context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks());
    let required = slot.run.allowed().permits(&request.name)
        && slot
            .run
            .registry()
            .get(&request.name)
            .is_some_and(|tool| tool.settings().task_required);
    (required && !declared).then(|| {
        ErrorData::new(
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!(
                "the tool \"{}\" runs only as a task, and this request did not declare the tasks extension; declare \"{EXTENSION}\" in the client's capabilities (or in the request's _meta) and call it again",
                request.name
            ),
            Some(serde_json::json!({
                "requiredCapabilities": { "extensions": { EXTENSION: {} } }
            })),
        )
    })
}

/// The tasks extension's id.
const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The options of a task's call: the server's waits, its questions for the client (as
/// `inputRequests`, answered by `tasks/update`), and the task's thread inside this Tokio
/// runtime, so that an async tool finds its timers and I/O there.
pub(crate) fn options(options: &ServerOptions) -> CallOptions {
    let handle = tokio::runtime::Handle::current();
    CallOptions::new()
        .with_task_questions_for_caller()
        .with_elicit_timeout(options.approval_timeout)
        .with_sample_timeout(options.sampling_timeout)
        .with_task_context(move |job: &mut dyn FnMut()| {
            let _entered = handle.enter();
            job();
        })
}

/// Starts `request` as a task: `Ok(Ok(created))` once it is kept, `Ok(Err(observation))`
/// when the gate refused it (answered as an ordinary call's refusal).
pub(crate) async fn start(
    slot: &RunSlot,
    request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    options: CallOptions,
) -> Result<CallToolResponse, Observation> {
    let arguments = Value::Object(request.arguments.unwrap_or_default());
    let call = ToolCall::new(context.id.to_string(), request.name.as_ref(), arguments);
    let task = slot.run.start_task_with(call, options).await?;
    Ok(CallToolResponse::Task(CreateTaskResult::new(wire(&task))))
}

/// `tasks/get`.
pub(crate) async fn get(
    client: &Client,
    params: GetTaskParams,
) -> Result<GetTaskResult, ErrorData> {
    let run = &client.current().run;
    let task = run.task(&params.task_id).await.map_err(error)?;
    let payload = match task.status() {
        CoreStatus::InputRequired if task.questions().next().is_some() => {
            TaskPayload::InputRequired {
                input_requests: input_requests(&task)?,
            }
        }
        CoreStatus::Working | CoreStatus::InputRequired => TaskPayload::Working,
        CoreStatus::Cancelled => TaskPayload::Cancelled,
        _ => {
            let observation = run.task_result(&params.task_id).await.map_err(error)?;
            ended(&observation)?
        }
    };
    Ok(GetTaskResult::new(DetailedTask::new(wire(&task), payload)))
}

/// The task's questions that wait, as MCP input requests (form elicitations) by key.
fn input_requests(task: &CoreTask) -> Result<InputRequests, ErrorData> {
    task.questions()
        .map(|question| {
            let schema = serde_json::from_value::<ElicitationSchema>(question.schema().clone())
                .map_err(|error| {
                    tracing::error!(task = %task.id(), %error, "a task's question is not an MCP form");
                    ErrorData::internal_error("the task's question cannot be sent", None)
                })?;
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: question.message().to_owned(),
                requested_schema: schema,
            };
            Ok((
                question.key().to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(params)),
            ))
        })
        .collect()
}

/// `tasks/update`: the client's answers to the task's questions (`inputResponses`, each an
/// `ElicitResult`), then the empty acknowledgement (rmcp writes it). A key the task does not
/// ask under is ignored, as the extension says; an answer that is not an `ElicitResult`, a
/// task that has ended, and an unknown, expired or foreign id are -32602.
pub(crate) async fn update(client: &Client, params: UpdateTaskParams) -> Result<(), ErrorData> {
    let run = &client.current().run;
    let task = run.task(&params.task_id).await.map_err(error)?;
    let mut answers = Vec::with_capacity(params.input_responses.len());
    for (key, response) in params.input_responses {
        if !task.questions().any(|question| question.key() == key) {
            // Not asked (or answered already): ignored, whatever it holds.
            tracing::debug!(client = ?client.id, task = %task.id(), "tasks/update answered a question the task does not ask; ignored");
            continue;
        }
        let result = serde_json::from_value::<ElicitResult>(response).map_err(|error| {
            ErrorData::invalid_params(
                format!(
                    "the input response {:?} is not an elicitation result ({error}); answer with {{\"action\": \"accept\", \"content\": {{...}}}}, \"decline\" or \"cancel\"",
                    key.chars().take(64).collect::<String>()
                ),
                None,
            )
        })?;
        let answer = match result.action {
            ElicitationAction::Accept => {
                Elicitation::Accepted(result.content.unwrap_or_else(|| serde_json::json!({})))
            }
            ElicitationAction::Decline => Elicitation::Declined,
            _ => Elicitation::Cancelled,
        };
        answers.push((key, answer));
    }
    match run.answer_task(&params.task_id, answers).await {
        Ok(done) => {
            if !done.ignored.is_empty() {
                tracing::debug!(client = ?client.id, ignored = ?done.ignored, "tasks/update answered questions the task does not ask; ignored");
            }
            Ok(())
        }
        Err(TaskError::AlreadyFinished { id, status }) => Err(ErrorData::invalid_params(
            format!(
                "the task {id:?} has ended ({status}); it asks nothing any more, and the answers were not used"
            ),
            None,
        )),
        Err(other) => Err(error(other)),
    }
}

/// `tasks/cancel`: the empty acknowledgement (rmcp writes it), for a running task and an
/// ended one alike.
pub(crate) async fn cancel(client: &Client, params: CancelTaskParams) -> Result<(), ErrorData> {
    match client.current().run.cancel_task(&params.task_id).await {
        Ok(_) | Err(TaskError::AlreadyFinished { .. }) => Ok(()),
        Err(other) => Err(error(other)),
    }
}

/// The payload of an ended task: its `CallToolResult`, or a JSON-RPC error (internal error,
/// the run's text) for a tool that panicked (never the panic's message) and for a task the
/// server could not see to its end (`Unavailable`: no thread for it, or the replica that ran
/// it stopped renewing its lease, the reason in the text).
fn ended(observation: &Observation) -> Result<TaskPayload, ErrorData> {
    if matches!(
        observation.error_kind(),
        Some(ErrorKind::Panicked | ErrorKind::Unavailable)
    ) {
        let error = ErrorData::internal_error(
            observation
                .error_text()
                .unwrap_or("the tool failed")
                .to_owned(),
            None,
        );
        return Ok(TaskPayload::Failed {
            error: object(serde_json::to_value(error))?,
        });
    }
    let result = crate::handler::call_result(observation)?;
    Ok(TaskPayload::Completed {
        result: object(serde_json::to_value(result))?,
    })
}

fn object(value: Result<Value, serde_json::Error>) -> Result<JsonObject, ErrorData> {
    match value {
        Ok(Value::Object(object)) => Ok(object),
        _ => Err(ErrorData::internal_error(
            "the task's result cannot be sent",
            None,
        )),
    }
}

/// The MCP answer to a task that cannot be read: -32602 for an unknown, expired or foreign
/// id (the same text for all three); internal error for a store that failed.
fn error(error: TaskError) -> ErrorData {
    match error {
        TaskError::Store(store) => {
            tracing::warn!(%store, "the task store failed");
            ErrorData::internal_error("the task store cannot be read right now; try again", None)
        }
        other => ErrorData::invalid_params(other.to_string(), None),
    }
}

/// A core task as MCP's `Task`.
fn wire(task: &CoreTask) -> Task {
    let status = match task.status() {
        CoreStatus::InputRequired if task.questions().next().is_some() => TaskStatus::InputRequired,
        CoreStatus::Working | CoreStatus::InputRequired => TaskStatus::Working,
        CoreStatus::Completed => TaskStatus::Completed,
        CoreStatus::Failed => TaskStatus::Failed,
        CoreStatus::Cancelled => TaskStatus::Cancelled,
        _ => TaskStatus::Working,
    };
    // MCP counts the TTL from creation; a running task is kept at least its TTL from now.
    let kept_until = task
        .expires_at()
        .unwrap_or_else(|| SystemTime::now() + task.ttl());
    let ttl = kept_until
        .duration_since(task.created_at())
        .unwrap_or_default();
    let mut wire = Task::new(
        task.id(),
        status,
        iso8601(task.created_at()),
        iso8601(task.updated_at()),
    )
    .with_ttl_ms(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
    .with_poll_interval_ms(u64::try_from(POLL_INTERVAL.as_millis()).unwrap_or(u64::MAX));
    if let Some(message) = status_message(task) {
        wire = wire.with_status_message(message);
    }
    wire
}

/// What a person reads of a task: its question, its failure, or its last progress.
fn status_message(task: &CoreTask) -> Option<String> {
    if let Some(message) = task.message() {
        return Some(message.to_owned());
    }
    let progress = task.progress()?;
    let amount = match progress.total {
        Some(total) => format!("{}/{}", progress.done, total),
        None => progress.done.to_string(),
    };
    Some(match &progress.message {
        Some(message) => format!("{message} ({amount})"),
        None => amount,
    })
}

/// `at` as RFC 3339 in UTC, to the millisecond: `2026-07-28T09:30:00.000Z`.
pub(crate) fn iso8601(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_from_days(i64::try_from(days).unwrap_or(i64::MAX));
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::iso8601;

    #[test]
    fn times_are_rfc3339_in_utc() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_millis(951_827_696_789);
        assert_eq!(iso8601(leap), "2000-02-29T12:34:56.789Z");
        let later = UNIX_EPOCH + Duration::from_secs(1_785_231_000);
        assert_eq!(iso8601(later), "2026-07-28T09:30:00.000Z");
    }
}
