//! Digests of what a model is shown: SHA-256 of canonical JSON, stable across processes and
//! machines, for the lockfile and MCP's `_meta`.

use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::execute::tool::Tool;
use crate::present::export::unpinned_object;
use crate::shared::profile::{CompatibilityError, Profile};

/// `sha256:` and the lowercase hexadecimal SHA-256 of `value` as canonical JSON.
pub(crate) fn digest_of(value: &Value) -> String {
    let mut bytes = Vec::new();
    canonical_json(value, &mut bytes);
    let hash = Sha256::digest(&bytes);
    let mut text = String::with_capacity(7 + 64);
    text.push_str("sha256:");
    for byte in hash {
        let _ = write!(text, "{byte:02x}");
    }
    text
}

/// Writes `value` as compact JSON with every object's keys sorted (by their UTF-8 bytes),
/// whatever order the map keeps them in: the bytes a digest is taken of.
fn canonical_json(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                canonical_json(item, out);
            }
            out.push(b']');
        }
        Value::Object(object) => {
            let mut entries: Vec<(&String, &Value)> = object.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                // Writing a string to a Vec cannot fail.
                let _ = serde_json::to_writer(&mut *out, key);
                out.push(b':');
                canonical_json(item, out);
            }
            out.push(b'}');
        }
        // Writing a scalar to a Vec cannot fail.
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

impl Tool {
    /// The digest of the tool as `profile` exports it: `sha256:` and 64 lowercase hexadecimal
    /// digits, the SHA-256 of the tool object of [`Run::export`](crate::Run::export) (for
    /// Gemini, the function declaration), without `_meta`, as compact JSON with every
    /// object's keys sorted. Any change to what that profile shows of the tool (name, title,
    /// description, schemas, hints) changes it; the same tool gives the same digest in every
    /// process and on every machine.
    ///
    /// It is the digest a [lock file](crate::Registry::lock) pins, and, for
    /// [`Profile::Mcp`], the value of the exported tool's `_meta` key
    /// [`DIGEST_META_KEY`](crate::lockfile::DIGEST_META_KEY). An error when `profile` cannot express
    /// the tool (as `Run::export` would report).
    ///
    /// ```standalone_crate
    /// use registry_core::{tool, Profile, Registry};
    ///
    /// /// Read the current build status of a project.
    /// #[tool(public, read_only)]
    /// fn get_status(project: String) -> String {
    ///     format!("{project}: passed")
    /// }
    ///
    /// let tool = Registry::from_inventory().unwrap().get("get_status").unwrap();
    /// let digest = tool.digest(Profile::Mcp).unwrap();
    /// assert!(digest.starts_with("sha256:") && digest.len() == 7 + 64);
    /// assert_ne!(digest, tool.digest(Profile::Anthropic).unwrap());
    /// ```
    pub fn digest(&self, profile: Profile) -> Result<&str, CompatibilityError> {
        let digest = self.digest_cell(profile).get_or_init(|| {
            unpinned_object(profile, self)
                .ok()
                .map(|object| digest_of(&object))
        });
        match digest {
            Some(digest) => Ok(digest),
            None => Err(CompatibilityError(
                self.lowered(profile).clone().err().unwrap_or_default(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let mut bytes = Vec::new();
        canonical_json(
            &json!({"b": [1, {"z": null, "a": "é\n"}], "a": true, "_m": 1.5}),
            &mut bytes,
        );
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"_m":1.5,"a":true,"b":[1,{"a":"é\n","z":null}]}"#
        );
    }

    #[test]
    fn a_digest_is_sha256_in_hex() {
        // SHA-256 of the two bytes `{}`.
        assert_eq!(
            digest_of(&json!({})),
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }
}
