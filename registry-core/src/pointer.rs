//! JSON pointers (RFC 6901), as every problem report words its place, and the same-document
//! references of JSON Schema 2020-12 (`#`, `#/json/pointer`, `#anchor`) that name a place.

use serde_json::Value;

/// `token` escaped as one segment of a JSON pointer: `~` as `~0`, `/` as `~1`.
pub(crate) fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// One segment of a JSON pointer, unescaped.
pub(crate) fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// `pointer` extended by the segment `token`.
pub(crate) fn child(pointer: &str, token: &str) -> String {
    format!("{pointer}/{}", escape(token))
}

/// `%XX` escapes of a URI fragment, decoded.
pub(crate) fn percent_decode(fragment: &str) -> Option<String> {
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

/// The place a same-document `$ref` of the schema `root` names, and the schema there: `#` (the
/// root), `#/json/pointer` (percent-decoded), or `#name`, the schema whose `$anchor` is `name`
/// (JSON Schema 2020-12, Core 8.2.2). `None` for any other reference (another document, a
/// network URI) and for one that names nothing.
pub(crate) fn local_target<'v>(root: &'v Value, reference: &str) -> Option<(String, &'v Value)> {
    let fragment = percent_decode(reference.strip_prefix('#')?)?;
    if fragment.is_empty() || fragment.starts_with('/') {
        return Some((fragment.clone(), root.pointer(&fragment)?));
    }
    anchored(root, &fragment, String::new())
}

/// The schema below `schema` (at `pointer`) whose `$anchor` is `name`, first in key order.
fn anchored<'v>(schema: &'v Value, name: &str, pointer: String) -> Option<(String, &'v Value)> {
    match schema {
        Value::Object(object) => {
            if object.get("$anchor").and_then(Value::as_str) == Some(name) {
                return Some((pointer, schema));
            }
            object
                .iter()
                .filter(|(key, _)| {
                    !matches!(key.as_str(), "enum" | "const" | "default" | "examples")
                })
                .find_map(|(key, value)| anchored(value, name, child(&pointer, key)))
        }
        Value::Array(list) => list
            .iter()
            .enumerate()
            .find_map(|(index, value)| anchored(value, name, child(&pointer, &index.to_string()))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn local_references_name_a_pointer_or_an_anchor() {
        let root = json!({
            "type": "object",
            "$defs": {"a/b": {"$anchor": "slash", "type": "string"}, "n": {"type": "integer"}},
            "properties": {"p": {"$ref": "#slash"}},
            "default": {"$anchor": "not-a-schema"}
        });
        let (at, target) = super::local_target(&root, "#slash").unwrap();
        assert_eq!(
            (at.as_str(), &target["type"]),
            ("/$defs/a~1b", &json!("string"))
        );
        let (at, _) = super::local_target(&root, "#/$defs/a~1b").unwrap();
        assert_eq!(at, "/$defs/a~1b");
        assert_eq!(
            super::local_target(&root, "#/%24defs/n").unwrap().0,
            "/$defs/n"
        );
        assert_eq!(super::local_target(&root, "#").unwrap().0, "");
        for nothing in [
            "#missing",
            "#not-a-schema",
            "https://example.com/s.json",
            "s.json#/a",
        ] {
            assert!(super::local_target(&root, nothing).is_none(), "{nothing}");
        }
    }

    #[test]
    fn segments_round_trip() {
        for token in ["plain", "a/b", "~tilde", "~1/~0", ""] {
            assert_eq!(super::unescape(&super::escape(token)), token);
        }
        assert_eq!(super::child("/properties", "a/b~c"), "/properties/a~1b~0c");
    }
}
