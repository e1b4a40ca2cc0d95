//! What a running tool reaches through its [`ToolContext`](crate::ToolContext): progress,
//! logs, questions to the user (elicitation) and sampling, answered by a [`CallHost`].

pub(crate) mod call_host;
pub(crate) mod context;
pub(crate) mod form;
pub(crate) mod state;

pub use call_host::{
    CallHost, CallInfo, DEFAULT_ELICIT_TIMEOUT, DEFAULT_SAMPLE_TIMEOUT, ElicitError, ElicitRequest,
    Elicitation, FormError, LogLevel, Progress, SampleContent, SampleError, SampleMessage,
    SampleReply, SampleRequest, SampleRole, TOOL_EVENT_TARGET,
};
pub use form::form_schema;
