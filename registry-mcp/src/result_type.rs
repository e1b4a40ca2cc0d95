//! `resultType` on every result (SEP-2322, protocol 2026-07-28): the results an application's
//! own handler makes ([`Composed`](crate::Composed)) get `resultType: "complete"` when they
//! carry none.
//!
//! rmcp's constructors set it (`Some(ResultType::COMPLETE)`), and rmcp's server handler strips
//! it again for a peer on an older protocol version; but a result deserialized from JSON
//! without the field (an application that keeps its fixtures as JSON, or builds results with
//! `serde_json::from_value`) has `None`, which rmcp sends as is, and a 2026-07-28 client's
//! schema check rejects (`must have required property 'resultType'`). rmcp's handler fills in
//! the missing caching hints of such a result (`fill_missing_cache_hints`) but not its
//! `resultType`: that gap of rmcp 3.11 is closed here, where the composed server hands the
//! application's result on.

use rmcp::model::{
    CompleteResult, GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceResponse, ResultType,
};

/// A result whose `resultType` may be missing.
pub(crate) trait Completed {
    /// The result, with `resultType: "complete"` if it had no `resultType`.
    fn completed(self) -> Self;
}

macro_rules! completed {
    ($($t:ty),* $(,)?) => {$(
        impl Completed for $t {
            fn completed(mut self) -> Self {
                self.result_type.get_or_insert(ResultType::COMPLETE);
                self
            }
        }
    )*};
}

completed!(
    CompleteResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
);

impl Completed for GetPromptResponse {
    fn completed(self) -> Self {
        match self {
            GetPromptResponse::Complete(mut result) => {
                result.result_type.get_or_insert(ResultType::COMPLETE);
                GetPromptResponse::Complete(result)
            }
            other => other,
        }
    }
}

impl Completed for ReadResourceResponse {
    fn completed(self) -> Self {
        match self {
            ReadResourceResponse::Complete(mut result) => {
                result.result_type.get_or_insert(ResultType::COMPLETE);
                ReadResourceResponse::Complete(result)
            }
            other => other,
        }
    }
}

/// The application's answer, completed.
pub(crate) fn completed<T: Completed, E>(answer: Result<T, E>) -> Result<T, E> {
    answer.map(Completed::completed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_read_from_json_without_a_result_type_gets_complete() {
        let result: ListPromptsResult = serde_json::from_value(json!({ "prompts": [] })).unwrap();
        assert_eq!(result.result_type, None);
        let value = serde_json::to_value(result.completed()).unwrap();
        assert_eq!(value["resultType"], json!("complete"));
    }

    #[test]
    fn an_input_required_answer_keeps_its_result_type() {
        let input = rmcp::model::InputRequiredResult::new(None, Some("state".to_owned()));
        let GetPromptResponse::InputRequired(kept) =
            GetPromptResponse::InputRequired(input).completed()
        else {
            panic!("an input_required answer stays one");
        };
        assert_eq!(kept.result_type, ResultType::INPUT_REQUIRED);
    }
}
