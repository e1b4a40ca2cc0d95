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
                let target_pointer = reference.trim_start_matches('#').to_owned();
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

/// The target of a local `$ref` in the schema `root`.
pub(super) fn resolve<'v>(root: &'v Value, reference: &Value) -> Option<&'v Value> {
    let fragment = reference.as_str()?.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(root);
    }
    let decoded = percent_decode(fragment)?;
    root.pointer(&decoded)
}

/// `%XX` escapes of a URI fragment, decoded.
pub(super) fn percent_decode(fragment: &str) -> Option<String> {
    if !fragment.contains('%') {
        return Some(fragment.to_owned());
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            out.push(u8::from_str_radix(fragment.get(index + 1..index + 3)?, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}
