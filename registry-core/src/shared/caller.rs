//! Who made a call: the model, or code the model wrote.

/// Who made a call: the model itself, or code the model wrote and a provider ran for it
/// (Anthropic's and OpenAI's programmatic tool calling, where the call carries a `caller`).
///
/// Code cannot pause for a person: a call from code to a tool whose calls wait for approval
/// is refused unless the tool is declared `callable_from_code`.
///
/// ```
/// use registry_core::{call::Caller, ToolCall};
/// use serde_json::json;
///
/// let call = ToolCall::new("c1", "get_status", json!({})).with_caller(Caller::Code);
/// assert_eq!(call.caller(), Caller::Code);
/// assert_eq!(Caller::Code.as_str(), "code");
/// assert_eq!(ToolCall::new("c2", "get_status", json!({})).caller(), Caller::Model);
/// ```
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Caller {
    /// The model called the tool directly (every call that says nothing else).
    #[default]
    Model,
    /// Code the model wrote called it, in a provider's sandbox.
    Code,
}

impl Caller {
    /// `"model"` or `"code"`, as audit events and policies (Cedar's `context.caller`) read it.
    pub fn as_str(self) -> &'static str {
        match self {
            Caller::Model => "model",
            Caller::Code => "code",
        }
    }
}
