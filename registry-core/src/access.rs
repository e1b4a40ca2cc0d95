//! Who sees which tools: a run's [`Access`] level, the application's [`AccessRule`]s, and
//! why a tool is hidden from a subject ([`Explanation`], from
//! [`Run::explain`](crate::Run::explain)).

pub(crate) mod rule;

pub use crate::discover::explain::{Explanation, HiddenReason, HiddenTool};
pub use crate::discover::run::Capability;
pub use crate::shared::attribute::{
    AttributeValue, MAX_ATTRIBUTE_KEY, MAX_ATTRIBUTE_VALUE, MAX_ATTRIBUTE_VALUES,
    MAX_SUBJECT_ATTRIBUTES, MAX_TOOL_ATTRIBUTES, check_attribute_key, check_attribute_text,
};
pub use crate::shared::subject::Access;
pub use rule::{AccessRule, Visibility};
