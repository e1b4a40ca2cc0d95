//! The host of a running task's tool: what it reports is recorded in the task store (its
//! progress; `input_required` while it waits for an answer), then passed on to the host the
//! call would have had.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::Value;

use crate::declare::declaration::BoxFuture;
use crate::execute::host::{
    CallHost, CallInfo, ElicitError, ElicitRequest, Elicitation, LogLevel, Progress, SampleError,
    SampleReply, SampleRequest,
};
use crate::execute::task::record::TaskStatus;
use crate::execute::task::store::{TaskStore, TaskUpdate};

/// Records task `id`'s progress and questions in `store`, and passes everything on to
/// `inner`.
pub(crate) struct TaskHost {
    pub(crate) id: String,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) inner: Arc<dyn CallHost>,
}

impl TaskHost {
    /// Records `update`; a store that fails loses it (the task goes on: progress is
    /// advisory), and says so in the log.
    fn record(&self, update: TaskUpdate) {
        let recorded = pollster::block_on(self.store.update(&self.id, update, SystemTime::now()));
        if let Err(error) = recorded {
            tracing::warn!(
                target: crate::host::TOOL_EVENT_TARGET,
                task = %crate::audit::Logged(&self.id),
                %error,
                "the task store did not record the task's progress"
            );
        }
    }
}

impl CallHost for TaskHost {
    fn progress(&self, call: &CallInfo<'_>, progress: &Progress) {
        self.record(TaskUpdate::Progress(progress.clone()));
        self.inner.progress(call, progress);
    }

    fn log(&self, call: &CallInfo<'_>, level: LogLevel, message: &str) {
        self.inner.log(call, level, message);
    }

    fn elicit<'a>(
        &'a self,
        call: &CallInfo<'_>,
        request: ElicitRequest,
    ) -> BoxFuture<'a, Result<Elicitation<Value>, ElicitError>> {
        self.record(TaskUpdate::Status {
            status: TaskStatus::InputRequired,
            message: Some(request.message.clone()),
        });
        let asked = self.inner.elicit(call, request);
        Box::pin(async move {
            let answer = asked.await;
            self.record(TaskUpdate::Status {
                status: TaskStatus::Working,
                message: None,
            });
            answer
        })
    }

    fn sample<'a>(
        &'a self,
        call: &CallInfo<'_>,
        request: SampleRequest,
    ) -> BoxFuture<'a, Result<SampleReply, SampleError>> {
        self.inner.sample(call, request)
    }
}
