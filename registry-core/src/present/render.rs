//! Results out: an observation as the consumer's result message.
//!
//! See [`Profile::render`] for each consumer's message.

use serde_json::Value;

use crate::execute::observation::Observation;
use crate::present::provider::{anthropic, gemini, mcp, openai};
use crate::shared::profile::Profile;

impl Profile {
    /// The consumer's result message for `observation`.
    ///
    /// | profile | result | error |
    /// | --- | --- | --- |
    /// | OpenAI Chat | message `{"role": "tool", "tool_call_id", "content"}` | the same, the text says it |
    /// | OpenAI Responses | item `{"type": "function_call_output", "call_id", "output"}` | the same |
    /// | Anthropic | block `{"type": "tool_result", "tool_use_id", "content"}` | the same with `"is_error": true` |
    /// | Gemini | part `{"functionResponse": {"name", "response": {"output"}, "id"?}}` | `"response": {"error"}` |
    /// | MCP | `CallToolResult {"content": [text], "isError": false, "structuredContent"?}` | `"isError": true` |
    ///
    /// Where the consumer takes text, a string result is sent as it is and any other result as
    /// its JSON text; an error is its text. Gemini takes JSON, and gets the result itself. Its
    /// `id` is echoed only when the call had one (not one made up by
    /// [`parse_calls`](Profile::parse_calls)). MCP's `structuredContent` is sent when the tool has
    /// an output schema and the result is an object ([`Observation::is_structured`]).
    ///
    /// A result of [`Content`](crate::content::Content) ([`Observation::blocks`]) is sent block by block
    /// where the consumer takes blocks, followed by the JSON text of the structured value of a
    /// [`ToolOutput`](crate::content::ToolOutput); what a consumer cannot take becomes a short text
    /// saying what it was (kind, MIME type, size), never its bytes:
    ///
    /// | profile | text | image | audio | resource link | embedded text | embedded file |
    /// | --- | --- | --- | --- | --- | --- | --- |
    /// | MCP | `text` | `image` | `audio` | `resource_link` | `resource` (`text`) | `resource` (`blob`) |
    /// | Anthropic | `text` | `image` (JPEG, PNG, GIF, WebP) | text | text | `text` | `document` (PDF), else text |
    /// | OpenAI Responses | `input_text` | `input_image` (PNG, JPEG, WebP, GIF) | text | text | `input_text` | `input_file` |
    /// | OpenAI Chat | text | text | text | text | text | text |
    /// | Gemini | `response` text | `parts` `inlineData` (PNG, JPEG, WebP) | text | text | text | `parts` (PDF), else text |
    ///
    /// `docs/providers.md` gives every shape, with its sources.
    ///
    /// Every observation renders to MCP as a `CallToolResult` (`isError: true` for errors). An
    /// MCP server answers an unknown tool with JSON-RPC error -32602 instead, before
    /// rendering, and must answer a hidden one (`NotAllowed`) exactly the same way: the
    /// `registry-mcp` server does both.
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, Profile, Registry, Subject, ToolCall};
    /// use serde_json::json;
    ///
    /// /// Read the current build status of a project.
    /// #[tool(public)]
    /// fn get_status(project: String) -> String {
    ///     format!("{project}: green")
    /// }
    ///
    /// let registry = Registry::from_inventory().unwrap();
    /// let run = registry.open_run("run-1", &Subject::new("tenant-a"));
    /// let call = ToolCall::new("toolu_01", "get_status", json!({"project": "web"}));
    /// let observation = run.call_blocking(call);
    /// assert_eq!(
    ///     Profile::Anthropic.render(&observation),
    ///     json!({"type": "tool_result", "tool_use_id": "toolu_01", "content": "web: green"}),
    /// );
    /// ```
    #[must_use = "the rendered message is the model's answer: send it back to the provider"]
    pub fn render(&self, observation: &Observation) -> Value {
        match self {
            Profile::OpenAiChat { .. } => openai::chat_result(observation),
            Profile::OpenAiResponses { .. } => openai::responses_result(observation),
            Profile::Anthropic => anthropic::result(observation),
            Profile::Gemini => gemini::result(observation),
            Profile::Mcp => mcp::result(observation),
        }
    }
}
