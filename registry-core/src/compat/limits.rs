//! Size limits: properties, nesting, enum values, total text.

use super::*;
use crate::present::provider::StrictLimits;
use crate::present::rules::{Reading, size, too_deep};

/// How the checker reads schemas: any JSON, every keyword of JSON Schema that holds schemas.
struct Json;

impl Reading for Json {
    fn subschemas(object: &Map<String, Value>) -> Vec<(String, &Value)> {
        subschemas(object)
    }

    fn resolve<'v>(root: &'v Value, reference: &str) -> Option<&'v Value> {
        resolve(root, &Value::from(reference))
    }

    fn object_type(object: &Map<String, Value>) -> bool {
        types_of(object).iter().any(|t| t == "object")
    }
}

impl Checker<'_, '_> {
    /// Strict mode's limits.
    pub(super) fn check_limits(&mut self, limits: &StrictLimits) {
        let who = self.who();
        let size = size::<Json>(self.root);
        if size.properties > limits.max_properties {
            self.add(
                "",
                format!(
                    "{who}: at most {} object properties; {} here",
                    number(limits.max_properties),
                    size.properties
                ),
                "split the tool",
            );
        }
        if size.enum_values > limits.max_enum_values {
            self.add(
                "",
                format!(
                    "{who}: at most {} enum values; {} here",
                    number(limits.max_enum_values),
                    size.enum_values
                ),
                "take a string instead of a huge enum",
            );
        }
        if size.chars > limits.max_chars {
            self.add(
                "",
                format!(
                    "{who}: at most {} characters of property names, definition names and enum \
                     values; {} here",
                    number(limits.max_chars),
                    size.chars
                ),
                "shorten names and enum values, or split the tool",
            );
        }
        if let Some(pointer) = too_deep::<Json>(self.root, limits.max_nesting) {
            self.add(
                &pointer,
                format!(
                    "{who}: at most {} levels of nested objects",
                    number(limits.max_nesting)
                ),
                "flatten the parameter types",
            );
        }
    }
}

/// A limit as the rules write it: digits grouped by commas from 10,000 on ("5000",
/// "120,000").
fn number(n: usize) -> String {
    let digits = n.to_string();
    if n < 10_000 {
        return digits;
    }
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}
