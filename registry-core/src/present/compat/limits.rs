//! Size limits: properties, nesting, enum values, total text.

use super::*;

impl Checker<'_, '_> {
    /// OpenAI strict mode's limits.
    pub(super) fn check_limits(&mut self) {
        let mut properties = 0;
        let mut enum_values = 0;
        let mut chars = 0;
        let mut pending = vec![self.root];
        if let Some(Value::Object(definitions)) = self.root.get("$defs") {
            chars += definitions.keys().map(|n| n.chars().count()).sum::<usize>();
        }
        while let Some(schema) = pending.pop() {
            let Value::Object(object) = schema else {
                continue;
            };
            if let Some(Value::Object(map)) = object.get("properties") {
                properties += map.len();
                chars += map.keys().map(|n| n.chars().count()).sum::<usize>();
            }
            if let Some(Value::Array(values)) = object.get("enum") {
                enum_values += values.len();
                chars += values.iter().map(text_length).sum::<usize>();
            }
            if let Some(value) = object.get("const") {
                chars += text_length(value);
            }
            pending.extend(subschemas(object).into_iter().map(|(_, inner)| inner));
        }
        if properties > STRICT_MAX_PROPERTIES {
            self.add(
                "",
                format!("OpenAI strict mode: at most 5000 object properties; {properties} here"),
                "split the tool",
            );
        }
        if enum_values > STRICT_MAX_ENUM_VALUES {
            self.add(
                "",
                format!("OpenAI strict mode: at most 1000 enum values; {enum_values} here"),
                "take a string instead of a huge enum",
            );
        }
        if chars > STRICT_MAX_CHARS {
            self.add(
                "",
                format!("OpenAI strict mode: at most 120,000 characters of property names, definition names and enum values; {chars} here"),
                "shorten names and enum values, or split the tool",
            );
        }
        let root = self.root;
        if let Some(pointer) = self.too_deep(root, "", 0, &mut Vec::new()) {
            self.add(
                &pointer,
                "OpenAI strict mode: at most 10 levels of nested objects",
                "flatten the parameter types",
            );
        }
    }

    /// The first place where objects nest deeper than 10 levels, following `$ref`s once.
    pub(super) fn too_deep(
        &self,
        schema: &Value,
        pointer: &str,
        depth: usize,
        stack: &mut Vec<String>,
    ) -> Option<String> {
        let Value::Object(object) = schema else {
            return None;
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            if stack.iter().any(|r| r == reference) {
                return None;
            }
            let target = resolve(self.root, &Value::from(reference))?;
            stack.push(reference.to_owned());
            let found = self.too_deep(target, pointer, depth, stack);
            stack.pop();
            return found;
        }
        let depth = if types_of(object).iter().any(|t| t == "object")
            || object.contains_key("properties")
        {
            depth + 1
        } else {
            depth
        };
        if depth > STRICT_MAX_NESTING {
            return Some(pointer.to_owned());
        }
        for (token, inner) in subschemas(object) {
            if token.starts_with("/$defs") || token.starts_with("/definitions") {
                continue;
            }
            if let Some(found) = self.too_deep(inner, &format!("{pointer}{token}"), depth, stack) {
                return Some(found);
            }
        }
        None
    }
}
