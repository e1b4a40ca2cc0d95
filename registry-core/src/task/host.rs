//! The host of a running task's tool: what it reports is recorded in the task store (its
//! progress; `input_required` while it waits for an answer), then passed on to the host the
//! call would have had. A task whose questions are for its caller keeps each in the store
//! and waits there for the answer ([`Questions`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::host::call_host::{
    CallHost, CallInfo, ElicitError, ElicitRequest, Elicitation, LogLevel, Progress, SampleError,
    SampleReply, SampleRequest,
};
use crate::shared::future::BoxFuture;
use crate::task::Bell;
use crate::task::record::{TaskQuestion, TaskStatus, answer_of};
use crate::task::store::{TaskStore, TaskUpdate};

/// How many questions a task's tool may ask its caller at once
/// ([`CallOptions::with_task_questions_for_caller`](crate::call::CallOptions::with_task_questions_for_caller)):
/// one more fails ([`ElicitError::Failed`]) until one is answered.
pub const MAX_TASK_QUESTIONS: usize = 8;

/// The longest pause between two looks for an answer that may come from another process.
const MAX_ANSWER_POLL: Duration = Duration::from_millis(250);

/// Records task `id`'s progress and questions in `store`, and passes everything on to
/// `inner`; its questions wait in the store for the caller when `questions` is set.
pub(crate) struct TaskHost {
    pub(crate) id: String,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) inner: Arc<dyn CallHost>,
    pub(crate) questions: Option<Questions>,
}

/// The questions a task asks its caller: how many wait, the next key, and the bell rung when
/// one is answered in this process.
pub(crate) struct Questions {
    asked: AtomicU64,
    waiting: AtomicUsize,
    answered: Bell,
}

impl Questions {
    pub(crate) fn new(answered: Bell) -> Questions {
        Questions {
            asked: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            answered,
        }
    }
}

/// Withdraws a question its tool no longer waits on (dropped: cancelled, timed out), and
/// counts it as no longer waiting.
struct Asked<'a> {
    host: &'a TaskHost,
    questions: &'a Questions,
    key: Option<String>,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        self.questions.waiting.fetch_sub(1, Ordering::SeqCst);
        if let Some(key) = self.key.take() {
            self.host.record(TaskUpdate::Withdraw { key });
        }
    }
}

impl TaskHost {
    /// Records `update`; a store that fails loses it (the task goes on: progress is
    /// advisory), and says so in the log.
    fn record(&self, update: TaskUpdate) {
        let recorded = pollster::block_on(self.store.update(&self.id, update, SystemTime::now()));
        if let Err(error) = recorded {
            tracing::warn!(
                target: crate::host::TOOL_EVENT_TARGET,
                task = %crate::shared::logged::Logged(&self.id),
                %error,
                "the task store did not record the task's progress"
            );
        }
    }
}

impl TaskHost {
    /// Keeps `request` as a question of the task and waits until its caller answers it.
    async fn ask_caller(
        &self,
        questions: &Questions,
        request: ElicitRequest,
    ) -> Result<Elicitation<Value>, ElicitError> {
        let waiting = questions.waiting.fetch_add(1, Ordering::SeqCst);
        let mut asked = Asked {
            host: self,
            questions,
            key: None,
        };
        if waiting >= MAX_TASK_QUESTIONS {
            return Err(ElicitError::Failed(format!(
                "the task asks {MAX_TASK_QUESTIONS} questions at once already, the most it may; ask again once one is answered"
            )));
        }
        let key = format!("q{}", questions.asked.fetch_add(1, Ordering::SeqCst) + 1);
        let question = TaskQuestion::new(key.clone(), request.message, request.schema);
        let kept = self
            .store
            .update(&self.id, TaskUpdate::Ask(question), SystemTime::now())
            .await
            .map_err(|error| {
                ElicitError::Failed(format!("the task store did not keep the question: {error}"))
            })?;
        if !kept {
            return Err(ElicitError::Failed(
                "the task has ended; nobody will answer its question".into(),
            ));
        }
        asked.key = Some(key.clone());
        let mut pause = Duration::from_millis(10);
        loop {
            // Listen before looking, so that an answer given in between still wakes this.
            let bell = questions.answered.listen();
            let taken = self
                .store
                .take_answer(&self.id, &key, SystemTime::now())
                .await
                .map_err(|error| {
                    ElicitError::Failed(format!("the task store did not give the answer: {error}"))
                })?;
            if let Some(answer) = taken {
                asked.key = None;
                return answer_of(&answer).ok_or_else(|| {
                    ElicitError::InvalidAnswer(format!("the kept answer is not one: {answer}"))
                });
            }
            let mut rung = std::pin::pin!(bell.cancelled());
            let mut delay = futures_timer::Delay::new(pause);
            std::future::poll_fn(|cx| {
                if rung.as_mut().poll(cx).is_ready()
                    || std::pin::Pin::new(&mut delay).poll(cx).is_ready()
                {
                    std::task::Poll::Ready(())
                } else {
                    std::task::Poll::Pending
                }
            })
            .await;
            pause = (pause * 2).min(MAX_ANSWER_POLL);
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
        if let Some(questions) = &self.questions {
            return Box::pin(self.ask_caller(questions, request));
        }
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
