//! `$defs` and `$ref`: local, resolvable, and recursive only where the consumer allows.

use super::*;

impl Checker<'_, '_> {
    /// Where `$ref`s may not be recursive (Anthropic), none is. Follows references from the
    /// root.
    pub(super) fn check_references(&mut self) {
        if self.rules.references != References::NotRecursive {
            return;
        }
        let mut stack = Vec::new();
        let root = self.root;
        self.follow(root, "", &mut stack);
    }

    pub(super) fn follow(&mut self, schema: &Value, pointer: &str, stack: &mut Vec<String>) {
        let Value::Object(object) = schema else {
            return;
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            if stack.iter().any(|r| r == reference) {
                if self.recursive.insert(reference.to_owned()) {
                    let name = reference.rsplit('/').next().unwrap_or(reference).to_owned();
                    let who = self.who();
                    self.add(
                        &format!("{pointer}/$ref"),
                        format!("{who}: `$ref` may not be recursive; `{name}` refers to itself"),
                        format!("make `{name}` non-recursive, or do not offer this tool to {who}"),
                    );
                }
                return;
            }
            if let Some(target) = resolve(self.root, &Value::from(reference)) {
                let target_pointer = crate::pointer::local_target(self.root, reference)
                    .map(|(at, _)| at)
                    .unwrap_or_default();
                stack.push(reference.to_owned());
                self.follow(target, &target_pointer, stack);
                stack.pop();
            }
        }
        for (token, inner) in subschemas(object) {
            if token.starts_with("/$defs") || token.starts_with("/definitions") {
                continue;
            }
            self.follow(inner, &format!("{pointer}{token}"), stack);
        }
    }
}

/// The target of a same-document `$ref` (a JSON pointer or an `$anchor`) in the schema `root`.
pub(super) fn resolve<'v>(root: &'v Value, reference: &Value) -> Option<&'v Value> {
    crate::pointer::local_target(root, reference.as_str()?).map(|(_, target)| target)
}
