//! Results out: an observation as the consumer's result message.
//!
//! STUB: to be written.

use serde_json::{Value, json};

use crate::observation::Observation;
use crate::profile::Profile;

impl Profile {
    /// The consumer's result message for `observation`.
    pub fn render(&self, observation: &Observation) -> Value {
        json!({"call_id": observation.call_id(), "content": observation.content()})
    }
}
